package entrypoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/sserun"
)

// modeSidecarTask is the task container's side of sidecar mode: the
// entrypoint script of tool-sidecar starts the daemon and then this
// program, which waits for the agent container's end and grades.
const modeSidecarTask = "sidecar-task"

const (
	// agentResultFile is what the agent container leaves in the results
	// for the task container: the agent's part of result.json.
	agentResultFile = "agent_result.json"
	// handOverPoll is how often a side looks for the other's hand-over
	// file: a stat, cheap, and each wait is on a run's critical path (a
	// run waits for three: ready, the agent's result, the grade's lock).
	handOverPoll = 20 * time.Millisecond
)

// daemonWait bounds the agent container's wait for the task container's
// daemon, and the task container's own (a variable for the tests).
var daemonWait = 5 * time.Minute

// sidecarDir is the task container's directory of the admin socket and
// the hand-over files (/run/ssebench), which the agent container never
// sees.
func (e *entrypoint) sidecarDir() string { return filepath.Dir(e.env.AdminSocket) }

// runAgentSide is the agent container's side of a run of two containers
// (SPEC.md section 17.1; sidecar mode's agent container too): it waits
// until the task container says it is ready (its daemon answers on the
// agent socket, the only one this container has, and the buggy commit is
// kept), starts the MCP server (command mcp), runs the agent as model with
// no_new_privs in the shared SOURCE_DIR, kills what the agent left and
// leaves its report for the task container. The agent phase, the snapshot
// and the grade are the task container's: nothing here runs after the
// agent but this program, which is static and ours.
func (e *entrypoint) runAgentSide(ctx context.Context, mode string, mcp []string) int {
	res := &contract.RunResult{Mode: mode, Command: e.command, Difficulty: e.env.Difficulty}
	note := e.noter(res)
	if err := os.MkdirAll(e.env.Results, 0o755); err != nil {
		fmt.Fprintln(e.log, "entrypoint: creating the results directory:", err)
		return 1
	}
	// The sidecar agent image knows no task: the agent works in the
	// shared tree. An agent image of sandbox mode has the task's WORKDIR.
	if mode == modeSidecar && e.env.SourceDir != "" {
		e.workDir = e.env.SourceDir
	}
	e.prepareArchive(note)
	// From here on nothing this process starts can gain a privilege
	// through exec: a setuid program the agent's image holds runs as
	// the agent.
	if err := noNewPrivs(); err != nil {
		note("%v", err)
		return 1
	}
	wctx, cancel := context.WithTimeout(ctx, daemonWait)
	err := waitFile(wctx, filepath.Join(filepath.Dir(e.env.AgentSocket), filepath.Base(contract.SidecarReady)))
	if err == nil {
		err = sserun.WaitReady(wctx, e.env.AgentSocket)
	}
	cancel()
	if err != nil {
		note("the task container's daemon did not answer: %v", err)
	}
	svc := &services{}
	if err == nil {
		svc.mcp = e.startMCPAt(ctx, note, mcp...)
	}
	defer svc.stop()
	fwd := sserun.ForwardGateway(os.Getenv, note)
	defer fwd.Close()

	hand := e.startHandOver(note)
	oc := e.startOpenCode(ctx, svc.mcp != nil, note)
	code := e.runAgent(ctx, res, note)
	// No daemon here to end the phase in this container: every process
	// of the agent goes before the tree is graded.
	if e.agent != nil {
		if _, err := sserun.KillAll(e.agent.UID); err != nil {
			note("killing the agent's processes: %v", err)
		}
	}
	oc.stop()
	svc.endAgentPhase()
	fwd.Close()
	e.closeArchive(note)
	b, err := json.Marshal(res)
	if err == nil {
		err = safefile.WriteBytes(filepath.Join(e.env.Results, agentResultFile), b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(e.log, "entrypoint:", err)
	}
	hand.end(code, note)
	return code
}

// runTaskSide is the task container's side of a run of two containers
// (SPEC.md section 17.1; sidecar mode's task container too). It starts the
// daemon when ownDaemon (tool-sidecar's entrypoint script starts its own),
// waits until it answers, keeps the buggy commit, says the agent may
// start, waits for the word that the agent container has ended (however
// it ended), ends the agent phase, and takes the snapshot and grades with
// this image's git and toolchain: nothing of the agent's image runs here.
func (e *entrypoint) runTaskSide(ctx context.Context, mode string, ownDaemon bool) int {
	res := &contract.RunResult{Mode: mode, Difficulty: e.env.Difficulty}
	note := e.noter(res)
	if err := os.MkdirAll(e.env.Results, 0o755); err != nil {
		fmt.Fprintln(e.log, "entrypoint: creating the results directory:", err)
		return 1
	}
	cfg, err := sserun.ReadTaskConfig(e.env.TaskRoot)
	if err != nil {
		note("%v", err)
	} else {
		res.TaskID = cfg.ID
	}
	sourceDir := e.env.SourceDir
	if cfg != nil && cfg.Source != "" {
		sourceDir = cfg.Source
	}
	svc := &services{}
	defer svc.stop()
	if ownDaemon {
		svc.daemon = e.startDaemon(ctx, note)
	} else {
		wctx, cancel := context.WithTimeout(ctx, daemonWait)
		err = sserun.WaitReady(wctx, e.env.AdminSocket)
		cancel()
		if err != nil {
			note("the daemon did not start (see %s): %v", contract.DaemonLog, err)
		}
	}
	base := ""
	var snap *snapshot
	if sourceDir != "" {
		base = e.headCommit(ctx, sourceDir, note)
		snap = e.keepBase(sourceDir, base, note)
	}
	defer snap.remove()
	dir := e.sidecarDir()
	// Ready, where the host looks and where the agent container does
	// (its one directory of ours, the agent socket's).
	for _, d := range slices.Compact([]string{dir, filepath.Dir(e.env.AgentSocket)}) {
		if err := safefile.WriteBytes(filepath.Join(d, filepath.Base(contract.SidecarReady)), []byte("ready\n"), 0o644); err != nil {
			note("%v", err)
		}
	}
	// The agent phase's clock starts when the host (or, in a pod, the
	// agent container's side) says the agent container started.
	watch := e.watchAgent()
	sctx, stopStart := context.WithCancel(ctx)
	startDone := make(chan struct{})
	startFile := watch.start
	go func() {
		defer close(startDone)
		if waitFile(sctx, startFile) == nil {
			e.agentPhase(ctx, "start", sserun.Request{Op: sserun.OpAgentStart, TimeoutMS: e.env.Timeout.Milliseconds()}, note)
		}
	}()
	code, _, err := watch.wait(ctx)
	if _, serr := os.Stat(startFile); serr != nil || err != nil {
		stopStart()
	}
	<-startDone
	stopStart()
	if err != nil {
		note("stopped by a signal: not grading")
		res.GradeError = "stopped by a signal before the grade"
		e.finishSidecar(res)
		return 1
	}
	resp := e.agentPhase(ctx, "end", sserun.Request{Op: sserun.OpAgentEnd}, note)
	if ar, err := readAgentResult(e.env.Results); err == nil {
		res.Command, res.AgentExit, res.TimedOut, res.AgentDurationMS = ar.Command, ar.AgentExit, ar.TimedOut, ar.AgentDurationMS
		res.Killed = ar.Killed
		res.Notes = append(ar.Notes, res.Notes...)
	} else {
		res.AgentExit = code
		note("the agent container ended (status %d) without its report: it was killed or stopped; grading what the tree holds", code)
	}
	if resp != nil && resp.Status != nil {
		res.ToolCalls = resp.Status.Calls
	}
	if tree, ok := e.writePatch(ctx, sourceDir, base, snap, e.protectedPaths(cfg, note), res, note); ok {
		e.grade(ctx, tree, res, note)
	}
	e.finishSidecar(res)
	if e.env.KeepAlive && ctx.Err() == nil {
		fmt.Fprintf(e.log, "entrypoint: %s=1: staying alive until stopped\n", contract.EnvKeepAlive)
		<-ctx.Done()
	}
	return res.AgentExit
}

func (e *entrypoint) finishSidecar(res *contract.RunResult) {
	if err := contract.WriteRunResult(e.env.Results, res); err != nil {
		fmt.Fprintln(e.log, "entrypoint:", err)
	}
	os.Remove(filepath.Join(e.env.Results, agentResultFile))
}

// noter returns the function that records a note in res and says it.
func (e *entrypoint) noter(res *contract.RunResult) func(string, ...any) {
	return func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		res.Notes = append(res.Notes, msg)
		fmt.Fprintln(e.log, "entrypoint:", msg)
	}
}

// maxAgentResult bounds the agent container's report: a few notes.
const maxAgentResult = 1 << 20

// readAgentResult reads the agent container's report: a regular file,
// not a link, of at most maxAgentResult bytes (root wrote it there, but
// the other container's root is not ours to trust with a path to follow).
func readAgentResult(dir string) (*contract.RunResult, error) {
	f, err := os.OpenFile(filepath.Join(dir, agentResultFile), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("reading %s: not a regular file", agentResultFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxAgentResult+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxAgentResult {
		return nil, fmt.Errorf("reading %s: more than %d bytes", agentResultFile, maxAgentResult)
	}
	var r contract.RunResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("reading %s: %w", agentResultFile, err)
	}
	return &r, nil
}

// waitFile waits until path exists or ctx ends.
func waitFile(ctx context.Context, path string) error {
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", path, ctx.Err())
		case <-time.After(handOverPoll):
		}
	}
}

// prSetNoNewPrivs is PR_SET_NO_NEW_PRIVS of prctl(2).
const prSetNoNewPrivs = 38

// noNewPrivs sets no_new_privs on every thread of this process, so that
// every process it starts from now on has it too: execve never grants a
// setuid or setgid bit or a file capability again. Dropping to another
// account (setuid(2), as the entrypoint does for the agent) still works.
// The calling goroutine stays on its thread: where every thread cannot be
// reached (a build with cgo), that thread, which starts the agent, has it.
func noNewPrivs() error {
	runtime.LockOSThread()
	_, _, errno := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0)
	if errno == syscall.ENOTSUP {
		_, _, errno = syscall.RawSyscall(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0)
	}
	if errno != 0 {
		return fmt.Errorf("setting no_new_privs for the agent: %w", errno)
	}
	return nil
}
