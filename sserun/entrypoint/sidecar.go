package entrypoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
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
	// file: a stat, cheap.
	handOverPoll = 100 * time.Millisecond
)

// daemonWait bounds the agent container's wait for the task container's
// daemon, and the task container's own (a variable for the tests).
var daemonWait = 5 * time.Minute

// sidecarDir is the task container's directory of the admin socket and
// the hand-over files (/run/ssebench), which the agent container never
// sees.
func (e *entrypoint) sidecarDir() string { return filepath.Dir(e.env.AdminSocket) }

// runSidecarAgent is the agent container's side: it waits for the task
// container's daemon on the agent socket (the only one it has), starts the
// MCP server, runs the agent as model with no_new_privs in SOURCE_DIR (the
// task container's tree), kills what the agent left and leaves its
// report. The agent phase and the grade are the task container's.
func (e *entrypoint) runSidecarAgent(ctx context.Context) int {
	res := &contract.RunResult{Mode: modeSidecar, Command: e.command, Difficulty: e.env.Difficulty}
	note := e.noter(res)
	if err := os.MkdirAll(e.env.Results, 0o755); err != nil {
		fmt.Fprintln(e.log, "entrypoint: creating the results directory:", err)
		return 1
	}
	// The image knows no task: the agent works in the shared tree.
	if e.env.SourceDir != "" {
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
	err := sserun.WaitReady(wctx, e.env.AgentSocket)
	cancel()
	if err != nil {
		note("the task container's daemon did not answer: %v", err)
	}
	svc := &services{}
	if err == nil {
		svc.mcp = e.startMCPAt(ctx, contract.SidecarMCP, note)
	}
	defer svc.stop()
	fwd := sserun.ForwardGateway(os.Getenv, note)
	defer fwd.Close()

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
	return code
}

// runSidecarTask is the task container's side: once the daemon (started by
// the entrypoint script) answers and the buggy commit is read, it says the
// agent may start, waits for the host's word that the agent container has
// ended (however it ended), ends the agent phase, and grades the tree.
func (e *entrypoint) runSidecarTask(ctx context.Context) int {
	res := &contract.RunResult{Mode: modeSidecar, Difficulty: e.env.Difficulty}
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
	wctx, cancel := context.WithTimeout(ctx, daemonWait)
	err = sserun.WaitReady(wctx, e.env.AdminSocket)
	cancel()
	if err != nil {
		note("the daemon did not start (see %s): %v", contract.DaemonLog, err)
	}
	base := ""
	var snap *snapshot
	if sourceDir != "" {
		base = e.headCommit(ctx, sourceDir, note)
		snap = e.keepBase(sourceDir, base, note)
	}
	defer snap.remove()
	dir := e.sidecarDir()
	if err := safefile.WriteBytes(filepath.Join(dir, filepath.Base(contract.SidecarReady)), []byte("ready\n"), 0o644); err != nil {
		note("%v", err)
	}
	// The agent phase's clock starts when the host says the agent
	// container started.
	sctx, stopStart := context.WithCancel(ctx)
	startDone := make(chan struct{})
	startFile := filepath.Join(dir, filepath.Base(contract.SidecarAgentStart))
	go func() {
		defer close(startDone)
		if waitFile(sctx, startFile) == nil {
			e.agentPhase(ctx, "start", sserun.Request{Op: sserun.OpAgentStart, TimeoutMS: e.env.Timeout.Milliseconds()}, note)
		}
	}()
	code, err := waitAgentExit(ctx, filepath.Join(dir, filepath.Base(contract.SidecarAgentExit)))
	if _, serr := os.Stat(startFile); serr != nil || err != nil {
		stopStart()
	}
	<-startDone
	stopStart()
	if err != nil {
		note("stopped by a signal: not grading")
		e.finishSidecar(res)
		return 1
	}
	resp := e.agentPhase(ctx, "end", sserun.Request{Op: sserun.OpAgentEnd}, note)
	if ar, err := readAgentResult(e.env.Results); err == nil {
		res.Command, res.AgentExit, res.TimedOut, res.AgentDurationMS = ar.Command, ar.AgentExit, ar.TimedOut, ar.AgentDurationMS
		res.Notes = append(ar.Notes, res.Notes...)
	} else {
		res.AgentExit = code
		note("the agent container ended (status %d) without its report: it was killed or stopped; grading what the tree holds", code)
	}
	if resp != nil && resp.Status != nil {
		res.ToolCalls = resp.Status.Calls
	}
	if tree, ok := e.writePatch(ctx, sourceDir, base, snap, res, note); ok {
		e.grade(ctx, tree, res, note)
	}
	e.finishSidecar(res)
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

// readAgentResult reads the agent container's report.
func readAgentResult(dir string) (*contract.RunResult, error) {
	b, err := os.ReadFile(filepath.Join(dir, agentResultFile))
	if err != nil {
		return nil, err
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

// waitAgentExit waits for the host's hand-over file and returns the agent
// container's exit status it holds.
func waitAgentExit(ctx context.Context, path string) (int, error) {
	if err := waitFile(ctx, path); err != nil {
		return 0, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 1, nil
	}
	return n, nil
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
