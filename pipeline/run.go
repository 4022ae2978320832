package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/agent"
	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/results"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// Paths inside the container (SPEC.md section 10).
const (
	ResultsPath = contract.Results
	ArchivePath = contract.Archive
)

// PatchPath is where a run with RunRequest.Patch has the patch, read-only.
const PatchPath = "/prediction/patch.diff"

// Modes of a run (SPEC.md sections 4 and 7).
const (
	// ModeSandbox runs the agent in the tool image of its task, with the
	// daemon beside it: one container.
	ModeSandbox = "sandbox"
	// ModeSidecar runs the project (tool-sidecar/<task>) and the agent
	// (agent-<name>/sidecar) in two containers that share the source tree
	// and /run/ssebench.
	ModeSidecar = "sidecar"
)

// RunRequest is one `ssebench run`.
type RunRequest struct {
	// Task and Agent (a folder under agents/) are required.
	Task, Agent string
	// Dataset is the dataset folder holding the task (--local). Catalog
	// is a catalog folder (manifest.json, images.lock.json) whose case
	// images are pulled. At most one is set; neither means the dataset
	// under the home that has the task.
	Dataset, Catalog string
	// Build builds the case image from the task folder even when a
	// catalog has it.
	Build bool
	// Prebuilt pulls the agent image and runs it, building nothing.
	Prebuilt bool
	// ViaRegistry pushes the images to REGISTRY and has containerd pull
	// them from there (--registry).
	ViaRegistry bool
	// ToolLayer is the tool layer; "" means sandbox.
	ToolLayer string
	// Mode is sandbox ("" means it too) or sidecar.
	Mode string
	// OSImage is the OS image tool-sidecar-agent starts from (sidecar
	// mode), required there unless the images are prebuilt; the CLI
	// fills it from --os-image or SSEBENCH_OS_IMAGE.
	OSImage string
	// Plugins are the selected plugins (SSE_PLUGINS).
	Plugins []string
	// Timeout (TIMEOUT, seconds), Difficulty (SSE_DIFFICULTY 0–4) and the
	// model settings reach the container's environment.
	Timeout    int
	Difficulty int
	APIKey     string
	BaseURL    string
	Model      string
	KeepAlive  bool
	// AllowNoSandbox lets the grade's scripts run without their sandbox
	// where the machine refuses it (--allow-no-sandbox,
	// contract.EnvAllowNoSandbox); without it such a run is not graded.
	AllowNoSandbox bool
	// ModelFile is a model file (models/<name>.yaml format) naming the
	// upstream; "" looks for <Model>.yaml in ModelsDir, else the upstream
	// is BaseURL (SSE_BASE_URL) with APIKey. ModelsDir "" means
	// <home>/models.
	ModelFile, ModelsDir string
	// Limits bound the run's model use (--max-requests, --max-tokens,
	// --max-cost).
	Limits gateway.Limits
	// Ledger is the budget of the evaluation the run is part of, shared
	// with its other runs' gateways (eval --budget); nil: none.
	Ledger *gateway.Ledger
	// Lookup reads the host's settings (the environment, then .env): the
	// key variable a model file names. nil means os.Getenv.
	Lookup func(string) string
	// Network is the container's network: restricted (loopback only) or
	// open.
	Network runner.Network
	// Resources caps what the run's containers may use (memory, processes,
	// CPU); nil means contract.DefaultLimits, a zero field no limit.
	Resources *contract.Limits
	// Keep leaves the container and its snapshot in containerd.
	Keep bool
	// KeepImages leaves the images the run put into containerd there
	// (--keep-images), so that the next run of them starts without
	// importing and unpacking: under ImageBudget, or, when that is 0,
	// labelled kept. Without it they are removed from containerd (not
	// from the store) when the run ends, unless a later run of the same
	// invocation needs them (WithImagesNeeded).
	KeepImages bool
	// ImageBudget bounds, with KeepImages, what the images ssebench
	// imported take in containerd (runner.RunSpec.ImageBudget): past it,
	// the least recently used go.
	ImageBudget int64
	// RunsDir is where runs/<run-id>/ goes; "" means ./runs.
	RunsDir string
	// ContainerdAddr is containerd's socket; "" means the default.
	ContainerdAddr string
	// Output receives the container's output (stdout and stderr).
	Output io.Writer
	// Images, when set, are the run's images, built before (see
	// BuildTask and BuildAgent): Run builds nothing. Evaluations build
	// each image once for many runs this way.
	Images *RunImages
	// RunID names the run (and its folder); "" means a new one.
	RunID string
	// Attempt is the attempt number of the run within an evaluation (1,
	// 2, ...); 0 outside one.
	Attempt int
	// Labels are extra container labels.
	Labels map[string]string
	// Cluster, when set, runs the container there (a Kubernetes Job)
	// instead of on this machine's containerd: the image must be in a
	// registry (ViaRegistry or Prebuilt), and is run pinned by digest.
	Cluster Cluster
	// Patch, when set, is a patch file on the host mounted read-only at
	// PatchPath for the agent to apply: `ssebench grade` grades a
	// prediction's patch as the change of an agent (agents/prediction)
	// that applies it as model, so the patch reaches nothing the agent
	// could not.
	Patch string
	// AgentName, when set, is the name the run's results give its agent
	// in place of Agent (summary.json, result.json, the run id): the
	// predictor's name of a graded prediction. Agent still names the
	// folder the image is built from.
	AgentName string
	// Entrypoint, when set, replaces the image's ENTRYPOINT for this run
	// only. Agent images may not change it (the runtime's entrypoint runs
	// the agent as model); tests use it to probe the container as root
	// around the real entrypoint. The CLI never sets it.
	Entrypoint []string
}

// RunImages are the images of one run.
type RunImages struct {
	// Case is the case image reference, CaseDigest its manifest digest
	// ("" when unknown).
	Case, CaseDigest string
	// Tool and Agent are name@digest.
	Tool, Agent string
	// Patch is the task's files.patch, relative to /ssebench: what a
	// reference run mounts at ReferencePatchPath.
	Patch string
	// AgentRuntime is tool-sidecar-agent as name@digest, in sidecar mode.
	AgentRuntime string
	// SourceDir is the task's SOURCE_DIR, which sidecar mode shares
	// between its containers.
	SourceDir string
	// OpenCode is the OpenCode version the agent's side carries ("" =
	// none): summary.json's opencode.
	OpenCode string
}

// TaskImages are a task's case and tool images, which every agent's image
// of the task starts from.
type TaskImages struct {
	Case, CaseDigest string
	Tool             *Built
	// Patch is the task's files.patch, relative to /ssebench.
	Patch string
	// SourceDir is the task's SOURCE_DIR.
	SourceDir string
	// ToolTook is how long the tool image took, of the whole.
	ToolTook time.Duration
}

// RunResult is what Run did.
type RunResult struct {
	// Dir is runs/<run-id>/.
	Dir     string
	Summary *results.Summary
}

// Validate checks the combinations SPEC.md section 10 forbids.
func (r *RunRequest) Validate() error {
	if err := r.resources().Validate(); err != nil {
		return err
	}
	switch {
	case r.Task == "":
		return errors.New("--task is required: pass a task id, e.g. --task kvconf-12-afb9ee1")
	case r.Agent == "":
		return errors.New("--agent is required: pass an agent folder under agents/, e.g. --agent dummy")
	case r.Dataset != "" && r.Catalog != "":
		return errors.New("--local and --catalog name two sources of the task: pass one")
	case r.Mode != "" && r.Mode != ModeSandbox && r.Mode != ModeSidecar:
		return fmt.Errorf("unknown --mode %q: use %s or %s", r.Mode, ModeSandbox, ModeSidecar)
	case r.Mode == ModeSidecar && r.ToolLayer != "":
		return errors.New("--tool-layer does not apply in sidecar mode: the sidecar images replace the tool layer; drop --tool-layer or --mode sidecar")
	case r.Prebuilt && (r.ToolLayer != "" || len(r.Plugins) > 0 || r.Build):
		return errors.New("--prebuilt runs the published agent image as it is: it cannot be combined with --tool-layer, --plugin or --build")
	case r.Difficulty < 0 || r.Difficulty > 4:
		return fmt.Errorf("--difficulty %d is not 0–4", r.Difficulty)
	case r.Timeout < 0:
		return fmt.Errorf("--timeout %d is negative", r.Timeout)
	case r.Mode == ModeSidecar && r.Cluster != nil:
		return errors.New("--mode sidecar runs two containers in containerd: it cannot run with --backend kubernetes")
	case r.Patch != "" && (r.Cluster != nil || r.Mode == ModeSidecar):
		// The patch is a file of this machine, mounted into one container.
		return errors.New("a prediction's patch is graded in one container on this machine: not with --backend kubernetes or --mode sidecar")
	}
	return nil
}

// validate checks req, its tool layer against e's registry included.
func (e *Env) validate(req *RunRequest) error {
	if err := req.Validate(); err != nil {
		return err
	}
	if req.Mode == ModeSidecar {
		return nil
	}
	_, err := e.toolLayers().Lookup(req.ToolLayer)
	return err
}

// Run builds what the run needs (case with BuildKit, tool and agent
// assembled), then runs the agent image in containerd (on req.Cluster
// when set) with the environment, mounts and labels of SPEC.md section 10,
// and writes runs/<run-id>/summary.json. The container's exit status is in
// the summary; a non-zero status is not an error.
//
// Each step is its own function, in the order they run: newRun,
// resolveImages, prepareReferencePatch, makeRunFolder, startRunGateway,
// executor, containerSpec, runContainers and collectResults.
func (e *Env) Run(ctx context.Context, req RunRequest) (*RunResult, error) {
	r, err := e.newRun(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := e.resolveImages(ctx, r); err != nil {
		return nil, err
	}
	cleanup, err := e.prepareReferencePatch(ctx, r)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if r.dir, err = makeRunFolder(r.req.RunsDir, r.runID); err != nil {
		return nil, err
	}
	gw, err := e.startRunGateway(r)
	if err != nil {
		return nil, err
	}
	defer gw.finish()
	ex, err := e.executor(ctx, r.req, r.platform)
	if err != nil {
		return nil, err
	}
	defer ex.Close()
	spec, err := e.containerSpec(ctx, r, gw)
	if err != nil {
		return nil, err
	}
	res, err := e.runContainers(ctx, ex, r, spec)
	if res == nil {
		return nil, err
	}
	// A run that ended with an error still leaves its folder complete:
	// the summary is written, and the run's own error comes first.
	s, cerr := e.collectResults(r, res, gw)
	if err == nil {
		err = cerr
	}
	return &RunResult{Dir: r.dir, Summary: s}, err
}

// runState is one run as Run's steps learn it, each filling in its part.
type runState struct {
	// req is the request, defaults applied; the gateway's step changes
	// its model settings to the ones the container gets.
	req     RunRequest
	started time.Time
	// timings and images become summary.json's timings_seconds and
	// images.
	timings map[string]float64
	images  map[string]string

	// agentName is the agent image's name. In sidecar mode, toolName is
	// the task container's image (tool-sidecar/<task>).
	agentName, toolName string
	sidecar             bool
	reference           bool // the agent is ReferenceAgent
	openCode            bool // the agent drives OpenCode (agent.yaml)

	// datasetDir is the task's dataset folder ("" for a catalog's task);
	// platform and plat the platform the run runs as.
	datasetDir, platform string
	plat                 *v1.Platform

	// ri are the run's images (nil: prebuilt, pulled as they are); srcDir
	// the task's SOURCE_DIR, which sidecar mode needs.
	ri     *RunImages
	srcDir string
	// refPatch is the reference patch's file on the host, for a reference
	// run.
	refPatch string

	// runID names the run; dir is its folder, runs/<run-id>/.
	runID, dir string
	// layersUnpacked is summary.json's layers_unpacked: both containers'.
	layersUnpacked int
}

// lap records how long step k took since since.
func (r *runState) lap(k string, since time.Time) { r.timings[k] = time.Since(since).Seconds() }

// newRun checks req, applies its defaults and finds what the run is: the
// agent, its images' names, the platform and the run id.
func (e *Env) newRun(ctx context.Context, req RunRequest) (*runState, error) {
	if err := e.validate(&req); err != nil {
		return nil, err
	}
	if req.ToolLayer == "" && req.Mode != ModeSidecar {
		req.ToolLayer = DefaultToolLayer
	}
	r := &runState{req: req, started: time.Now(), timings: map[string]float64{}, images: map[string]string{}}
	a, err := agent.Load(e.Home, req.Agent)
	if err != nil {
		return nil, err
	}
	r.reference = a.Name == ReferenceAgent
	r.openCode = a.OpenCode
	r.agentName = e.Names.Agent(a.Name, req.Task, a.Version)
	r.sidecar = req.Mode == ModeSidecar
	if r.sidecar {
		r.agentName, r.toolName = e.Names.SidecarAgent(a.Name, a.Version), e.Names.SidecarTask(req.Task)
	}
	if r.datasetDir, r.platform, r.plat, err = e.runPlatform(ctx, req); err != nil {
		return nil, err
	}
	r.runID = req.RunID
	if r.runID == "" {
		part := req.Agent
		if req.AgentName != "" {
			part = runIDPart(req.AgentName)
		}
		r.runID = newRunID(req.Task, part, r.started)
	}
	return r, nil
}

// startRunGateway starts the model gateway of a restricted run, which
// reaches its model through it only and never gets the real key; it
// returns nil when the run has none. An open run has none, and the limits
// only a gateway enforces are refused.
func (e *Env) startRunGateway(r *runState) (*runGateway, error) {
	if r.req.Network == runner.NetworkOpen {
		if r.req.Limits != (gateway.Limits{}) || r.req.ModelFile != "" || r.req.Ledger != nil {
			return nil, errOpenGateway
		}
		return nil, e.checkOpenNetwork(&r.req)
	}
	gw, err := e.startGateway(&r.req, r.dir)
	if err != nil {
		return nil, err
	}
	if gw == nil {
		r.req.APIKey = ""
	}
	return gw, nil
}

// containerSpec is the agent container's spec (SPEC.md section 10): its
// image, environment, the run folder's mounts, labels and, when the run
// has them, the gateway and the reference patch. On a cluster the image is
// the registry's, pinned by digest.
func (e *Env) containerSpec(ctx context.Context, r *runState, gw *runGateway) (runner.RunSpec, error) {
	req := &r.req
	spec := runner.RunSpec{
		Image:      r.agentName,
		Entrypoint: req.Entrypoint,
		// The entrypoint starts as root and drops to model and
		// sse-runner itself; a USER in the agent's (or the case's)
		// config must not make it, and so the daemon, someone else.
		User:    "0:0",
		Pull:    req.ViaRegistry,
		ID:      "ssebench-" + r.runID,
		Env:     req.env(),
		Network: req.Network,
		Limits:  req.resources(),
		Keep:    req.Keep,
		Output:  req.Output,
		// Removed when the run is over unless kept or needed later.
		RemoveImage: !req.KeepImages,
		ImageBudget: req.ImageBudget,
		ImageNeeded: ImagesNeeded(ctx),
		Mounts: []runner.Mount{
			{Source: r.dir, Target: ResultsPath},
			{Source: filepath.Join(r.dir, "archive"), Target: ArchivePath},
		},
		Labels: map[string]string{
			"ssebench.task-id": req.Task,
			"ssebench.agent":   req.agentName(),
			"ssebench.run-id":  r.runID,
			"ssebench.model":   modelName(req.Model),
			"ssebench.results": r.dir,
		},
	}
	if gw != nil {
		if gw.remote != nil {
			img, err := e.gatewayImage(ctx, *r.plat)
			if err != nil {
				return spec, err
			}
			gw.remote.Image = img
			r.images["gateway"] = img
		}
		gw.apply(&spec, req)
	}
	// The OpenCode server the image carries starts for an agent that
	// drives it, and for no other (a second or two of every run).
	openCode := "0"
	if r.openCode {
		openCode = "1"
	}
	spec.Env = append(spec.Env, contract.EnvOpenCode+"="+openCode)
	for k, v := range req.Labels {
		spec.Labels[k] = v
	}
	// An evaluation's label (ssebench.eval) goes on the images the run
	// imports too: resuming a killed evaluation removes them.
	spec.ImageLabels = req.Labels
	delete(spec.Labels, ReferenceRunLabel)
	if req.Patch != "" {
		spec.Mounts = append(spec.Mounts, runner.Mount{Source: req.Patch, Target: PatchPath, ReadOnly: true})
	}
	if r.refPatch != "" {
		spec.Mounts = append(spec.Mounts, runner.Mount{Source: r.refPatch, Target: ReferencePatchPath, ReadOnly: true})
		spec.Labels[ReferenceRunLabel] = "true"
	}
	if req.Prebuilt {
		spec.Pull = true
	}
	if req.Cluster != nil {
		img, err := e.clusterImage(ctx, *req, r.agentName, r.ri)
		if err != nil {
			return spec, err
		}
		spec.Image, spec.Pull = img, true
		r.images["agent"] = img
	}
	return spec, nil
}

// runContainers runs the run's container on ex (sidecar mode: its two
// containers) and records how long it took and which images ran. A nil
// result means nothing ran; a result with an error is a run that went
// wrong but has a folder to keep.
func (e *Env) runContainers(ctx context.Context, ex Executor, r *runState, spec runner.RunSpec) (*runner.Result, error) {
	t := time.Now()
	var res *runner.Result
	var err error
	res, err = e.runPair(ctx, ex, r, spec)
	if res == nil {
		return nil, err
	}
	r.lap("run", t)
	return res, err
}

// runPair runs the run's two containers (SPEC.md section 17.1): the task
// container and the agent container, through runSidecar on a backend
// that declares it can (SidecarRunner). The result is the task
// container's, stopped when either container was; summary.json's startup
// is both containers'.
func (e *Env) runPair(ctx context.Context, ex Executor, r *runState, spec runner.RunSpec) (*runner.Result, error) {
	var res, agentRes *runner.Result
	var err error
	switch rn := ex.(type) {
	case SidecarRunner:
		res, agentRes, err = e.runSidecar(ctx, rn, r.req, spec, r.toolName, r.srcDir, !r.sidecar)
	case PairRunner:
		if r.sidecar {
			return nil, errors.New("--mode sidecar runs its two containers in containerd: it cannot run with --backend kubernetes (sandbox mode runs both in one pod)")
		}
		res, agentRes, err = e.runPod(ctx, rn, r.req, spec, r.toolName, r.srcDir)
	default:
		return nil, errors.New("this backend cannot run a run's two containers (the task's and the agent's)")
	}
	if res != nil && agentRes != nil {
		if agentRes.Image != nil {
			r.images["agent"] = pinned(r.agentName, agentRes.Image.Target.Digest.String())
		}
		res.Stopped = res.Stopped || agentRes.Stopped
		if res.Killed == "" {
			res.Killed = agentRes.Killed
		}
	}
	for _, x := range []*runner.Result{res, agentRes} {
		if x != nil && x.Leftover != nil {
			e.logf("warning: %v", x.Leftover)
		}
	}
	if res != nil {
		r.recordStartup(res, agentRes)
		if res.Image != nil {
			r.images["tool"] = pinned(r.toolName, res.Image.Target.Digest.String())
		}
	}
	return res, err
}

// pinned is name@digest, or name when it is pinned already.
func pinned(name, digest string) string {
	if strings.Contains(name, "@") {
		return name
	}
	return name + "@" + digest
}

// DefaultTimeout is the agent's time limit, in seconds, when the request
// sets none.
const DefaultTimeout = 3600

// timeout is the agent's time limit in seconds: what summary.json records
// and the container gets.
// resources is the run's limits: Resources, or the defaults.
func (r *RunRequest) resources() contract.Limits {
	if r.Resources == nil {
		return contract.DefaultLimits
	}
	return *r.Resources
}

func (r *RunRequest) timeout() int {
	if r.Timeout == 0 {
		return DefaultTimeout
	}
	return r.Timeout
}

// env is the container's environment (SPEC.md section 10).
func (r *RunRequest) env() []string {
	timeout := r.timeout()
	keep := "0"
	if r.KeepAlive {
		keep = "1"
	}
	env := []string{
		"SSE_ARCHIVE=" + ArchivePath,
		"SSE_RESULTS=" + ResultsPath,
		"SSE_DIFFICULTY=" + strconv.Itoa(r.Difficulty),
		"TIMEOUT=" + strconv.Itoa(timeout),
		"SSE_API_KEY=" + r.APIKey,
		"SSE_BASE_URL=" + r.BaseURL,
		"SSE_MODEL_NAME=" + modelName(r.Model),
		"SSE_KEEP_ALIVE=" + keep,
		"SSE_TASK_ID=" + r.Task,
	}
	if len(r.Plugins) > 0 {
		env = append(env, "SSE_PLUGINS="+strings.Join(r.Plugins, ","))
	}
	if r.AllowNoSandbox {
		env = append(env, contract.EnvAllowNoSandbox+"=1")
	}
	return env
}

// agentName is the agent's name in the run's results: AgentName, else
// the folder.
func (r *RunRequest) agentName() string { return firstNonEmpty(r.AgentName, r.Agent) }

// runIDPart is name as a part of a run id (and so of a folder name):
// lowercase letters, digits, '.', '_' and '-', others replaced by '-', at
// most 48 bytes. A predictor's name ("org/model") is not a safe path.
func runIDPart(name string) string {
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	s := strings.Trim(string(b), ".-")
	if len(s) > 48 {
		s = s[:48]
	}
	if s == "" {
		s = "agent"
	}
	return s
}

func modelName(m string) string {
	if strings.TrimSpace(m) == "" {
		return "none"
	}
	return m
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// imagesNeededKey is the context key of WithImagesNeeded.
type imagesNeededKey struct{}

// WithImagesNeeded returns a context whose runs ask needed, as each ends
// as the last user of an image it put into containerd, whether a later run
// of the same invocation will use the image: true keeps it for that run.
// An evaluation passes the runs of a plan this way, so that an agent image
// is imported once for all its attempts and removed after the last.
func WithImagesNeeded(ctx context.Context, needed func() bool) context.Context {
	return context.WithValue(ctx, imagesNeededKey{}, needed)
}

// ImagesNeeded is the function of WithImagesNeeded on ctx, or nil.
func ImagesNeeded(ctx context.Context) func() bool {
	f, _ := ctx.Value(imagesNeededKey{}).(func() bool)
	return f
}
