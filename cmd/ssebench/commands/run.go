package commands

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/results"
	"github.com/42-b3yond-6ug/ssebench/runner"
	"github.com/42-b3yond-6ug/ssebench/task"
	"github.com/42-b3yond-6ug/ssebench/task/catalog"
)

// ExitError makes ssebench exit with Code without printing anything more:
// a run's grade (see the exit statuses below).
type ExitError struct{ Code int }

// Exit statuses of `ssebench run`. 1 stays every command's "ssebench
// failed" (the run did not happen, e.g. a build failed).
const (
	// ExitFailed: the run was graded and a check failed.
	ExitFailed = 2
	// ExitNotGraded: the container ran but left no grade.
	ExitNotGraded = 3
)

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

type runOptions struct {
	// KeepImages is --keep-images.
	KeepImages                                                                             options.KeepImages
	Task, Agent, Local, Catalog, ToolLayer, Mode, OSImage, Egress, Model, RunsDir, Runtime string
	Prebuilt, Build, Keep, KeepAlive, JSON, AllowNoSandbox                                 bool
	Timeout, Difficulty                                                                    int
	Plugins                                                                                []string
	// Model access through the gateway (restricted runs).
	ModelFile, ModelsDir string
	Limits               gateway.Limits
	// Resources caps the run's containers (--memory, --pids, --cpus).
	Resources contract.Limits
	backendOptions
}

// allowNoSandboxUsage is the help of --allow-no-sandbox (run and eval).
const allowNoSandboxUsage = "grade where the machine refuses the scripts' sandbox (user namespaces turned off): the agent's code in the checks then shares /tmp and the loopback interface with the agent; result.json says sandbox: none and reports flag the run (default: such a run is not graded)"

func newCmdRun(g *options.Global) *cobra.Command {
	o := &runOptions{Resources: contract.DefaultLimits}
	cmd := &cobra.Command{
		Use:   "run --task ID --agent FOLDER [--local DIR | --catalog PATH] [--prebuilt] [--build] [--timeout 90m]",
		Short: "Build what is missing and run an agent on a task in containerd",
		Long: `Build whatever the run lacks (the case image with BuildKit, the tool and
agent images assembled), then run the agent image with containerd: the results
directory runs/<run-id>/ is mounted at /var/lib/ssebench/results and its
archive/ at /tmp/sse-archive, the environment and labels of SPEC.md section 10
are set, and the output is streamed. runs/<run-id>/summary.json records
the task, agent, images, tool layer, timings and status; result.json the
grade, with the run id, agent, model, difficulty and case image added.

The run ends with its grade on stderr, "PASSED" or e.g. "FAILED: poc,
intent_test (build ✓ test ✓)", and the exit status says it too: 0 PASSED,
2 FAILED (a check failed), 3 not graded (the container left no grade), 1
when the run could not happen. With --json the container's output goes to
stderr and stdout gets one JSON object: the run as "ssebench runs ls
--json" prints it.

With --registry the images are pushed there and containerd pulls them. With
--prebuilt (or SSEBENCH_PREBUILT=1) nothing is built: the agent image is
pulled from the registry, else taken from this machine. SSE_API_KEY,
SSE_BASE_URL and SSE_MODEL_NAME come from the environment or .env.

In a restricted run (the default) the container reaches its model only
through the run's model gateway: SSE_BASE_URL is http://127.0.0.1:4000 and
SSE_API_KEY a per-run token; the gateway forwards to the upstream of
--model's models/<name>.yaml (or --model-file), else to the host's
SSE_BASE_URL with the host's SSE_API_KEY, and records every request in
runs/<run-id>/model.jsonl. --max-requests, --max-tokens and --max-cost answer
429 once reached.

With --mode sidecar the project and the agent run in two containers
(SPEC.md section 7): tool-sidecar/<task> (the daemon, which grades) and
agent-<name>/sidecar on tool-sidecar-agent (made from --os-image, default
$SSEBENCH_OS_IMAGE), sharing SOURCE_DIR and /run/ssebench. --tool-layer NAME
picks another tool layer for sandbox mode, one a binary built with it links
(examples/cmd/ssebench-example links "example"; see the README's "Custom
tool layers"); it is refused with --mode sidecar and with --prebuilt.

With --backend kubernetes (or SSEBENCH_BACKEND=kubernetes) the run is one Job
on the cluster of the kubeconfig (--kubeconfig, --kube-context, --namespace):
the images come from a registry the cluster reaches (--registry pushes them
there, --prebuilt takes them as they are), runs/<run-id>/ comes back through
the pod's log, and the Job, its pod and its NetworkPolicy are deleted at the
end. Sidecar mode runs in containerd only.`,
		Example: `  ssebench run --task kvconf-12-afb9ee1 --agent dummy
  ssebench run --task kvconf-12-afb9ee1 --agent dummy --registry localhost:5000/ssebench
  ssebench run --task kvconf-12-afb9ee1 --agent dummy --prebuilt --timeout 600
  ssebench run --task kvconf-12-afb9ee1 --agent dummy --mode sidecar
  ssebench run --task kvconf-12-afb9ee1 --agent loop --model gpt-4.1-mini --max-requests 50
  ssebench run --task kvconf-12-afb9ee1 --agent dummy --backend kubernetes --registry localhost:5000/ssebench`,
		Args: options.KeepImagesArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runRun(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Task, "task", "", "task id (required)")
	f.StringVar(&o.Agent, "agent", "", "agent folder under agents/ (required)")
	f.StringVar(&o.Local, "local", "", "dataset folder holding the task (default: the dataset under the home that has it)")
	f.StringVar(&o.Catalog, "catalog", "", "catalog to pull the case image from: folder, manifest.json, pinned https:// URL or oci://REGISTRY/catalog/<dataset>:<version> (default $"+catalog.CatalogEnv+")")
	f.BoolVar(&o.Prebuilt, "prebuilt", false, "build nothing: pull the agent image and run it (also SSEBENCH_PREBUILT=1)")
	f.BoolVar(&o.Build, "build", false, "build the case image from the task folder even when a catalog has it")
	f.Var(options.Seconds(&o.Timeout), "timeout", "how long the agent may run: a duration (90m, 1h30m) or seconds (default 1h)")
	f.IntVar(&o.Difficulty, "difficulty", 2, "SSE_DIFFICULTY, 0–4")
	f.StringVar(&o.Egress, "egress", "restricted", "container network: restricted (loopback only) or open")
	f.BoolVar(&o.Keep, "keep", false, "keep the container and its snapshot in containerd")
	options.AddKeepImagesFlag(f, &o.KeepImages)
	f.BoolVar(&o.KeepAlive, "keep-alive", false, "SSE_KEEP_ALIVE=1: the container stays up after grading")
	f.BoolVar(&o.AllowNoSandbox, "allow-no-sandbox", false, allowNoSandboxUsage)
	f.StringVar(&o.ToolLayer, "tool-layer", "", "tool layer (default "+pipeline.DefaultToolLayer+"; available: "+strings.Join(pipeline.DefaultToolLayers.Names(), ", ")+"); not with --mode sidecar or --prebuilt")
	f.StringVar(&o.OSImage, "os-image", "", "sidecar mode: the OS image tool-sidecar-agent starts from (default $"+OSImageEnv+", the base images' OS image)")
	f.StringVar(&o.Mode, "mode", pipeline.ModeSandbox, "sandbox (agent and project in one container) or sidecar (two containers sharing the source tree)")
	f.StringSliceVar(&o.Plugins, "plugin", nil, "plugins to enable (SSE_PLUGINS)")
	f.StringVar(&o.Model, "model", "", "model name (default $SSE_MODEL_NAME, else none)")
	f.StringVar(&o.ModelFile, "model-file", "", "model file (base_url, api_key_env, flavour, prices) for the gateway (default <models-dir>/<model>.yaml when it exists)")
	f.StringVar(&o.ModelsDir, "models-dir", "", "folder of model files (default <home>/models)")
	f.IntVar(&o.Limits.MaxRequests, "max-requests", 0, "model requests the run may make (default no limit)")
	f.Int64Var(&o.Limits.MaxTokens, "max-tokens", 0, "tokens, input plus output, the run may use (default no limit)")
	f.Float64Var(&o.Limits.MaxCost, "max-cost", 0, "US dollars the run may spend, priced by the model file (default no limit)")
	options.AddLimitFlags(f, &o.Resources)
	f.StringVar(&o.RunsDir, "runs-dir", "", "where runs/<run-id>/ goes (default ./runs)")
	f.BoolVar(&o.JSON, "json", false, "print the run's summary as JSON on stdout (the container's output goes to stderr)")
	f.StringVar(&o.Runtime, "runtime", "", "runtime image (default $SSEBENCH_RUNTIME_IMAGE, else REGISTRY/runtime:VERSION)")
	addBackendFlags(cmd, &o.backendOptions)
	return cmd
}

func runRun(cmd *cobra.Command, g *options.Global, o *runOptions) error {
	// Refused before anything is opened or built.
	req, err := o.request(cmd, g)
	if err != nil {
		return err
	}
	e, done, err := newEnv(g, cmd, o.Runtime)
	if err != nil {
		return err
	}
	defer done()
	if err := pipeline.CheckNames(e.Home, []string{req.Agent}, []string{req.Task}, req.Dataset, req.Catalog); err != nil {
		return err
	}
	if err := e.Check(cmd.Context(), req); err != nil {
		return err
	}
	if err := checkHost(cmd, g, e, "run", "the run", o.Backend, o.Runtime, req, []string{o.Task}, []string{o.Agent}); err != nil {
		return err
	}
	cluster, err := o.cluster(cmd.Context(), g, cmd, req.Prebuilt)
	if err != nil {
		return err
	}
	if cluster != nil {
		// Not a nil *kubeCluster in the interface: Run would take it for
		// a cluster.
		req.Cluster = cluster
	}
	res, err := e.Run(cmd.Context(), req)
	if res == nil {
		return err
	}
	return printRun(cmd, o, res, err)
}

// request is the run the flags ask for, checked as far as it can be
// before anything is opened.
func (o *runOptions) request(cmd *cobra.Command, g *options.Global) (pipeline.RunRequest, error) {
	if o.Task != "" {
		if err := task.CheckID("--task", o.Task); err != nil {
			return pipeline.RunRequest{}, err
		}
	}
	catalogRef := o.Catalog
	if catalogRef == "" && o.Local == "" {
		catalogRef = g.Lookup(catalog.CatalogEnv)
	}
	req := pipeline.RunRequest{
		Task: o.Task, Agent: o.Agent, Dataset: o.Local, Catalog: catalogRef,
		Build: o.Build, Prebuilt: o.Prebuilt || g.Lookup("SSEBENCH_PREBUILT") == "1", ViaRegistry: cmd.Flag("registry").Changed,
		ToolLayer: o.ToolLayer, Mode: o.Mode, OSImage: firstSet(o.OSImage, g.Lookup(OSImageEnv)), Plugins: o.Plugins,
		Timeout: o.Timeout, Difficulty: o.Difficulty,
		APIKey: g.Lookup("SSE_API_KEY"), BaseURL: g.Lookup("SSE_BASE_URL"), Model: o.Model,
		KeepAlive: o.KeepAlive, Keep: o.Keep, KeepImages: o.KeepImages.Keep, ImageBudget: o.KeepImages.Budget, RunsDir: o.RunsDir,
		ContainerdAddr: g.ContainerdAddr, AllowNoSandbox: o.AllowNoSandbox,
		ModelFile: o.ModelFile, ModelsDir: o.ModelsDir, Limits: o.Limits, Lookup: g.Lookup,
		Resources: &o.Resources,
		Output:    cmd.OutOrStdout(),
	}
	if req.Model == "" {
		req.Model = g.Lookup("SSE_MODEL_NAME")
	}
	if o.JSON {
		req.Output = cmd.ErrOrStderr()
	}
	if err := req.Validate(); err != nil {
		return req, err
	}
	network, err := runner.ParseNetwork(o.Egress)
	if err != nil {
		return req, fmt.Errorf("--egress: %w", err)
	}
	req.Network = network
	return req, nil
}

// printRun prints the run's end on stderr (and, with --json, its entry
// on stdout) and turns its grade into the exit status; err is Run's.
func printRun(cmd *cobra.Command, o *runOptions, res *pipeline.RunResult, err error) error {
	run, lerr := results.Load(res.Dir)
	if lerr != nil {
		return errors.Join(err, lerr)
	}
	run.WriteEnd(cmd.ErrOrStderr(), res.Summary)
	if o.JSON {
		if jerr := writeJSONTo(cmd.OutOrStdout(), run.Entry()); jerr != nil {
			return jerr
		}
	}
	if err != nil {
		return err
	}
	if err := run.UpstreamError(); err != nil {
		// Not the agent's grade: the model never answered.
		return err
	}
	return runExit(cmd, run)
}

// runExit turns a run's grade into the exit status.
func runExit(cmd *cobra.Command, run *results.Run) error {
	code := 0
	switch {
	case !run.Graded():
		code = ExitNotGraded
	case !run.Passed():
		code = ExitFailed
	}
	if code == 0 {
		return nil
	}
	cmd.SilenceErrors = true
	return &ExitError{Code: code}
}

func writeJSONTo(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func firstSet(s ...string) string {
	for _, v := range s {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}
