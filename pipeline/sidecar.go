package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/runner"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// SidecarAgentRequest asks for tool-sidecar-agent.
type SidecarAgentRequest struct {
	// OSImage is the OS image it starts from. Required.
	OSImage string
	// Platform is the platform; nil means the OS image's.
	Platform *v1.Platform
	// Push also pushes it to its registry.
	Push bool
}

// SidecarAgent assembles REGISTRY/tool-sidecar-agent:VERSION (SPEC.md
// section 7) from an OS image and the runtime image, and records it in the
// store. The same OS image, runtime and SOURCE_DATE_EPOCH give the same
// bytes on any machine.
func (e *Env) SidecarAgent(ctx context.Context, req SidecarAgentRequest) (*Built, error) {
	if req.OSImage == "" {
		// The CLI fills it from --os-image or SSEBENCH_OS_IMAGE (the
		// environment or .env); the pipeline reads no environment.
		return nil, errors.New("no OS image for tool-sidecar-agent: pass --os-image (the image the base images start from) or set SSEBENCH_OS_IMAGE")
	}
	osRes, rtRes, rref, _, err := e.baseAndRuntime(ctx, req.OSImage, "OS image", req.Platform)
	if err != nil {
		return nil, err
	}
	out := e.Names.SidecarAgentRuntime()
	ref, err := name.ParseReference(out, name.WeakValidation)
	if err != nil {
		return nil, fmt.Errorf("image name %q is not a valid reference: %w", out, err)
	}
	opts := []assemble.ToolOption{assemble.WithTempDir(e.Store.TempDir()), assemble.WithFacts(e.Facts), assemble.WithRefs(req.OSImage, rref)}
	if t, ok, err := SourceDateEpoch(); err != nil {
		return nil, err
	} else if ok {
		opts = append(opts, assemble.WithTime(t))
	}
	start := time.Now()
	img, err := assemble.SidecarAgent(ctx, osRes.Image, rtRes.Image, opts...)
	if err != nil {
		return nil, err
	}
	defer img.Close()
	if err := e.Store.Write(ctx, ref, img); err != nil {
		return nil, err
	}
	var pushed *remote.PushReport
	if req.Push {
		popts := append([]remote.Option{remote.WithStore(e.Store), remote.WithMountFrom(osRes.Ref.Context().Name())}, e.RegistryOptions...)
		if pushed, err = remote.Push(ctx, out, img, popts...); err != nil {
			return nil, err
		}
	}
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	b := &Built{Name: out, Digest: d, How: "assembled", Took: time.Since(start), Push: pushed, OpenCode: openCodeOf(rtRes.Image)}
	e.logf("assembled %s in %s", out, b.Took.Round(time.Millisecond))
	return b, nil
}

// taskSource returns the task's SOURCE_DIR without building anything: from
// the catalog's manifest, else from the task folder.
func (e *Env) taskSource(req RunRequest, datasetDir string) (string, error) {
	if req.Catalog != "" {
		m, err := task.ReadManifest(filepath.Join(req.Catalog, task.ManifestFile))
		if err != nil {
			return "", fmt.Errorf("reading the catalog: %w", err)
		}
		if entry := m.Task(req.Task); entry != nil && entry.Metadata.Source != "" {
			return entry.Metadata.Source, nil
		}
	}
	if datasetDir == "" {
		datasetDir = task.FindDataset(e.Home, req.Task)
	}
	if datasetDir == "" {
		return "", fmt.Errorf("task %q is in no dataset or catalog here: its SOURCE_DIR is unknown; pass --local DIR or --catalog PATH", req.Task)
	}
	t, err := task.Load(filepath.Join(datasetDir, req.Task))
	if err != nil {
		return "", err
	}
	return t.Config.Source, nil
}

// sidecarStartTimeout bounds the wait for the task container's start.
const sidecarStartTimeout = 10 * time.Minute

// runSidecar runs the two containers of a sidecar run (SPEC.md section 7).
// agentSpec is the agent container's spec as a sandbox run would have it
// (environment, results, archive, labels, gateway); taskImage is
// tool-sidecar/<task>. The task container starts first, with a
// root-owned 0755 directory of the host at /run/ssebench for the daemon's
// sockets and the hand-over files. Once it says ready there (the daemon
// answers, the buggy commit is kept), the agent container starts with only
// the agent socket's directory, agent/, read-only at /run/ssebench, and,
// at SOURCE_DIR, the task container's own SOURCE_DIR (bind-mounted from its
// root on the host). The agent container's root may be the agent's (its
// Dockerfile ran as root): it never sees the admin socket or a hand-over
// file, and cannot replace the agent socket. The host says when the agent
// container started (agent-start) and, however it ended (its agent done,
// timed out, or the container killed), that it ended (agent-exit); the
// task container then grades the tree and exits. A cancelled ctx (Ctrl-C) stops the agent container, then the task
// container, without grading. The runner removes both containers and their
// snapshots on every path. It returns the task container's result, whose
// exit status is the agent's, and the agent container's.
//
// Sandbox mode (sandbox true, SPEC.md section 17.1) is the same shape:
// taskImage is the tool image, whose entrypoint starts the daemon itself
// when told it is the task container (SSE_ROLE=task, its sockets in the
// environment), and the agent image (the tool image without the answers,
// plus the agent's layers) is the agent container (SSE_ROLE=agent).
func (e *Env) runSidecar(ctx context.Context, rn SidecarRunner, req RunRequest, agentSpec runner.RunSpec, taskImage, srcDir string, sandbox bool) (taskRes, agentRes *runner.Result, retErr error) {
	mode := ModeSidecar
	if sandbox {
		mode = ModeSandbox
	}
	if srcDir == "" {
		return nil, nil, fmt.Errorf("the task has no SOURCE_DIR (`source` in its config.yaml): %s mode shares it between the containers", mode)
	}
	sockDir, err := os.MkdirTemp("", "ssebench-sidecar-")
	if err != nil {
		return nil, nil, fmt.Errorf("creating the sidecar directory: %w", err)
	}
	defer os.RemoveAll(sockDir)
	if err := os.Chmod(sockDir, 0o755); err != nil {
		return nil, nil, err
	}
	agentSockDir := filepath.Join(sockDir, filepath.Base(contract.SidecarAgentDir))
	if err := os.Mkdir(agentSockDir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("creating the sidecar directory: %w", err)
	}
	handOver := func(p string) string { return filepath.Join(sockDir, filepath.Base(p)) }
	taskSpec, agentSpec := pairSpecs(req, agentSpec, taskImage, srcDir, sandbox)
	taskSpec.Mounts = append(taskSpec.Mounts, runner.Mount{Source: sockDir, Target: contract.SidecarDir})
	agentStarted := agentSpec.Started
	agentSpec.Started = func(pid uint32) {
		if agentStarted != nil {
			agentStarted(pid)
		}
		// Only root writes here; the task container starts the agent
		// phase's clock once it sees it.
		if err := safefile.WriteBytes(handOver(contract.SidecarAgentStart), []byte("started\n"), 0o644); err != nil {
			e.logf("warning: %v", err)
		}
	}

	// The task container outlives a cancelled ctx until the agent
	// container is gone: the agent's mount of its tree goes first.
	taskCtx, cancelTask := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelTask()
	started := make(chan struct{})
	var once sync.Once
	taskSpec.Started = func(uint32) { once.Do(func() { close(started) }) }
	// taskOut is written before taskEnded is closed.
	var taskOut struct {
		res *runner.Result
		err error
	}
	taskEnded := make(chan struct{})
	go func() {
		defer close(taskEnded)
		r, err := rn.Run(taskCtx, taskSpec)
		if err != nil && r == nil && req.Prebuilt && !errors.Is(err, context.Canceled) {
			e.logf("warning: pulling the prebuilt image %s failed (%v); using the local copy", taskSpec.Image, err)
			taskSpec.Pull = false
			r, err = rn.Run(taskCtx, taskSpec)
			if errors.Is(err, store.ErrNotFound) {
				err = fmt.Errorf("the prebuilt image %s is not in the registry or on this machine", taskSpec.Image)
			}
		}
		taskOut.res, taskOut.err = r, err
	}()
	stopTask := func() (*runner.Result, error) {
		cancelTask()
		<-taskEnded
		return taskOut.res, taskOut.err
	}
	timer := time.NewTimer(sidecarStartTimeout)
	defer timer.Stop()
	// The agent container starts once the task container is ready: its
	// daemon answers and the buggy commit is kept, before the agent can
	// touch the tree.
	ready := handOver(contract.SidecarReady)
	// A stat per tick; the agent container's start waits on it.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for isReady := false; !isReady; {
		select {
		case <-started:
			started = nil
		case <-tick.C:
			if started == nil {
				_, err := os.Stat(ready)
				isReady = err == nil
			}
		case <-taskEnded:
			if taskOut.err == nil {
				taskOut.err = fmt.Errorf("the task container %s ended (status %d) before the agent container started: see daemon.log in the run's folder", taskSpec.ID, taskOut.res.ExitCode)
			}
			return taskOut.res, nil, taskOut.err
		case <-ctx.Done():
			r, _ := stopTask()
			return r, nil, ctx.Err()
		case <-timer.C:
			r, _ := stopTask()
			return r, nil, fmt.Errorf("the task container %s was not ready within %s: see daemon.log in the run's folder", taskSpec.ID, sidecarStartTimeout)
		}
	}
	root, err := rn.RootFS(taskSpec.ID)
	var tree string
	if err == nil {
		tree, err = runner.InRoot(root, srcDir)
	}
	if err != nil {
		r, _ := stopTask()
		return r, nil, fmt.Errorf("sharing SOURCE_DIR of %s: %w", taskSpec.ID, err)
	}
	agentSpec.Mounts = append(agentSpec.Mounts,
		runner.Mount{Source: agentSockDir, Target: contract.SidecarDir, ReadOnly: true},
		runner.Mount{Source: tree, Target: srcDir})

	// A task container that ends while the agent runs (its daemon died)
	// leaves nothing to grade with: the agent container is stopped too.
	agentCtx, cancelAgent := context.WithCancel(ctx)
	defer cancelAgent()
	go func() {
		select {
		case <-taskEnded:
			cancelAgent()
		case <-agentCtx.Done():
		}
	}()
	agentRes, aerr := rn.Run(agentCtx, agentSpec)
	if aerr != nil && agentRes == nil && req.Prebuilt && agentCtx.Err() == nil {
		e.logf("warning: pulling the prebuilt image %s failed (%v); using the local copy", agentSpec.Image, aerr)
		agentSpec.Pull = false
		agentRes, aerr = rn.Run(agentCtx, agentSpec)
		if errors.Is(aerr, store.ErrNotFound) {
			aerr = fmt.Errorf("the prebuilt image %s is not in the registry or on this machine", agentSpec.Image)
		}
	}
	switch {
	case ctx.Err() != nil || agentRes == nil:
		// Stopped, or the agent container never ran: nothing to grade.
		taskRes, _ = stopTask()
		if aerr == nil {
			aerr = ctx.Err()
		}
		return taskRes, agentRes, aerr
	case agentCtx.Err() != nil:
		<-taskEnded
		err := taskOut.err
		if err == nil {
			err = fmt.Errorf("the task container %s ended (status %d) while the agent ran: see daemon.log in the run's folder", taskSpec.ID, taskOut.res.ExitCode)
		}
		return taskOut.res, agentRes, err
	}
	// Only root writes here; the task container grades once it sees it.
	if err := safefile.WriteBytes(handOver(contract.SidecarAgentExit), []byte(strconv.Itoa(agentRes.ExitCode)+"\n"), 0o644); err != nil {
		taskRes, _ = stopTask()
		return taskRes, agentRes, err
	}
	select {
	case <-taskEnded:
	case <-ctx.Done():
		stopTask()
	}
	return taskOut.res, agentRes, errors.Join(aerr, taskOut.err)
}

// pairSpecs makes the specs of a run's two containers (SPEC.md section
// 17.1) from agentSpec, the agent container's spec as a run of one would
// have it: the task container runs taskImage with the run's environment,
// SOURCE_DIR and the results only, its own ID and role label, no
// replaced entrypoint and no network; the agent container keeps the rest,
// without the admin socket, with the agent socket where it sees it. In
// sandbox mode both are told their role (SSE_ROLE) and the task
// container its daemon's sockets, which tool-sidecar's entrypoint script
// sets itself. A backend adds the run directory and the shared tree.
func pairSpecs(req RunRequest, agentSpec runner.RunSpec, taskImage, srcDir string, sandbox bool) (taskSpec, _ runner.RunSpec) {
	taskSpec = agentSpec
	taskSpec.Image = taskImage
	taskSpec.ID = withSuffix(agentSpec.ID, "-task")
	taskSpec.Network = runner.NetworkRestricted
	taskSpec.Env = append(req.env(), contract.EnvSourceDir+"="+srcDir)
	// The task container has the results only: the archive is the
	// agent's, and nothing of the task container reads it.
	taskSpec.Mounts = []runner.Mount{agentSpec.Mounts[0]}
	taskSpec.Labels = withLabel(agentSpec.Labels, ContainerLabel, contract.RoleTask)
	taskSpec.Entrypoint, taskSpec.Args, taskSpec.Gateway = nil, nil, nil
	agentSpec.ID = withSuffix(agentSpec.ID, "-agent")
	agentSpec.Labels = withLabel(agentSpec.Labels, ContainerLabel, contract.RoleAgent)
	if sandbox {
		// The tool image's entrypoint is the task container's when told
		// so, with its daemon's sockets where the agent container finds
		// the agent's.
		taskSpec.Env = append(taskSpec.Env,
			contract.EnvRole+"="+contract.RoleTask,
			contract.EnvAdminSocket+"="+contract.SidecarAdminSocket,
			contract.EnvAgentSocket+"="+contract.SidecarTaskAgentSocket)
		agentSpec.Env = append(slices.Clone(agentSpec.Env), contract.EnvRole+"="+contract.RoleAgent)
	} else {
		taskSpec.Labels = withLabel(taskSpec.Labels, "ssebench.sidecar", "task")
		agentSpec.Labels = withLabel(agentSpec.Labels, "ssebench.sidecar", "agent")
	}
	// No admin socket for the agent container: the task container alone
	// ends the phase and grades.
	agentSpec.Env = append(slices.DeleteFunc(slices.Clone(agentSpec.Env), func(kv string) bool {
		return strings.HasPrefix(kv, contract.EnvAdminSocket+"=")
	}),
		contract.EnvAgentSocket+"="+contract.SidecarAgentSocket,
		contract.EnvSourceDir+"="+srcDir)
	return taskSpec, agentSpec
}

// PairRunner is an Executor that runs a run's two containers as one unit
// in which they share the tree and the run directory themselves (a
// Kubernetes pod): kube.Runner does.
type PairRunner interface {
	Executor
	RunPair(ctx context.Context, ps runner.PairSpec) (taskRes, agentRes *runner.Result, err error)
}

// runPod runs a sandbox run's two containers on a PairRunner.
func (e *Env) runPod(ctx context.Context, rn PairRunner, req RunRequest, agentSpec runner.RunSpec, taskImage, srcDir string) (*runner.Result, *runner.Result, error) {
	if srcDir == "" {
		return nil, nil, errors.New("the task has no SOURCE_DIR (`source` in its config.yaml): the run's two containers share it")
	}
	taskSpec, agentSpec := pairSpecs(req, agentSpec, taskImage, srcDir, true)
	taskSpec.Pull = true
	return rn.RunPair(ctx, runner.PairSpec{Task: taskSpec, Agent: agentSpec, SourceDir: srcDir})
}

// ContainerLabel says which of a run's two containers a container is:
// contract.RoleTask or contract.RoleAgent.
const ContainerLabel = "ssebench.container"

// maxContainerID is the longest container ID containerd takes.
const maxContainerID = 76

// withSuffix is id with suffix, within maxContainerID: a long id loses
// characters before its last seven ("-" and the run id's random part), so
// that two runs' containers still differ.
func withSuffix(id, suffix string) string {
	if len(id)+len(suffix) <= maxContainerID {
		return id + suffix
	}
	tail := id[len(id)-7:]
	head := strings.TrimRight(id[:maxContainerID-len(suffix)-len(tail)], "-._")
	return head + tail + suffix
}

func withLabel(labels map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for lk, lv := range labels {
		out[lk] = lv
	}
	out[k] = v
	return out
}
