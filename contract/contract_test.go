package contract

import (
	"strings"
	"testing"
)

func TestPaths(t *testing.T) {
	if Rel(TaskRoot) != "ssebench" || Rel("relative") != "relative" {
		t.Errorf("Rel(%q) = %q", TaskRoot, Rel(TaskRoot))
	}
	// Results live under the root-only state directory: its 0700 parent
	// keeps model out of every run's results.
	if !strings.HasPrefix(Results, StateDir+"/") {
		t.Errorf("Results %q is not under StateDir %q", Results, StateDir)
	}
	for _, p := range []string{TaskRoot, RepoDir, StateDir, Archive, Entrypoint, ModelHome} {
		if !strings.HasPrefix(p, "/") {
			t.Errorf("%q is not absolute", p)
		}
	}
}
