package runner

import "testing"

// TestPrunedString: prune's line counts each kind, in words, and says
// whether it removed or would remove.
func TestPrunedString(t *testing.T) {
	p := &Pruned{Namespace: "ssebench", Bytes: 2048, Items: []PrunedItem{{Kind: PruneImage}, {Kind: PruneImage}, {Kind: PruneLease}}}
	if got, want := p.String(), "removed 2 images, 1 expired lease from containerd namespace ssebench, 2.0 KiB freed"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	p = &Pruned{Namespace: "ssebench", DryRun: true}
	if got, want := p.String(), "would remove nothing from containerd namespace ssebench, about 0 B"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
