package evaluate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/runner"
	"github.com/42-b3yond-6ug/ssebench/task/catalog"
)

// Request is a new evaluation as `ssebench eval` asks for it: Prepare
// checks it and plans it. A zero field means the default the flag's help
// gives.
type Request struct {
	// Agents are agent folders; Tasks task ids (none: every task of the
	// catalog, else of Dataset).
	Agents, Tasks []string
	Attempts      int
	// Dataset (--local) or Catalog is where the tasks come from: none
	// means $SSEBENCH_CATALOG, else the home's datasets/examples.
	Dataset, Catalog    string
	Timeout, Difficulty int
	Prebuilt            bool
	// Jobs is --jobs, kept in the plan for --resume; 0 is the machine's
	// default.
	Jobs int
	// Mode is sandbox ("") or sidecar; OSImage is sidecar mode's OS
	// image.
	Mode, OSImage string
	// Model is the model's name (none: $SSE_MODEL_NAME).
	Model string
	// Budget is --budget as given (gateway.ParseBudget reads it); ""
	// spends without bound.
	Budget string
	// BuildOnly builds the plan's images and runs nothing.
	BuildOnly bool
	// Network is the runs' network.
	Network runner.Network
	// OnCluster says the runs run on --backend kubernetes.
	OnCluster bool
	// Resources caps each run's containers.
	Resources *contract.Limits
	// AllowNoSandbox grades where the scripts' sandbox is refused
	// (--allow-no-sandbox).
	AllowNoSandbox bool
	// Lookup reads the environment (and .env).
	Lookup func(string) string
}

// errBudgetOnCluster refuses a budget the cluster's runs could not share.
var errBudgetOnCluster = errors.New("--budget cannot hold on --backend kubernetes: each run's model gateway is a pod of its own there and they share no ledger; run the evaluation on containerd, or bound each run with `ssebench run --max-tokens`/`--max-cost`")

// Prepare checks r against e's home and plans it, before anything is
// built: the tasks (listed when r names none), the names, the budget,
// and what would fail every run after its images (see pipeline.Env.Check,
// asked of the plan's first run). The plan is not written (WritePlan).
func Prepare(ctx context.Context, e *pipeline.Env, r Request) (*Plan, error) {
	if r.Dataset != "" && r.Catalog != "" {
		return nil, errors.New("--local and --catalog name two sources of the tasks: pass one")
	}
	if r.Dataset == "" && r.Catalog == "" {
		r.Catalog = r.Lookup(catalog.CatalogEnv)
	}
	agents, tasks, local := SplitList(r.Agents), SplitList(r.Tasks), r.Dataset
	if err := pipeline.CheckLocal(local); err != nil {
		return nil, err
	}
	if len(tasks) == 0 {
		var err error
		if tasks, local, err = e.TaskIDs(ctx, local, r.Catalog); err != nil {
			return nil, err
		}
	}
	if local != "" {
		abs, err := filepath.Abs(local)
		if err != nil {
			return nil, err
		}
		local = abs
	}
	p, err := NewPlan(agents, tasks, r.Attempts)
	if err != nil {
		return nil, err
	}
	if err := r.settle(p, local); err != nil {
		return nil, err
	}
	if r.Budget != "" {
		if p.Budget, err = r.budget(e.Home, p.Model); err != nil {
			return nil, err
		}
	}
	// Names last, once every setting was accepted: each refusal says one
	// thing to fix.
	if err := pipeline.CheckNames(e.Home, agents, tasks, local, r.Catalog); err != nil {
		return nil, err
	}
	// What would fail every run after its images (a model file that does
	// not read, or names a key this machine lacks): said once, now, of
	// the first run of the plan.
	first := p.RunRequest(pipeline.RunRequest{Network: r.Network, Lookup: r.Lookup, Resources: r.Resources})
	first.Task, first.Agent = p.Tasks[0], p.Agents[0]
	if err := e.Check(ctx, first); err != nil {
		return nil, err
	}
	return p, nil
}

// settle sets p's settings of every run from r; local is the dataset
// folder, absolute.
func (r Request) settle(p *Plan, local string) error {
	p.Dataset, p.Catalog, p.Timeout, p.Difficulty, p.Prebuilt, p.Jobs = local, r.Catalog, r.Timeout, r.Difficulty, r.Prebuilt, r.Jobs
	p.Network, p.AllowNoSandbox = r.Network, r.AllowNoSandbox
	if r.Resources != nil {
		limits := *r.Resources
		p.Resources = &limits
	}
	if r.Mode != "" && r.Mode != pipeline.ModeSandbox && r.Mode != pipeline.ModeSidecar {
		return fmt.Errorf("unknown --mode %q: use %s or %s", r.Mode, pipeline.ModeSandbox, pipeline.ModeSidecar)
	}
	if r.Mode == pipeline.ModeSidecar {
		p.Mode, p.OSImage = r.Mode, r.OSImage
	}
	if p.Catalog != "" && !strings.Contains(p.Catalog, "://") {
		var err error
		if p.Catalog, err = filepath.Abs(p.Catalog); err != nil {
			return err
		}
	}
	p.Model = r.Model
	if p.Model == "" {
		p.Model = r.Lookup("SSE_MODEL_NAME")
	}
	return nil
}

// budget reads r.Budget and checks, before anything is planned or
// built, that the runs of model can keep it: their gateways on this
// machine, an upstream to spend on (a model file of the home's models/,
// or the environment's), and prices when it is in dollars.
func (r Request) budget(home, model string) (*gateway.Budget, error) {
	b, err := gateway.ParseBudget(r.Budget)
	if err != nil {
		return nil, err
	}
	if r.Network == runner.NetworkOpen {
		return nil, errors.New("--budget is kept by the runs' model gateways, which --egress open bypasses: drop --egress open")
	}
	if r.BuildOnly {
		return nil, errors.New("--budget bounds what runs spend; --build-only runs nothing: drop one")
	}
	if r.OnCluster {
		return nil, errBudgetOnCluster
	}
	cfg, err := gateway.Resolve(model, "", filepath.Join(home, "models"), r.Lookup)
	if errors.Is(err, gateway.ErrNoUpstream) {
		return nil, errors.New("--budget bounds model use, and the runs have no model: pass --model NAME with models/NAME.yaml, or set SSE_BASE_URL and SSE_API_KEY")
	} else if err != nil {
		return nil, err
	}
	if b.USD > 0 {
		if err := cfg.CheckPrices("--budget in dollars", ", or give --budget in tokens"); err != nil {
			return nil, err
		}
	}
	return &b, nil
}

// RunRequest is the request of p's runs: base (this machine's side of
// them: addresses, keys, ledger) with p's settings (the tasks' source,
// model, timeout, difficulty, mode, network, limits, sandbox). A plan
// written before it kept network and limits takes base's; a sandbox
// refused by base or by p is let go (a resume may add
// --allow-no-sandbox, which each run's result records).
func (p *Plan) RunRequest(base pipeline.RunRequest) pipeline.RunRequest {
	base.Dataset, base.Catalog, base.Prebuilt, base.Mode, base.OSImage = p.Dataset, p.Catalog, p.Prebuilt, p.Mode, p.OSImage
	base.Timeout, base.Difficulty, base.Model = p.Timeout, p.Difficulty, p.Model
	if p.Network != "" {
		base.Network = p.Network
	}
	if p.Resources != nil {
		limits := *p.Resources
		base.Resources = &limits
	}
	base.AllowNoSandbox = base.AllowNoSandbox || p.AllowNoSandbox
	return base
}

// ClusterRunner is a cluster an evaluation's runs run on: pipeline.Cluster
// and what deletes by label what the runs of a killed evaluation left
// (kube.Runner.DeleteLabeled).
type ClusterRunner interface {
	pipeline.Cluster
	DeleteLabeled(ctx context.Context, selector string) error
}

// NewBackend is where p's runs run: this machine's containerd through e,
// or cluster when it is not nil, which pulls the images from the registry
// they are pushed to. base is this machine's side of every run (see
// Plan.RunRequest); its Output defaults to nothing.
func NewBackend(e *pipeline.Env, p *Plan, base pipeline.RunRequest, cluster ClusterRunner) (Backend, error) {
	if cluster != nil && base.Ledger != nil {
		return nil, errBudgetOnCluster
	}
	if cluster != nil && p.Mode == pipeline.ModeSidecar {
		return nil, errors.New("--mode sidecar runs two containers in containerd: it cannot run with --backend kubernetes")
	}
	if base.Output == nil {
		base.Output = io.Discard
	}
	local := &Containerd{Env: e, EvalID: p.ID, Request: p.RunRequest(base)}
	if cluster == nil {
		return local, nil
	}
	// The images go to the registry, for the cluster to pull.
	local.Request.Cluster, local.Request.ViaRegistry = cluster, true
	return &Cluster{Containerd: *local, DeleteLabeled: cluster.DeleteLabeled}, nil
}
