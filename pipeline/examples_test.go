package pipeline_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// testExampleAgents runs the example agents of agents/ that TestRun does
// not run otherwise, built blind and grafted (docs/agents.md): files-demo
// (native, COPY --from=workspace), apt-demo (BuildKit, a RUN) and the
// reference agent, which gets the task's patch from its read-only mount,
// not from the image, and passes.
func testExampleAgents(t *testing.T, x *e2e) {
	ctx := context.Background()
	repo := moduleDir(t)
	for _, tc := range []struct {
		folder, log string
		passed      bool
	}{
		{"files-demo", "files-demo agent, SSEBench", false},
		{"apt-demo", "jq-", false},
		{"reference", "", true},
	} {
		t.Run(tc.folder, func(t *testing.T) {
			cp(t, filepath.Join(repo, "agents", tc.folder), filepath.Join(x.home, "agents", tc.folder))
			res, out, err := x.run(t, ctx, tc.folder, nil)
			if err != nil {
				t.Fatalf("Run() = %v\n%s", err, out)
			}
			if res.Summary.ExitCode != 0 {
				t.Errorf("agent exit %d, want 0\n%s", res.Summary.ExitCode, read(t, filepath.Join(res.Dir, "agent.log")))
			}
			if log := read(t, filepath.Join(res.Dir, "agent.log")); !strings.Contains(log, tc.log) {
				t.Errorf("agent.log = %q, want %q", log, tc.log)
			}
			if r := readResult(t, res.Dir); r.Passed != tc.passed || r.Build == nil || !r.Build.OK {
				t.Errorf("result.json = %+v, want passed %v and the build graded", r, tc.passed)
			}
		})
	}
}
