package sserun

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// The operations of the protocol. A client sends one Request per line and
// reads one Response per line, as many times as it likes on a connection.
const (
	// OpPing answers at once; it tells that the daemon is up.
	OpPing = "ping"
	// OpBuild runs scripts.build on a copy of the agent's tree.
	OpBuild = "build"
	// OpTest runs scripts.test on a copy of the agent's tree.
	OpTest = "test"
	// OpPoC runs scripts.run with each proof of concept on a copy of the
	// agent's tree (building first when the script does).
	OpPoC = "poc"
	// OpTaskInfo answers what the agent is told about the task at the
	// run's difficulty level (Response.Info).
	OpTaskInfo = "task_info"
	// OpStatus answers the agent phase's time left and the calls made so
	// far (Response.Status).
	OpStatus = "status"
	// OpTools answers which tools the agent has at this difficulty level
	// (Response.Tools, with Response.Status for the level): the MCP server
	// asks it once, to list only those. It is not a tool call.
	OpTools = "tools"
	// OpGrade runs build, test and every proof of concept on one copy of
	// the agent's tree, then the hidden tests on a copy of their own. Only
	// the admin socket accepts it: the hidden tests never reach the agent.
	OpGrade = "grade"
	// OpAgentStart tells the daemon that the agent starts, with its time
	// limit in Request.TimeoutMS (0: none), so that status can say how
	// much time is left. Admin socket only.
	OpAgentStart = "agent_start"
	// OpAgentEnd ends the agent phase: the agent's request in progress is
	// cancelled, every process of the agent's user is killed, and the
	// agent socket refuses every later request but ping. It answers once
	// no process of the agent's user is left. Admin socket only.
	OpAgentEnd = "agent_end"
)

// Tool names: what the agent calls, through MCP or `entrypoint --call`,
// and what tool_calls.jsonl records. Each is the op of the same name but
// ToolRunPoCs, which is OpPoC.
const (
	ToolTaskInfo = OpTaskInfo
	ToolBuild    = OpBuild
	ToolTest     = OpTest
	ToolRunPoCs  = "run_pocs"
	ToolStatus   = OpStatus
)

// ToolOf returns the tool name of an agent-facing op, or "" when op is not
// a tool (ping, tools, and the admin ops).
func ToolOf(op string) string {
	switch op {
	case OpTaskInfo, OpBuild, OpTest, OpStatus:
		return op
	case OpPoC:
		return ToolRunPoCs
	}
	return ""
}

// maxRequestLine bounds one request line: requests are a few bytes, and a
// client must not make the daemon buffer without limit.
const maxRequestLine = 64 << 10

// Request is one line a client sends: {"op":"build"}.
type Request struct {
	Op string `json:"op"`
	// Client names the program asking ("mcp", "mcp-stdio", "cli"), for
	// tool_calls.jsonl; the daemon does not trust it for anything else.
	Client string `json:"client,omitempty"`
	// TimeoutMS is the agent's time limit, for OpAgentStart.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// Tree is the directory OpGrade grades instead of SOURCE_DIR: the
	// entrypoint's snapshot of the agent's work (the buggy tree with
	// final.patch applied), root's, made after the agent phase. Only the
	// admin socket takes it.
	Tree string `json:"tree,omitempty"`
}

// Result is the outcome of running one script (or, for a proof-of-concept
// check, every proof of concept in turn).
type Result struct {
	// OK is true when the script exited 0 (for OpPing, always).
	OK bool `json:"ok"`
	// Exit is the exit status; 128+N when a signal N ended the script and
	// contract.TimeoutStatus (124) when it ran out of time; -1 when it could
	// not be started.
	Exit int `json:"exit"`
	// Output is the script's standard output and error, interleaved, cut
	// to its last bytes when it was long (see WithOutputLimit).
	Output string `json:"output"`
	// OutputCut is how many bytes of output were cut from the front.
	OutputCut int64 `json:"output_cut_bytes,omitempty"`
	// DurationMS is the wall time in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// TimedOut is true when the script was killed at its time limit.
	TimedOut bool `json:"timed_out,omitempty"`
	// Skipped says why a check did not run (in a grade, checks after a
	// failed build).
	Skipped string `json:"skipped,omitempty"`
	// Failed says why a check whose script exited 0 failed: tests the
	// task lists did not pass, or the test report was missing.
	Failed string `json:"failed,omitempty"`
	// Sandbox says how the script ran: SandboxOn ("namespaces": a private
	// /tmp and loopback), or "none: " and why the kernel or the container
	// runtime refused it.
	Sandbox string `json:"sandbox,omitempty"`
}

// Response is one line the daemon sends back. For build, test, poc and
// ping the embedded Result is the outcome. For grade, Grade holds one
// Result per check and the embedded Result sums them up: OK when every
// check that applies passed. Error is set (and OK false) when the request
// itself failed: unknown op, op not allowed on this socket, task not
// configured for it, or a failure of the daemon.
type Response struct {
	Result
	Error string `json:"error,omitempty"`
	Grade *Grade `json:"grade,omitempty"`
	// Info answers OpTaskInfo.
	Info *TaskInfo `json:"info,omitempty"`
	// Status answers OpStatus, OpTools and OpAgentEnd.
	Status *Status `json:"status,omitempty"`
	// Tools answers OpTools: the tool names available, in a fixed order.
	Tools []string `json:"tools,omitempty"`
	// PoCs are the proofs of concept one by one, for OpPoC.
	PoCs []PoCResult `json:"pocs,omitempty"`
}

// PoCResult is one proof of concept's run. At difficulty 3 only Name and
// OK are set (the name is then "PoC 1", "PoC 2", ...).
type PoCResult struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	Exit *int   `json:"exit,omitempty"`
}

// Status is the agent phase as the daemon sees it.
type Status struct {
	// Phase is "setup" before OpAgentStart, "agent" during the agent's
	// run, "over" after OpAgentEnd or a grade.
	Phase      string `json:"phase"`
	Difficulty int    `json:"difficulty"`
	// ElapsedMS is the time since the agent started.
	ElapsedMS int64 `json:"elapsed_ms"`
	// TimeLeftMS is the time the agent has left; nil when it has no limit
	// or has not started.
	TimeLeftMS *int64 `json:"time_left_ms,omitempty"`
	// Calls is the number of tool calls so far, refused ones included;
	// CallsByTool splits it by tool.
	Calls       int            `json:"calls"`
	CallsByTool map[string]int `json:"calls_by_tool,omitempty"`
	// ScriptTimeoutMS bounds one build, test or proof-of-concept run.
	ScriptTimeoutMS int64 `json:"script_timeout_ms"`
	// Killed is, for OpAgentEnd, how many processes of the agent's user
	// were killed.
	Killed int `json:"killed,omitempty"`
}

// Grade holds the checks of a grade, one field per name of
// contract.Checks, under that name in JSON. A nil check does not apply to
// the task (no script for it, no proof of concept, no future_test).
type Grade struct {
	Build *Result `json:"build"`
	Test  *Result `json:"test"`
	PoC   *Result `json:"poc"`
	// IntentTest is the hidden tests: the task's future_test diff applied
	// to a copy of the agent's tree of its own, then the test script run
	// there (the manifest's "intent_test" check).
	IntentTest *Result `json:"intent_test,omitempty"`
	// Judged says how the test checks were judged: contract.JudgedByName
	// (with the grader's canary), JudgedByNameNoCanary (a report format
	// without one: junit-xml, libtest), JudgedExitStatus (the task lists
	// no tests); empty when no test check ran.
	Judged string `json:"judged,omitempty"`
	// Integrity is contract.IntegrityReportForged when a test report got
	// the grader's canary wrong: the check that read it failed with Failed
	// "report forged", and the run is not a pass whatever else it did.
	// Empty when nothing was wrong.
	Integrity string `json:"integrity,omitempty"`
}

// Check returns the check called name (one of contract.Checks) of g: nil
// when the task has none or name is not a check.
func (g *Grade) Check(name string) *Result {
	if p := g.checkField(name); p != nil {
		return *p
	}
	return nil
}

// setCheck sets the check called name of g; a name that is not one of
// contract.Checks is ignored.
func (g *Grade) setCheck(name string, r *Result) {
	if p := g.checkField(name); p != nil {
		*p = r
	}
}

func (g *Grade) checkField(name string) **Result {
	switch name {
	case contract.CheckBuild:
		return &g.Build
	case contract.CheckTest:
		return &g.Test
	case contract.CheckPoC:
		return &g.PoC
	case contract.CheckIntentTest:
		return &g.IntentTest
	}
	return nil
}

// Call sends one request to the daemon listening on socket and returns its
// response. ctx bounds the whole exchange; a grade can take as long as
// every script's time limit put together.
func Call(ctx context.Context, socket, op string) (*Response, error) {
	return Do(ctx, socket, Request{Op: op})
}

// Do sends req to the daemon listening on socket and returns its
// response, as Call does.
func Do(ctx context.Context, socket string, req Request) (*Response, error) {
	op := req.Op
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, fmt.Errorf("connecting to the ssebench daemon: %w", err)
	}
	defer conn.Close()
	// Unblock the read when ctx ends; the error is then ctx's.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	werr := json.NewEncoder(conn).Encode(req)
	var resp Response
	if err := json.NewDecoder(conn).Decode(&resp); err != nil {
		// A daemon that refuses the peer answers and hangs up before
		// reading: a failed write may still have an answer waiting.
		if werr != nil {
			err = werr
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("waiting for the ssebench daemon's answer to %q: %w", op, ctx.Err())
		}
		return nil, fmt.Errorf("reading the ssebench daemon's answer to %q: %w", op, err)
	}
	return &resp, nil
}

// WaitReady pings socket until the daemon answers or ctx ends, so the
// entrypoint starts the agent only once the daemon can serve it.
func WaitReady(ctx context.Context, socket string) error {
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := Call(pctx, socket, OpPing)
		cancel()
		if err == nil && resp.OK {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = errors.New(resp.Error)
			}
			return fmt.Errorf("waiting for the ssebench daemon on %s: %w", socket, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Handler answers one request. admin tells which socket it came on.
type Handler interface {
	Handle(ctx context.Context, req Request, admin bool) Response
}

// Listen creates a Unix socket at path with the given mode, replacing a
// stale socket left by an earlier daemon. The socket is created in a
// directory made for it when missing (root-owned, 0755).
func Listen(path string, mode os.FileMode) (*net.UnixListener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("creating the socket directory: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("listening on %s: a file that is not a socket is in the way", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing the stale socket %s: %w", path, err)
		}
	}
	// The umask decides the mode between bind and chmod: keep others out
	// of that window.
	old := syscall.Umask(0o077)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	if err := os.Chmod(path, mode); err != nil {
		l.Close()
		return nil, fmt.Errorf("setting the mode of %s: %w", path, err)
	}
	return l, nil
}

// PeerFilter decides whether a peer, by uid, may talk to a socket; nil
// allows everyone.
type PeerFilter func(uid int) error

// Serve accepts connections on l until ctx ends, answering each request
// line with h. Connections are served concurrently; the handler decides
// what may run at once. allow, when set, is asked about each peer (its
// uid from SO_PEERCRED) before anything is read.
func Serve(ctx context.Context, l *net.UnixListener, h Handler, admin bool, allow PeerFilter) error {
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	for {
		conn, err := l.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("accepting on %s: %w", l.Addr(), err)
		}
		go serveConn(ctx, conn, h, admin, allow)
	}
}

func serveConn(ctx context.Context, conn *net.UnixConn, h Handler, admin bool, allow PeerFilter) {
	defer conn.Close()
	enc := json.NewEncoder(conn)
	enc.SetEscapeHTML(false)
	if allow != nil {
		uid, err := peerUID(conn)
		if err == nil {
			err = allow(uid)
		}
		if err != nil {
			_ = enc.Encode(Response{Result: Result{Exit: -1}, Error: err.Error()})
			return
		}
	}
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 4096), maxRequestLine)
	for sc.Scan() {
		var req Request
		var resp Response
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			resp = Response{Result: Result{Exit: -1}, Error: fmt.Sprintf("reading request: %v", err)}
		} else {
			resp = h.Handle(ctx, req, admin)
		}
		if err := enc.Encode(resp); err != nil {
			return
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		_ = enc.Encode(Response{Result: Result{Exit: -1}, Error: fmt.Sprintf("reading request: %v", err)})
	}
}

func peerUID(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if cerr != nil {
		return 0, fmt.Errorf("reading the peer's credentials: %w", cerr)
	}
	return int(cred.Uid), nil
}
