package evaluate_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// prepareHome is a home with the agent dummy, the dataset examples of
// the tasks t-1 and t-2, and the model file m without prices.
func prepareHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	for name, body := range map[string]string{
		"agents/dummy/agent.yaml":               "name: dummy\n",
		"agents/dummy/Dockerfile":               "FROM ssebench-agent\n",
		"datasets/examples/t-1/Dockerfile":      "FROM scratch\n",
		"datasets/examples/t-2/Dockerfile":      "FROM scratch\n",
		"models/m.yaml":                         "base_url: https://api.example.invalid/v1\napi_key_env: none\n",
		"datasets/examples/.hidden/placeholder": "",
	} {
		p := filepath.Join(home, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// TestPrepare: a new evaluation without --tasks runs every task of the
// home's examples, its folder made absolute, and the model of the
// environment; nothing is written.
func TestPrepare(t *testing.T) {
	home := prepareHome(t)
	env := map[string]string{"SSE_MODEL_NAME": ""}
	p, err := evaluate.Prepare(context.Background(), &pipeline.Env{Home: home}, evaluate.Request{
		Agents: []string{"dummy"}, Attempts: 2, Difficulty: 2, Jobs: 3, Lookup: func(k string) string { return env[k] },
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"t-1", "t-2"}; !slices.Equal(p.Tasks, want) || len(p.Runs) != 4 {
		t.Errorf("tasks %q (%d runs), want %q (4 runs)", p.Tasks, len(p.Runs), want)
	}
	if want := filepath.Join(home, "datasets", "examples"); p.Dataset != want || p.Jobs != 3 || p.Budget != nil {
		t.Errorf("plan: dataset %q, jobs %d, budget %v; want %q, 3, none", p.Dataset, p.Jobs, p.Budget, want)
	}
	if _, err := os.Stat(filepath.Join(home, "runs")); !os.IsNotExist(err) {
		t.Errorf("Prepare wrote %s/runs (stat: %v)", home, err)
	}
	// --local as given, relative to the working folder: the plan holds
	// it absolute, for a --resume from elsewhere.
	t.Chdir(home)
	p, err = evaluate.Prepare(context.Background(), &pipeline.Env{Home: home}, evaluate.Request{
		Agents: []string{"dummy"}, Tasks: []string{"t-2"}, Dataset: "datasets/examples", Attempts: 1, Lookup: func(k string) string { return env[k] },
	})
	if want := filepath.Join(home, "datasets", "examples"); err != nil || p.Dataset != want {
		t.Errorf("Prepare of --local datasets/examples: %v, dataset %q; want %q", err, p.Dataset, want)
	}
}

// TestPrepareRefuses: what an evaluation could not do is refused by
// Prepare, in a line that says what to change: two sources of tasks, an
// unknown mode, and a budget the runs could not keep.
func TestPrepareRefuses(t *testing.T) {
	home := prepareHome(t)
	base := evaluate.Request{Agents: []string{"dummy"}, Tasks: []string{"t-1"}, Attempts: 1, Difficulty: 2, Lookup: func(string) string { return "" }}
	for _, tc := range []struct {
		name string
		edit func(r *evaluate.Request)
		want string
	}{
		{"two sources", func(r *evaluate.Request) { r.Dataset, r.Catalog = "d", "c" }, "--local and --catalog name two sources"},
		{"mode", func(r *evaluate.Request) { r.Mode = "both" }, `unknown --mode "both"`},
		{"budget unread", func(r *evaluate.Request) { r.Budget, r.Model = "5 dollars", "m" }, "give tokens"},
		{"budget open", func(r *evaluate.Request) { r.Budget, r.Model, r.Network = "1000", "m", runner.NetworkOpen }, "drop --egress open"},
		{"budget build-only", func(r *evaluate.Request) { r.Budget, r.Model, r.BuildOnly = "1000", "m", true }, "--build-only runs nothing"},
		{"budget cluster", func(r *evaluate.Request) { r.Budget, r.Model, r.OnCluster = "1000", "m", true }, "--budget cannot hold on --backend kubernetes"},
		{"budget no model", func(r *evaluate.Request) { r.Budget = "1000" }, "the runs have no model: pass --model NAME"},
		{"budget no prices", func(r *evaluate.Request) { r.Budget, r.Model = "$5", "m" }, "needs the price of model m"},
		{"unknown agent", func(r *evaluate.Request) { r.Agents = []string{"nope"} }, "nope"},
	} {
		r := base
		tc.edit(&r)
		_, err := evaluate.Prepare(context.Background(), &pipeline.Env{Home: home}, r)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Prepare = %v, want %q", tc.name, err, tc.want)
		}
	}
	r := base
	r.Budget, r.Model = "1000", "m"
	p, err := evaluate.Prepare(context.Background(), &pipeline.Env{Home: home}, r)
	if err != nil || p.Budget == nil || p.Budget.Tokens != 1000 {
		t.Errorf("Prepare with --budget 1000 = %+v, %v; want a budget of 1000 tokens", p, err)
	}
}

// TestNewBackend: a plan's runs run in containerd with the plan's
// settings; a cluster takes no budget and no sidecar mode.
func TestNewBackend(t *testing.T) {
	p := &evaluate.Plan{ID: "x", Model: "m", Timeout: 60, Mode: pipeline.ModeSidecar}
	b, err := evaluate.NewBackend(&pipeline.Env{}, p, pipeline.RunRequest{ContainerdAddr: "/c.sock"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := b.(*evaluate.Containerd)
	if !ok || c.EvalID != "x" || c.Request.Model != "m" || c.Request.Timeout != 60 || c.Request.ContainerdAddr != "/c.sock" || c.Request.Output == nil {
		t.Errorf("NewBackend = %#v, want containerd with the plan's settings and the machine's", b)
	}
	if _, err := evaluate.NewBackend(&pipeline.Env{}, p, pipeline.RunRequest{}, fakeCluster{}); err == nil || !strings.Contains(err.Error(), "--mode sidecar") {
		t.Errorf("NewBackend of a sidecar plan on a cluster = %v", err)
	}
	p.Mode = ""
	if _, err := evaluate.NewBackend(&pipeline.Env{}, p, pipeline.RunRequest{Ledger: &gateway.Ledger{}}, fakeCluster{}); err == nil || !strings.Contains(err.Error(), "--budget cannot hold") {
		t.Errorf("NewBackend of a budget on a cluster = %v", err)
	}
	b, err = evaluate.NewBackend(&pipeline.Env{}, p, pipeline.RunRequest{}, fakeCluster{})
	if cl, ok := b.(*evaluate.Cluster); err != nil || !ok || !cl.Request.ViaRegistry || cl.Request.Cluster == nil {
		t.Errorf("NewBackend on a cluster = %#v, %v; want a Cluster through the registry", b, err)
	}
}

// TestPlanKeepsRunSettings: the network, limits and sandbox an
// evaluation started with are in its plan, and its runs (a resume's
// too) get them, whatever the resume's flags say; a resume may add
// --allow-no-sandbox, never take it away.
func TestPlanKeepsRunSettings(t *testing.T) {
	home := prepareHome(t)
	limits := contract.Limits{MemoryBytes: 1 << 30, Pids: 64, CPUs: 1}
	p, err := evaluate.Prepare(context.Background(), &pipeline.Env{Home: home}, evaluate.Request{
		Agents: []string{"dummy"}, Tasks: []string{"t-1"}, Attempts: 1, Network: runner.NetworkOpen,
		Resources: &limits, AllowNoSandbox: true, Lookup: func(string) string { return "" },
	})
	if err != nil {
		t.Fatal(err)
	}
	limits.Pids = 1 // the flags' value, changed after: the plan keeps its copy
	dir := filepath.Join(t.TempDir(), p.FolderName())
	if err := evaluate.WritePlan(dir, p); err != nil {
		t.Fatal(err)
	}
	read, err := evaluate.ReadPlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := read.RunRequest(pipeline.RunRequest{Network: runner.NetworkRestricted, Resources: &contract.DefaultLimits})
	if r.Network != runner.NetworkOpen || r.Resources == nil || *r.Resources != (contract.Limits{MemoryBytes: 1 << 30, Pids: 64, CPUs: 1}) || !r.AllowNoSandbox {
		t.Errorf("a resumed run: network %q, limits %+v, allow no sandbox %v; want open, the plan's limits, true", r.Network, r.Resources, r.AllowNoSandbox)
	}
	// A plan written before it kept them: the resume's flags say.
	old := &evaluate.Plan{}
	if r := old.RunRequest(pipeline.RunRequest{Network: runner.NetworkOpen, Resources: &limits, AllowNoSandbox: true}); r.Network != runner.NetworkOpen || r.Resources != &limits || !r.AllowNoSandbox {
		t.Errorf("an older plan's run: %q, %+v, %v; want the flags'", r.Network, r.Resources, r.AllowNoSandbox)
	}
}

type fakeCluster struct{}

func (fakeCluster) Open(context.Context, string) (pipeline.Executor, error) { return nil, nil }
func (fakeCluster) DeleteLabeled(context.Context, string) error             { return nil }
