package commands_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// TestPruneDryRun: prune --dry-run says in one line what it would remove
// from ssebench's namespace ($SSEBENCH_CONTAINERD_NAMESPACE: newCLI gives
// the test one of its own) and removes nothing; TestIntegrationPrune in
// runner/ prunes.
func TestPruneDryRun(t *testing.T) {
	addr := testenv.RequireContainerd(t)
	c := newCLI(t)
	ns := os.Getenv(runner.NamespaceEnv)
	if ns == "" {
		ns = runner.DefaultNamespace
	}
	out, _ := c.mustRun(t, "prune", "--dry-run", "-q", "--containerd-addr", addr)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "would remove ") || !strings.Contains(lines[0], "from containerd namespace "+ns+", about ") {
		t.Errorf("prune --dry-run -q printed %q, want one line: would remove … from containerd namespace %s, about N", out, ns)
	}
	out, _ = c.mustRun(t, "prune", "--dry-run", "--json", "--containerd-addr", addr)
	var got struct {
		Namespace string            `json:"namespace"`
		DryRun    bool              `json:"dry_run"`
		Items     []json.RawMessage `json:"items"`
		Bytes     *int64            `json:"bytes"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Namespace != ns || !got.DryRun || got.Items == nil || got.Bytes == nil {
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
