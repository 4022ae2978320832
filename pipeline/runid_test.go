package pipeline

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/identifiers"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// TestHostileAgentNameInRunID: a graded prediction's model name becomes
// part of the run id, and so of a folder name: whatever it is, the run
// folder is one component under the runs folder.
func TestHostileAgentNameInRunID(t *testing.T) {
	for _, name := range []string{"../../x", "org/model-7b", "..", "/etc/passwd", "a\x00b", "m\nFORGED", strings.Repeat("x", 500), "Ünïcode/模型"} {
		t.Run(name, func(t *testing.T) {
			hostile.Case(t, "grade: predictions: traversal")
			id := newRunID("kvconf-12-afb9ee1", runIDPart(name), time.Unix(0, 0))
			dir := filepath.Join("/runs", id)
			if filepath.Dir(dir) != "/runs" || strings.ContainsAny(id, "/\\\x00\n") || len(id) > 120 {
				t.Errorf("run id %q for agent name %q is not one short path component", id, name)
			}
		})
	}
	if got := runIDPart("org/Model-7b"); got != "org-model-7b" {
		t.Errorf("runIDPart(org/Model-7b) = %q", got)
	}
}

// TestContainerIDs: a run's two containers get IDs containerd takes, and
// two runs of long names still get different ones (the run id's random
// part is kept).
func TestContainerIDs(t *testing.T) {
	long := "ssebench-" + newRunID("kvconf-12-afb9ee1", "redteam-gateway-token", time.Unix(0, 0))
	other := "ssebench-" + newRunID("kvconf-12-afb9ee1", "redteam-gateway-token", time.Unix(0, 0))
	seen := map[string]bool{}
	for _, base := range []string{"ssebench-short", long, other} {
		for _, suffix := range []string{"-task", "-agent"} {
			id := withSuffix(base, suffix)
			if err := identifiers.Validate(id); err != nil {
				t.Errorf("withSuffix(%q, %q) = %q: %v", base, suffix, id, err)
			}
			if !strings.HasSuffix(id, suffix) || seen[id] {
				t.Errorf("withSuffix(%q, %q) = %q: not the %s container's own ID", base, suffix, id, suffix)
			}
			seen[id] = true
		}
	}
	if got := withSuffix("ssebench-short", "-task"); got != "ssebench-short-task" {
		t.Errorf("withSuffix(ssebench-short, -task) = %q", got)
	}
}
