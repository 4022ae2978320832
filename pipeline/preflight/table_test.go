package preflight

import (
	"bytes"
	"strings"
	"testing"
)

// TestWriteTable: every image on a line, "-" for what is not set, how
// many must be built, and the command that makes a missing base image,
// with the note on its OS image.
func TestWriteTable(t *testing.T) {
	checks := []Image{
		{Task: "a-1", Kind: KindBase, Ref: "r/base-generic-go:1", Where: WhereMissing, Fix: "ssebench base-images --os-image " + OSImagePlaceholder + " go"},
		{Task: "a-1", Kind: KindCase, Ref: "r/case/x/a-1:1", Where: WhereMissing, Build: true},
		{Kind: KindRuntime, Ref: "r/runtime:1", Where: WhereStore, Platforms: []string{"linux/amd64", "linux/arm64"}},
	}
	var b bytes.Buffer
	WriteTable(&b, checks, "linux/amd64")
	lines := strings.Split(b.String(), "\n")
	for i, want := range []string{
		"TASK  KIND",
		"a-1   " + KindBase,
		"a-1   " + KindCase,
		"-     " + KindRuntime,
		"1 of 3 images must be built for linux/amd64",
		"a run does not make the base images or the runtime; make what is missing first:",
		"  ssebench base-images",
		"(" + OSImageNote + ")",
	} {
		if i >= len(lines) || !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d does not start %q:\n%s", i+1, want, b.String())
		}
	}
	if !strings.Contains(lines[3], "linux/amd64,linux/arm64  ok") || !strings.Contains(lines[1], "make") {
		t.Errorf("table:\n%s", b.String())
	}
	if n := MustBuild(checks); n != 1 {
		t.Errorf("MustBuild = %d, want 1", n)
	}
}
