package commands_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

// TestPruneDryRun: prune --dry-run says in one line what it would remove
// from ssebench's namespace and removes nothing (the namespace is shared
// with the other tests, so only the dry run runs here; TestIntegrationPrune
// in runner/ prunes a namespace of its own).
func TestPruneDryRun(t *testing.T) {
	addr := testenv.RequireContainerd(t)
	c := newCLI(t)
	out, _ := c.mustRun(t, "prune", "--dry-run", "-q", "--containerd-addr", addr)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "would remove ") || !strings.Contains(lines[0], "from containerd namespace ssebench, about ") {
		t.Errorf("prune --dry-run -q printed %q, want one line: would remove … from containerd namespace ssebench, about N", out)
	}
	out, _ = c.mustRun(t, "prune", "--dry-run", "--json", "--containerd-addr", addr)
	var got struct {
		Namespace string            `json:"namespace"`
		DryRun    bool              `json:"dry_run"`
		Items     []json.RawMessage `json:"items"`
		Bytes     *int64            `json:"bytes"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Namespace != "ssebench" || !got.DryRun || got.Items == nil || got.Bytes == nil {
		t.Errorf("prune --dry-run --json = %s (%v), want namespace, dry_run, items and bytes", out, err)
	}
}

// TestPruneUnreachable: without containerd, one line that says what to do.
func TestPruneUnreachable(t *testing.T) {
	c := newCLI(t)
	_, _, err := c.run(t, "prune", "--containerd-addr", filepath.Join(t.TempDir(), "none.sock"))
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "scripts/setup.sh") {
		t.Errorf("prune with no containerd: %v, want one line saying how to start it", err)
	}
}
