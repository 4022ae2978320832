package commands

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/results"
	"github.com/42-b3yond-6ug/ssebench/runner"
	"github.com/42-b3yond-6ug/ssebench/task/catalog"
)

type evalOptions struct {
	// KeepImages is --keep-images.
	KeepImages                             options.KeepImages
	Agents, Tasks                          []string
	Local, Catalog, Model, RunsDir, Resume string
	Mode, OSImage                          string
	Runtime, Egress                        string
	// Budget is --budget as given (gateway.ParseBudget reads it).
	Budget string
	// Resources caps each run's containers (--memory, --pids, --cpus).
	Resources                                    contract.Limits
	Jobs, Attempts, Timeout, Difficulty, Retries int
	Prebuilt, BuildOnly                          bool
	// AllowNoSandbox is --allow-no-sandbox.
	AllowNoSandbox bool
	// Check is --check: the preflight of `tasks check`, then exit.
	Check bool
	// FailOnAudit is --fail-on-audit: a run the audit flagged counts as
	// failed, and eval exits ExitFailed when there is one.
	FailOnAudit bool
	backendOptions
}

func newCmdEval(g *options.Global) *cobra.Command {
	o := &evalOptions{Resources: contract.DefaultLimits}
	cmd := &cobra.Command{
		Use:   "eval --agents a,b [--local DIR | --catalog PATH] [--tasks ...] [--jobs N] [--attempts K] | --resume DIR",
		Short: "Evaluate agents on a dataset: every task, agent and attempt, many at once, resumable",
		Long: `Run every (task, agent, attempt) of a plan with at most --jobs containers at
once, into one evaluation folder runs/eval-<id>/: plan.json (the plan) and
runs/<run-id>/ per finished run. Each task's case and tool images and each
agent's image are built once, however many runs need them.

A finished run is moved into the folder whole, so an evaluation that was
interrupted (Ctrl-C, kill, reboot) has complete runs or none:
"ssebench eval --resume DIR" runs what is missing and keeps what is done.
Runs that fail for an infrastructure reason (a build, a pull, containerd)
are retried (--retries) and, if they still fail, left for --resume; a run
that ran and was graded is a result, passed or not.

One line is printed per finished run (task, agent, attempt, checks,
duration, tokens), and on a terminal a status line with an estimate. At the
end stdout gets the report ("ssebench runs report DIR" makes it again, in
other formats). Exit status: 0 when every run of the plan is done, whatever
the grades; 1 otherwise. --check runs nothing: it says which images of the
plan exist and which must be built (see "ssebench tasks check") and exits 0,
or 2 when something must be built.

A run whose grade found its evidence forged (an integrity verdict, "FORGED:
report forged") is neither passed nor failed: the lines mark it ‼ and the
report counts it apart. Every run's patch is audited for what a fix never
needs (a TestMain or init added, a re-exec of the test binary, ...); the
report lists the flagged runs with the audit's findings. With
--fail-on-audit a flagged run counts as failed, in the lines and the
report, and eval exits 2 when every run is done but one of them was
flagged.

--budget bounds what all the runs together spend on the model: tokens
(input plus output: 2000000, 500k, 2m) or US dollars ($5, 5usd; needs a
price for every model in the model file). Every request's maximum is set
aside against it before the request goes upstream, so the runs at once
overshoot it by at most one request's maximum. Once it is spent, requests
of the runs in flight get 429 with the reason in their model.jsonl, the
runs not yet started are not started, evaluation.json and the report list
them ("budget spent"), and eval exits 1. It needs the runs' model gateways
on this machine: not --backend kubernetes, not --egress open.`,
		Example: `  ssebench eval --agents dummy,files-demo --local datasets/examples --jobs 3 --attempts 2
  ssebench eval --agents my-agent --catalog catalog/ --tasks kvconf-12-afb9ee1,libqs-3-b2a739e --model gpt-x
  ssebench eval --resume runs/eval-20261201-213000-ab12cd
  ssebench eval --agents dummy,patcher --backend kubernetes --registry localhost:5000/ssebench --jobs 3`,
		Args: options.KeepImagesArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runEval(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.Agents, "agents", nil, "agent folders under agents/, comma-separated (required unless --resume)")
	f.StringSliceVar(&o.Tasks, "tasks", nil, "task ids (default: every task of the dataset or catalog)")
	f.StringVar(&o.Local, "local", "", "dataset folder (default: datasets/examples under the home)")
	f.StringVar(&o.Catalog, "catalog", "", "catalog to pull the case images from: folder, manifest.json, pinned https:// URL or oci:// artifact (default $"+catalog.CatalogEnv+")")
	f.IntVar(&o.Jobs, "jobs", 0, "runs at once (default: one per core, at most one per 2 GiB of available memory)")
	f.IntVar(&o.Attempts, "attempts", 1, "attempts of each task and agent")
	f.StringVar(&o.Model, "model", "", "model name (default $SSE_MODEL_NAME, else none)")
	f.Var(options.Seconds(&o.Timeout), "timeout", "how long each agent may run: a duration (90m, 1h30m) or seconds (default 1h)")
	f.IntVar(&o.Difficulty, "difficulty", 2, "SSE_DIFFICULTY, 0–4")
	f.BoolVar(&o.Prebuilt, "prebuilt", false, "build nothing: pull each agent image and run it")
	f.StringVar(&o.Mode, "mode", pipeline.ModeSandbox, "sandbox or sidecar (two containers per run: the task's and the agent's)")
	f.StringVar(&o.OSImage, "os-image", "", "sidecar mode: the OS image tool-sidecar-agent starts from (default $"+OSImageEnv+")")
	options.AddKeepImagesFlag(f, &o.KeepImages)
	f.BoolVar(&o.BuildOnly, "build-only", false, "build every image the plan needs and run nothing")
	f.BoolVar(&o.Check, "check", false, "say which images of the plan exist and which must be built (as tasks check), exit 0 or 2, and run nothing")
	f.StringVar(&o.RunsDir, "runs-dir", "runs", "where the evaluation folder eval-<id>/ goes")
	f.StringVar(&o.Resume, "resume", "", "finish the evaluation in this folder: run what is missing, keep what is done")
	f.IntVar(&o.Retries, "retries", evaluate.DefaultRetries, "times a run that failed for an infrastructure reason is tried again")
	f.StringVar(&o.Egress, "egress", "restricted", "container network: restricted (loopback only) or open")
	f.BoolVar(&o.AllowNoSandbox, "allow-no-sandbox", false, allowNoSandboxUsage)
	f.BoolVar(&o.FailOnAudit, "fail-on-audit", false, "count a run the audit flagged (its patch holds what a fix never needs) as failed, and exit 2 when there is one")
	f.StringVar(&o.Budget, "budget", "", "what all runs together may spend on the model: tokens (2000000, 500k, 2m) or US dollars ($5, 5usd); once spent, requests get 429 and no further run starts")
	options.AddLimitFlags(f, &o.Resources)
	f.StringVar(&o.Runtime, "runtime", "", "runtime image (default $SSEBENCH_RUNTIME_IMAGE, else REGISTRY/runtime:VERSION)")
	addBackendFlags(cmd, &o.backendOptions)
	return cmd
}

func runEval(cmd *cobra.Command, g *options.Global, o *evalOptions) error {
	if o.Check {
		return evalCheck(cmd, g, o)
	}
	if err := o.Resources.Validate(); err != nil {
		return err
	}
	network, err := runner.ParseNetwork(o.Egress)
	if err != nil {
		return fmt.Errorf("--egress: %w", err)
	}
	e, done, err := newEnv(g, cmd, o.Runtime)
	if err != nil {
		return err
	}
	defer done()
	// The builds' own progress lines would drown the runs' lines.
	e.Log = nil
	plan, dir, err := evalPlan(g, e, cmd, o, network)
	if err != nil {
		return err
	}
	jobs, ledger, err := startEval(cmd, o, dir, plan)
	if err != nil {
		return err
	}
	backend, err := o.backend(cmd, g, e, plan, network, ledger)
	if err != nil {
		return err
	}
	out, err := evaluate.Evaluate(cmd.Context(), backend, dir, plan, o.evaluateOptions(cmd, jobs, ledger)...)
	return printEval(cmd, o, dir, out, err)
}

// startEval says what the evaluation in dir runs and how many at once,
// and opens its budget's ledger (nil: no budget), saying what was spent
// before.
func startEval(cmd *cobra.Command, o *evalOptions, dir string, plan *evaluate.Plan) (int, *gateway.Ledger, error) {
	jobs, why := plan.JobsAtOnce(o.Jobs, cmd.Flag("jobs").Changed)
	stderr := cmd.ErrOrStderr()
	fmt.Fprintf(stderr, "evaluation %s: %s (%s × %s × %s), %d at once (%s)\n",
		dir, results.Plural(len(plan.Runs), "run", "runs"), results.Plural(len(plan.Tasks), "task", "tasks"),
		results.Plural(len(plan.Agents), "agent", "agents"), results.Plural(plan.Attempts, "attempt", "attempts"), jobs, why)
	ledger, err := evaluate.NewLedger(dir, plan)
	if err == nil && ledger != nil {
		spent, usd := ledger.Spent()
		fmt.Fprintf(stderr, "budget %s for all runs (%s)\n", plan.Budget, (&results.BudgetUse{Budget: *plan.Budget, SpentTokens: spent, SpentUSD: usd}).Text()+" spent before")
	}
	return jobs, ledger, err
}

// evaluateOptions are the engine's options of the flags.
func (o *evalOptions) evaluateOptions(cmd *cobra.Command, jobs int, ledger *gateway.Ledger) []evaluate.Option {
	eopts := []evaluate.Option{evaluate.WithJobs(jobs), evaluate.WithRetries(o.Retries)}
	if o.FailOnAudit {
		eopts = append(eopts, evaluate.WithFailOnAudit())
	}
	if o.BuildOnly {
		eopts = append(eopts, evaluate.WithBuildOnly())
	} else {
		eopts = append(eopts, evaluate.WithProgress(evaluate.NewPrinter(cmd.ErrOrStderr())))
	}
	if ledger != nil {
		eopts = append(eopts, evaluate.WithBudget(ledger))
	}
	return eopts
}

// evalCheck is --check: the preflight of `tasks check` of the plan's
// tasks and agents, before anything is built or a model is called.
func evalCheck(cmd *cobra.Command, g *options.Global, o *evalOptions) error {
	if o.Catalog != "" || o.Resume != "" {
		return errors.New("--check reads the home's datasets: use --local or --tasks, not --catalog or --resume")
	}
	args := evaluate.SplitList(o.Tasks)
	if len(args) == 0 && o.Local != "" {
		args = []string{o.Local}
	}
	return runTasksCheck(cmd, g, args, evaluate.SplitList(o.Agents), "", false)
}

// backend is where the plan's runs run: containerd here, else the
// cluster of --backend kubernetes, which pulls the images from the
// registry.
func (o *evalOptions) backend(cmd *cobra.Command, g *options.Global, e *pipeline.Env, plan *evaluate.Plan, network runner.Network, ledger *gateway.Ledger) (evaluate.Backend, error) {
	cluster, err := o.cluster(cmd.Context(), g, cmd, plan.Prebuilt)
	if err != nil {
		return nil, err
	}
	var onCluster evaluate.ClusterRunner
	if cluster != nil {
		onCluster = cluster
	}
	return evaluate.NewBackend(e, plan, pipeline.RunRequest{
		APIKey: g.Lookup("SSE_API_KEY"), BaseURL: g.Lookup("SSE_BASE_URL"),
		Network: network, ContainerdAddr: g.ContainerdAddr,
		Resources: &o.Resources, Ledger: ledger, KeepImages: o.KeepImages.Keep, ImageBudget: o.KeepImages.Budget,
		AllowNoSandbox: o.AllowNoSandbox,
	}, onCluster)
}

// printEval says how the evaluation of the folder dir ended, and prints
// its report; err is Evaluate's.
func printEval(cmd *cobra.Command, o *evalOptions, dir string, out *evaluate.Outcome, err error) error {
	stderr := cmd.ErrOrStderr()
	if o.BuildOnly {
		if err == nil {
			fmt.Fprintln(stderr, out.Built())
		}
		return err
	}
	if out != nil {
		fmt.Fprintln(stderr, out)
	}
	if cmd.Context().Err() != nil {
		// Said before the report, which says it is partial.
		fmt.Fprintf(stderr, "interrupted: what is done stays; `ssebench eval --resume %s` runs the rest\n", dir)
	}
	rep, runs, rerr := evaluate.Report(dir, o.FailOnAudit)
	if rerr != nil {
		return err
	}
	if v := rep.Verdicts(); v != "" {
		fmt.Fprintf(stderr, "%s: `ssebench runs report %s` lists them\n", v, dir)
	}
	if werr := results.Write(cmd.OutOrStdout(), rep, "md"); werr != nil && err == nil {
		err = werr
	}
	if err == nil && o.FailOnAudit {
		err = failOnAuditExit(cmd, runs)
	}
	return err
}

// failOnAuditExit is eval's exit under --fail-on-audit once every run is
// done: ExitFailed when a run of the evaluation was flagged, as `ssebench
// run` exits for a failed run.
func failOnAuditExit(cmd *cobra.Command, runs []*results.Run) error {
	n := results.CountFlagged(runs)
	if n == 0 {
		return nil
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s flagged by the audit, counted as failed (--fail-on-audit)\n", results.Plural(n, "run", "runs"))
	cmd.SilenceErrors = true
	return &ExitError{Code: ExitFailed}
}

// evalPlan reads the plan of --resume, or makes a new one and writes it,
// once this machine can run it.
func evalPlan(g *options.Global, e *pipeline.Env, cmd *cobra.Command, o *evalOptions, network runner.Network) (*evaluate.Plan, string, error) {
	if o.Resume != "" {
		return evalResume(g, cmd, o)
	}
	p, err := evaluate.Prepare(cmd.Context(), e, evaluate.Request{
		Agents: o.Agents, Tasks: o.Tasks, Attempts: o.Attempts, Dataset: o.Local, Catalog: o.Catalog,
		Timeout: o.Timeout, Difficulty: o.Difficulty, Prebuilt: o.Prebuilt, Jobs: o.Jobs,
		Mode: o.Mode, OSImage: firstSet(o.OSImage, g.Lookup(OSImageEnv)), Model: o.Model,
		Budget: o.Budget, BuildOnly: o.BuildOnly, Network: network, OnCluster: !containerdBackend(cmd, g, o.Backend),
		Resources: &o.Resources, AllowNoSandbox: o.AllowNoSandbox, Lookup: g.Lookup,
	})
	if err != nil {
		return nil, "", err
	}
	// Before the plan is written: an evaluation that cannot run leaves no
	// folder behind, and a base image or runtime it lacks is said once,
	// not found by every run and retried as an infrastructure failure.
	if err := checkHost(cmd, g, e, "eval", "the evaluation", o.Backend, o.Runtime, p.RunRequest(pipeline.RunRequest{}), p.Tasks, p.Agents); err != nil {
		return nil, "", err
	}
	dir := filepath.Join(o.RunsDir, p.FolderName())
	if err := evaluate.WritePlan(dir, p); err != nil {
		return nil, "", err
	}
	return p, dir, nil
}

// evalResume reads the plan of --resume, which no flag of the plan may
// change.
func evalResume(g *options.Global, cmd *cobra.Command, o *evalOptions) (*evaluate.Plan, string, error) {
	// --allow-no-sandbox may be added: each run's result says it ran
	// without the sandbox.
	for _, f := range []string{"agents", "tasks", "local", "catalog", "attempts", "model", "timeout", "difficulty", "prebuilt", "runs-dir", "budget", "egress", "memory", "pids", "cpus", "disk"} {
		if cmd.Flag(f).Changed {
			return nil, "", fmt.Errorf("--resume runs the plan as it was made: --%s cannot change it (start a new evaluation instead)", f)
		}
	}
	p, err := evaluate.ReadPlan(o.Resume)
	if err != nil {
		return nil, "", err
	}
	if err := checkDaemons(g, "eval", daemonNeeds{Containerd: containerdBackend(cmd, g, o.Backend), BuildKit: !p.Prebuilt}); err != nil {
		return nil, "", err
	}
	return p, o.Resume, nil
}
