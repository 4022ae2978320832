package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/agent"
	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/images/casebuild"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/results"
	"github.com/42-b3yond-6ug/ssebench/runner"
	"github.com/42-b3yond-6ug/ssebench/sserun"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// Paths inside the container (SPEC.md section 10).
const (
	ResultsPath = contract.Results
	ArchivePath = contract.Archive
)

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
	// mode); "" means SSEBENCH_OS_IMAGE.
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
	// ModelFile is a model file (models/<name>.yaml format) naming the
	// upstream; "" looks for <Model>.yaml in ModelsDir, else the upstream
	// is BaseURL (SSE_BASE_URL) with APIKey. ModelsDir "" means
	// <home>/models.
	ModelFile, ModelsDir string
	// Limits bound the run's model use (--max-requests, --max-tokens,
	// --max-cost).
	Limits gateway.Limits
	// Lookup reads the host's settings (the environment, then .env): the
	// key variable a model file names. nil means os.Getenv.
	Lookup func(string) string
	// Network is the container's network: restricted (loopback only) or
	// open.
	Network runner.Network
	// Keep leaves the container and its snapshot in containerd.
	Keep bool
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
// assembled), then runs the agent image in containerd with the environment,
// mounts and labels of SPEC.md section 10, and writes
// runs/<run-id>/summary.json. The container's exit status is in the
// summary; a non-zero status is not an error.
func (e *Env) Run(ctx context.Context, req RunRequest) (_ *RunResult, retErr error) {
	if err := e.validate(&req); err != nil {
		return nil, err
	}
	if req.ToolLayer == "" && req.Mode != ModeSidecar {
		req.ToolLayer = DefaultToolLayer
	}
	started := time.Now()
	timings := map[string]float64{}
	lap := func(k string, since time.Time) { timings[k] = time.Since(since).Seconds() }

	a, err := agent.Load(e.Home, req.Agent)
	if err != nil {
		return nil, err
	}
	agentName := e.Names.Agent(a.Name, req.Task, a.Version)
	sidecar := req.Mode == ModeSidecar
	toolName := ""
	if sidecar {
		agentName, toolName = e.Names.SidecarAgent(a.Name, a.Version), e.Names.SidecarTask(req.Task)
	}

	datasetDir, platform, plat, err := e.runPlatform(ctx, req)
	if err != nil {
		return nil, err
	}

	images := map[string]string{}
	ri := req.Images
	srcDir := ""
	if ri != nil {
		srcDir = ri.SourceDir
	}
	if ri == nil && !req.Prebuilt {
		t := time.Now()
		ti, err := e.taskImages(ctx, req, datasetDir, plat)
		if err != nil {
			return nil, err
		}
		lap("case", t.Add(ti.ToolTook))
		timings["tool"] = ti.ToolTook.Seconds()
		t = time.Now()
		if ri, err = e.agentImage(ctx, req, ti, plat); err != nil {
			return nil, err
		}
		lap("agent", t)
		srcDir = ri.SourceDir
	}
	if sidecar && srcDir == "" {
		if srcDir, err = e.taskSource(req, datasetDir); err != nil {
			return nil, err
		}
	}
	if ri != nil {
		images["case"] = ri.Case
		images["tool"] = ri.Tool
		images["agent"] = ri.Agent
		if ri.AgentRuntime != "" {
			images["agent_runtime"] = ri.AgentRuntime
		}
	}

	// A reference run, and no other, gets the task's reference patch.
	var refPatch string
	if a.Name == ReferenceAgent {
		if ri == nil {
			return nil, errors.New("the reference agent needs the case image to copy the reference patch from: it cannot run with --prebuilt")
		}
		p, cleanup, err := e.referencePatch(ctx, ri.Case, ri.Patch, plat)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		refPatch = p
	}

	// The run's folder: results, and archive/ inside it.
	runID := req.RunID
	if runID == "" {
		runID = newRunID(req.Task, req.Agent, started)
	}
	runsDir := firstNonEmpty(req.RunsDir, "runs")
	dir, err := filepath.Abs(filepath.Join(runsDir, runID))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "archive"), 0o755); err != nil {
		return nil, fmt.Errorf("creating the run folder: %w", err)
	}

	// A restricted run reaches its model through the gateway only, and
	// never gets the real key.
	var gw *runGateway
	if req.Network != runner.NetworkOpen {
		if gw, err = e.startGateway(&req, dir); err != nil {
			return nil, err
		}
		defer gw.finish()
		if gw == nil {
			req.APIKey = ""
		}
	} else if req.Limits != (gateway.Limits{}) || req.ModelFile != "" {
		return nil, errors.New("--max-requests, --max-tokens, --max-cost and --model-file work through the model gateway of a restricted run: drop --egress open")
	}

	ex, err := e.executor(ctx, req, platform)
	if err != nil {
		return nil, err
	}
	defer ex.Close()

	spec := runner.RunSpec{
		Image:      agentName,
		Entrypoint: req.Entrypoint,
		// The entrypoint starts as root and drops to model and
		// sse-runner itself; a USER in the agent's (or the case's)
		// config must not make it, and so the daemon, someone else.
		User:    "0:0",
		Pull:    req.ViaRegistry,
		ID:      "ssebench-" + runID,
		Env:     req.env(),
		Network: req.Network,
		Keep:    req.Keep,
		Output:  req.Output,
		Mounts: []runner.Mount{
			{Source: dir, Target: ResultsPath},
			{Source: filepath.Join(dir, "archive"), Target: ArchivePath},
		},
		Labels: map[string]string{
			"ssebench.task-id": req.Task,
			"ssebench.agent":   req.Agent,
			"ssebench.run-id":  runID,
			"ssebench.model":   modelName(req.Model),
			"ssebench.results": dir,
		},
	}
	if gw != nil {
		if gw.remote != nil {
			if gw.remote.Image, err = e.gatewayImage(ctx, *plat); err != nil {
				return nil, err
			}
			images["gateway"] = gw.remote.Image
		}
		gw.apply(&spec, &req)
	}
	for k, v := range req.Labels {
		spec.Labels[k] = v
	}
	delete(spec.Labels, ReferenceRunLabel)
	if refPatch != "" {
		spec.Mounts = append(spec.Mounts, runner.Mount{Source: refPatch, Target: ReferencePatchPath, ReadOnly: true})
		spec.Labels[ReferenceRunLabel] = "true"
	}
	if req.Prebuilt {
		spec.Pull = true
	}
	if req.Cluster != nil {
		if spec.Image, err = e.clusterImage(ctx, req, agentName, ri); err != nil {
			return nil, err
		}
		spec.Pull = true
		images["agent"] = spec.Image
	}
	t := time.Now()
	var res *runner.Result
	if sidecar {
		// Only a backend that can share one container's files with
		// another runs sidecar mode.
		rn, ok := ex.(SidecarRunner)
		if !ok {
			return nil, errors.New("--mode sidecar runs two containers in containerd: it cannot run with --backend kubernetes")
		}
		var agentRes *runner.Result
		res, agentRes, err = e.runSidecar(ctx, rn, req, spec, toolName, srcDir)
		if res != nil && agentRes != nil && agentRes.Image != nil {
			images["agent"] = agentName + "@" + agentRes.Image.Target.Digest.String()
			res.Stopped = res.Stopped || agentRes.Stopped
		}
		if res != nil && res.Image != nil {
			images["tool"] = toolName + "@" + res.Image.Target.Digest.String()
		}
	} else {
		res, err = ex.Run(ctx, spec)
	}
	if err != nil && req.Prebuilt && req.Cluster == nil && res == nil && !sidecar && !errors.Is(err, context.Canceled) {
		// The registry does not have it (or cannot be reached): a copy on
		// this machine will do.
		e.logf("warning: pulling the prebuilt image %s failed (%v); using the local copy", agentName, err)
		spec.Pull = false
		res, err = ex.Run(ctx, spec)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("The prebuilt image %s is not in the registry or on this machine", agentName)
		}
	}
	if res == nil {
		return nil, err
	}
	lap("run", t)
	timings["startup"] = res.StartupTime.Seconds()
	if res.Image != nil && !sidecar {
		images["agent"] = agentName + "@" + res.Image.Target.Digest.String()
	}

	s := &results.Summary{
		RunID: runID, Task: req.Task, Agent: req.Agent, Platform: platform, Images: images,
		Timings: timings, ExitCode: res.ExitCode, Results: dir, Started: started.UTC(), Finished: time.Now().UTC(),
	}
	if res.Image != nil {
		s.LayersUnpacked = res.Image.Stats.LayersUnpacked
	}
	if s.ModelUsage = gw.finish(); s.ModelUsage != nil {
		if merr := mergeModelUsage(dir, s.ModelUsage); merr != nil && err == nil {
			err = merr
		}
	}
	s.Config.ToolLayer = req.ToolLayer
	s.Config.Mode = ModeSandbox
	if sidecar {
		s.Config.Mode = ModeSidecar
	}
	if req.Cluster != nil {
		s.Config.Backend = BackendKubernetes
	}
	s.Config.Prebuilt = req.Prebuilt
	s.Config.Network = string(firstNonEmpty(string(req.Network), string(runner.NetworkRestricted)))
	s.Config.Timeout = req.timeout()
	s.Config.Difficulty = req.Difficulty
	s.Config.Model = modelName(req.Model)
	s.Config.Plugins = req.Plugins
	s.Attempt = req.Attempt
	switch {
	case res.Stopped:
		s.Status = "stopped"
	case res.ExitCode == 0:
		s.Status = "ok"
	case res.ExitCode == 124:
		s.Status = "timeout"
	default:
		s.Status = "failed"
	}
	// result.json is the container's; the host adds what only it knows.
	if werr := annotateResult(dir, req, runID, ri); werr != nil && err == nil {
		err = werr
	}
	timings["total"] = time.Since(started).Seconds()
	if werr := writeJSON(filepath.Join(dir, "summary.json"), s); werr != nil && err == nil {
		err = werr
	}
	return &RunResult{Dir: dir, Summary: s}, err
}

// runPlatform finds the dataset folder of the run's task (when not a
// catalog's) and the platform it runs as: the task's arches against the
// host's.
func (e *Env) runPlatform(ctx context.Context, req RunRequest) (datasetDir, platform string, plat *v1.Platform, err error) {
	datasetDir = req.Dataset
	if datasetDir == "" && req.Catalog == "" {
		if datasetDir = task.FindDataset(e.Home, req.Task); datasetDir == "" {
			return "", "", nil, fmt.Errorf("task %q is in no dataset under %s: pass --local DIR or --catalog PATH", req.Task, filepath.Join(e.Home, "datasets"))
		}
	}
	arches := task.DefaultArches()
	switch {
	case datasetDir != "":
		if arches, err = task.TaskArches(datasetDir, req.Task); err != nil {
			return "", "", nil, err
		}
	case req.Catalog != "":
		c, err := e.Catalog(ctx, req.Catalog)
		if err != nil {
			return "", "", nil, err
		}
		arches = c.Manifest.Arches(req.Task)
	}
	arch, emulated := task.RunArch(arches, runtime.GOARCH)
	platform = task.Platform(arch)
	if emulated {
		e.logf("warning: %s runs as %s, which this %s machine emulates", req.Task, platform, runtime.GOARCH)
	}
	plat, _ = v1.ParsePlatform(platform)
	return datasetDir, platform, plat, nil
}

// BuildTask builds the case image (or finds it in the catalog) and the tool
// image of req's task: what every agent's image of the task starts from.
func (e *Env) BuildTask(ctx context.Context, req RunRequest) (*TaskImages, error) {
	datasetDir, _, plat, err := e.runPlatform(ctx, req)
	if err != nil {
		return nil, err
	}
	return e.taskImages(ctx, req, datasetDir, plat)
}

// BuildAgent builds the agent image of req on the task's images ti, and
// returns the images of the run for RunRequest.Images.
func (e *Env) BuildAgent(ctx context.Context, req RunRequest, ti *TaskImages) (*RunImages, error) {
	_, _, plat, err := e.runPlatform(ctx, req)
	if err != nil {
		return nil, err
	}
	return e.agentImage(ctx, req, ti, plat)
}

func (e *Env) taskImages(ctx context.Context, req RunRequest, datasetDir string, plat *v1.Platform) (*TaskImages, error) {
	caseRef, cfg, err := e.caseImage(ctx, req, datasetDir, plat)
	if err != nil {
		return nil, err
	}
	srcDir := cfg.Source
	ti := &TaskImages{Case: caseRef}
	if cfg.Files.Patch != nil {
		ti.Patch = *cfg.Files.Patch
	}
	// The case image's digest goes into result.json: which bug ran.
	if r, err := e.Resolver(plat); err == nil {
		if res, err := r.Resolve(ctx, caseRef); err == nil {
			if d, err := res.Image.Digest(); err == nil {
				ti.CaseDigest = d.String()
			}
		}
	}
	ti.SourceDir = srcDir
	t := time.Now()
	if req.Mode == ModeSidecar {
		// The task image of sidecar mode; --tool-layer does not apply.
		ti.Tool, err = e.Tool(ctx, ToolRequest{Case: caseRef, Task: req.Task, SourceDir: srcDir, Platform: plat, Sidecar: true, Push: req.ViaRegistry})
		if err != nil {
			return nil, err
		}
		ti.ToolTook = time.Since(t)
		return ti, nil
	}
	layer, err := e.toolLayers().Lookup(req.ToolLayer)
	if err != nil {
		return nil, err
	}
	if ti.Tool, err = layer.Tool(ctx, e, ToolInput{Case: caseRef, Task: req.Task, SourceDir: srcDir, Home: e.Home, Plugins: req.Plugins, Platform: plat}); err != nil {
		return nil, err
	}
	ti.ToolTook = time.Since(t)
	return ti, nil
}

func (e *Env) agentImage(ctx context.Context, req RunRequest, ti *TaskImages, plat *v1.Platform) (*RunImages, error) {
	ri := &RunImages{Case: ti.Case, CaseDigest: ti.CaseDigest, Tool: ti.Tool.Name + "@" + ti.Tool.Digest.String(), SourceDir: ti.SourceDir, Patch: ti.Patch}
	areq := AgentRequest{Tool: ti.Tool.Name, Folder: req.Agent, Task: req.Task, Platform: plat, Push: req.ViaRegistry}
	if req.Mode == ModeSidecar {
		// The agent's side is the same for every task: tool-sidecar-agent,
		// and agent-<name>/sidecar on it.
		rt, err := e.SidecarAgent(ctx, SidecarAgentRequest{OSImage: req.OSImage, Platform: plat, Push: req.ViaRegistry})
		if err != nil {
			return nil, err
		}
		ri.AgentRuntime = rt.Name + "@" + rt.Digest.String()
		areq.Tool, areq.Sidecar = rt.Name, true
	}
	ag, err := e.Agent(ctx, areq)
	if err != nil {
		return nil, err
	}
	ri.Agent = ag.Name + "@" + ag.Digest.String()
	return ri, nil
}

// annotateResult adds to the container's result.json what the host knows
// of the run: its id, agent, model and case image. A run whose
// container wrote no result.json is left as it is.
func annotateResult(dir string, req RunRequest, runID string, ri *RunImages) error {
	r, err := sserun.ReadRunResult(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	// The difficulty is the container's own (it read SSE_DIFFICULTY).
	r.RunID, r.Agent, r.Model = runID, req.Agent, modelName(req.Model)
	if ri != nil {
		r.CaseImage = ri.Case
		if ri.CaseDigest != "" {
			r.CaseImage = caseWithDigest(ri.Case, ri.CaseDigest)
		}
	}
	return sserun.WriteRunResult(dir, r)
}

// caseWithDigest pins ref to digest d (a reference already pinned keeps
// its digest).
func caseWithDigest(ref, d string) string {
	if strings.Contains(ref, "@") {
		return ref
	}
	return ref + "@" + d
}

// DefaultTimeout is the agent's time limit, in seconds, when the request
// sets none.
const DefaultTimeout = 3600

// timeout is the agent's time limit in seconds: what summary.json records
// and the container gets.
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
	return env
}

func modelName(m string) string {
	if strings.TrimSpace(m) == "" {
		return "none"
	}
	return m
}

// caseImage returns the case image reference of the run, building it or
// pulling it as the request says, and the task's config.
func (e *Env) caseImage(ctx context.Context, req RunRequest, datasetDir string, plat *v1.Platform) (string, *task.Config, error) {
	var entry *task.ManifestTask
	if req.Catalog != "" {
		c, err := e.Catalog(ctx, req.Catalog)
		if err != nil {
			return "", nil, err
		}
		if entry = c.Manifest.Task(req.Task); entry == nil {
			return "", nil, fmt.Errorf("task %q is not in catalog %s", req.Task, req.Catalog)
		}
		if !req.Build {
			ref, err := e.catalogCase(ctx, c, req.Task, plat)
			if err == nil {
				return ref, &entry.Metadata, nil
			}
			var refused *LockRefusal
			if errors.As(err, &refused) {
				return "", nil, err
			}
			if datasetDir == "" {
				if datasetDir = task.FindDataset(e.Home, req.Task); datasetDir == "" {
					return "", nil, fmt.Errorf("%w, and no task folder can build it", err)
				}
			}
			e.logf("warning: %v; building it from %s", err, datasetDir)
		}
	}
	if datasetDir == "" {
		if datasetDir = task.FindDataset(e.Home, req.Task); datasetDir == "" {
			return "", nil, fmt.Errorf("no task folder for %q to build its case image from: pass --local DIR", req.Task)
		}
	}
	t, err := task.Load(filepath.Join(datasetDir, req.Task))
	if err != nil {
		return "", nil, err
	}
	if entry != nil {
		// Only the catalog's own task may stand in for its case image.
		files, err := t.FilesDigest()
		if err != nil {
			return "", nil, err
		}
		if want := task.DigestFiles(entry.Files); files != want {
			return "", nil, fmt.Errorf("the task folder %s is not the catalog's %s (files digest %.12s, the catalog lists %.12s): it cannot build the catalog's case image", t.Dir, req.Task, files, want)
		}
	}
	if e.BuildKit == nil {
		return "", nil, errors.New("building the case image needs BuildKit, and none is configured")
	}
	bk, err := e.BuildKit(ctx)
	if err != nil {
		return "", nil, err
	}
	defer bk.Close()
	r, err := e.Resolver(plat)
	if err != nil {
		return "", nil, err
	}
	b := &casebuild.Builder{BuildKit: bk, Store: e.Store, Resolver: r, Names: e.Names, Log: e.Log}
	out, err := b.BuildCases(ctx, datasetDir, casebuild.CaseOptions{Tasks: []string{req.Task}, Force: req.Build && req.Catalog == "", HostArch: runtime.GOARCH})
	if err != nil {
		return "", nil, err
	}
	return out[0].Image, t.Config, nil
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func newRunID(taskID, agentFolder string, t time.Time) string {
	b := make([]byte, 3)
	rand.Read(b)
	return fmt.Sprintf("%s-%s-%s-%s", t.UTC().Format("20060102-150405"), strings.ToLower(taskID), agentFolder, hex.EncodeToString(b))
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}
