package predictions

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
)

// TestPrepare: a grade of a home's dataset plans its predictions, the
// dataset's folder absolute, after Ready; what cannot grade is refused
// before any folder is made: no agent folder for the patches, a --tasks
// id the dataset lacks (with the closest one), Ready's refusal.
func TestPrepare(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	for _, d := range []string{"agents/" + Agent, "datasets/examples/" + predTask, "datasets/examples/libqs-3-b2a739e"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, "agents", Agent, "agent.yaml"), []byte("name: "+Agent+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "preds.jsonl")
	if err := os.WriteFile(path, []byte(predLine(t, predTask, "m", goodDiff)), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(t.TempDir(), "runs")
	e := &pipeline.Env{Home: home}
	ready := 0
	r := Request{Predictions: path, RunsDir: runs, Timeout: 600, Ready: func() error { ready++; return nil }}
	g, err := Prepare(ctx, e, r)
	if err != nil {
		t.Fatal(err)
	}
	if ready != 1 || len(g.Plan.Runs) != 1 || g.Plan.Dataset != filepath.Join(home, "datasets", "examples") || g.Plan.Timeout != 600 {
		t.Errorf("Prepare = %+v (ready asked %d times); want one run of the home's examples", g.Plan, ready)
	}
	if p, err := evaluate.ReadPlan(g.Dir); err != nil || p.ID != g.Plan.ID {
		t.Errorf("the plan written = %+v, %v", p, err)
	}

	stop := errors.New("containerd is not running")
	for _, tc := range []struct {
		name string
		edit func(r *Request)
		want string
	}{
		{"unknown task", func(r *Request) { r.Tasks = []string{"libqs-3-b2a739f"} }, `--tasks: unknown task "libqs-3-b2a739f": did you mean "libqs-3-b2a739e"?`},
		{"not ready", func(r *Request) { r.Ready = func() error { return stop } }, stop.Error()},
	} {
		r2 := r
		r2.RunsDir = filepath.Join(t.TempDir(), "runs")
		tc.edit(&r2)
		if _, err := Prepare(ctx, e, r2); err == nil || err.Error() != tc.want {
			t.Errorf("%s: Prepare = %v, want %q", tc.name, err, tc.want)
		}
		if _, err := os.Stat(r2.RunsDir); !os.IsNotExist(err) {
			t.Errorf("%s: Prepare made %s (stat: %v)", tc.name, r2.RunsDir, err)
		}
	}
	// --dataset as given, relative: the plan holds it absolute.
	t.Chdir(home)
	r.Dataset, r.RunsDir = "datasets/examples", filepath.Join(t.TempDir(), "runs")
	if g, err := Prepare(ctx, e, r); err != nil || g.Plan.Dataset != filepath.Join(home, "datasets", "examples") {
		t.Errorf("Prepare of --dataset datasets/examples: %v; want the folder absolute", err)
	}
	if err := os.RemoveAll(filepath.Join(home, "agents")); err != nil {
		t.Fatal(err)
	}
	if _, err := Prepare(ctx, e, r); err == nil || !strings.Contains(err.Error(), "applies patches with the agent folder agents/"+Agent) {
		t.Errorf("Prepare without agents/%s = %v", Agent, err)
	}
}
