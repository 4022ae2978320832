// Package ssemcp is the agent's MCP server (SPEC.md section 13): the
// tools task_info, build, test, run_pocs and status, each a request to the
// daemon's agent socket. It never reads the task files itself: the daemon
// alone decides what the difficulty level reveals, so MCP and `entrypoint
// --call` give the same answers.
//
// Two programs serve it: ssebench-mcp, as root on 127.0.0.1:3000 with the
// streamable HTTP transport at /mcp (Handler), and `entrypoint
// --mcp-stdio`, which an agent spawns as model and which speaks MCP on its
// standard input and output.
package ssemcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/42-b3yond-6ug/ssebench/sserun"
)

// Version is the server's version in the MCP handshake.
const Version = "1.0.0"

// Path is where Handler serves the streamable HTTP transport.
const Path = "/mcp"

// DefaultOutputLimit is how many bytes of a script's output a tool returns
// when the call does not say: the end of it, where compilers and test
// runners say what failed. MaxOutputLimit is the most a call may ask for
// (the daemon keeps no more).
const (
	DefaultOutputLimit = 32 << 10
	MaxOutputLimit     = sserun.DefaultOutputLimit
)

// Caller sends one request to the daemon.
type Caller func(ctx context.Context, req sserun.Request) (*sserun.Response, error)

// SocketCaller returns a Caller for the daemon's agent socket; client
// names this server in tool_calls.jsonl ("mcp", "mcp-stdio").
func SocketCaller(socket, client string) Caller {
	return func(ctx context.Context, req sserun.Request) (*sserun.Response, error) {
		req.Client = client
		return sserun.Do(ctx, socket, req)
	}
}

// Option configures NewServer.
type Option func(*options) error

type options struct {
	outputLimit int
}

// makeOptions applies opts over the defaults.
func makeOptions(opts ...Option) (options, error) {
	o := options{outputLimit: DefaultOutputLimit}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return options{}, err
		}
	}
	return o, nil
}

// WithOutputLimit sets how many bytes of output a tool returns when the
// call does not say, at most MaxOutputLimit (the daemon keeps no more). A
// limit of 0 or less is refused. The default value is DefaultOutputLimit.
func WithOutputLimit(n int) Option {
	return func(o *options) error {
		if n <= 0 {
			return fmt.Errorf("the MCP server's output limit is %d bytes: it must be positive", n)
		}
		o.outputLimit = min(n, MaxOutputLimit)
		return nil
	}
}

// NewServer asks the daemon which tools the agent has at this run's
// difficulty level and returns an MCP server with those tools.
func NewServer(ctx context.Context, call Caller, opts ...Option) (*mcp.Server, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	resp, err := call(ctx, sserun.Request{Op: sserun.OpTools})
	if err != nil {
		return nil, err
	}
	if resp.Error != "" {
		return nil, fmt.Errorf("asking the daemon for the agent's tools: %s", resp.Error)
	}
	level := sserun.DefaultDifficulty
	if resp.Status != nil {
		level = resp.Status.Difficulty
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "ssebench", Title: "SSEBench task tools", Version: Version}, &mcp.ServerOptions{
		Instructions: instructions,
		// No logging capability: the server has nothing to log to the
		// client.
		Capabilities: &mcp.ServerCapabilities{},
	})
	t := &tools{call: call, limit: o.outputLimit, level: level}
	for _, name := range resp.Tools {
		switch name {
		case sserun.ToolTaskInfo:
			mcp.AddTool(s, &mcp.Tool{
				Name:        name,
				Title:       "Task description",
				Description: taskInfoDescription,
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
			}, t.taskInfo)
		case sserun.ToolBuild, sserun.ToolTest, sserun.ToolRunPoCs:
			mcp.AddTool(s, &mcp.Tool{
				Name:        name,
				Title:       scriptTitles[name],
				Description: t.scriptDescription(name),
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
			}, t.script(name))
		case sserun.ToolStatus:
			mcp.AddTool(s, &mcp.Tool{
				Name:        name,
				Title:       "Time left and calls made",
				Description: statusDescription,
				Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)},
			}, t.status)
		}
	}
	return s, nil
}

// Handler serves s with the streamable HTTP transport at Path. The SDK's
// DNS-rebinding protection stays on: a request that reaches the loopback
// address with another host name is refused.
func Handler(s *mcp.Server) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(Path, jsonRPCErrors(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)))
	return mux
}

// jsonRPCErrors answers a POST whose body is not a JSON-RPC message with a
// JSON-RPC error (parse error or invalid request, id null), as JSON-RPC
// says; the SDK would answer with a line of plain text, which a client
// cannot tell from a proxy's error page.
func jsonRPCErrors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, mcp.DefaultMaxRequestBodyBytes+1))
		r.Body.Close()
		if err == nil && len(body) <= mcp.DefaultMaxRequestBodyBytes {
			_, err = jsonrpc.DecodeMessage(body)
		}
		if err != nil {
			code, msg := jsonrpc.CodeInvalidRequest, "Invalid Request: "
			if !json.Valid(body) {
				code, msg = jsonrpc.CodeParseError, "Parse error: "
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{
				"jsonrpc": "2.0", "id": nil,
				"error": map[string]any{"code": code, "message": msg + err.Error()},
			})
			return
		}
		// An oversized body goes on as it came, for the SDK's own answer.
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

const instructions = `These tools belong to the SSEBench task you are solving: fix a security bug in the project's source tree (its path is in task_info). Call task_info first. build, test and run_pocs each run on a fresh copy of your current tree, so save your edits before calling them; they never change your tree. The grade runs the same scripts, plus tests you cannot see. status says how much time you have left.`

const taskInfoDescription = `Describe the task: the bug to fix, where the project's source tree is, and which tools you have. How much it tells (issue text, bug description, crash reports, proof-of-concept files) depends on this run's difficulty level; notes say when the task lacks a field and what you get instead. Takes no arguments. Call it first.`

const statusDescription = `Report the agent phase: the difficulty level, the time elapsed and left before you are stopped, the tool calls made so far (by tool), and how long one build, test or proof-of-concept run may take. Takes no arguments.`

var scriptTitles = map[string]string{
	sserun.ToolBuild:   "Build the project",
	sserun.ToolTest:    "Run the project's tests",
	sserun.ToolRunPoCs: "Run the proofs of concept",
}

func (t *tools) scriptDescription(name string) string {
	common := ` It runs on a fresh copy of your current source tree (your files are not changed, and nothing it writes is kept), as the grader runs it, and returns the exit status, the duration and the end of the output (max_output_bytes, default %d), saying how many bytes were cut. Only one script runs at a time: a call waits for the one before it.`
	common = fmt.Sprintf(common, t.limit)
	switch name {
	case sserun.ToolBuild:
		return `Build the project with the task's build script, to check that your change compiles.` + common
	case sserun.ToolTest:
		return `Run the task's test script (it builds first when it needs to), to check that your change breaks nothing.` + common
	}
	d := `Run the task's proofs of concept, inputs that trigger the bug, against a build of your current source tree: each passes when the program handles its input without the crash or misbehaviour the task is about, so all passing is what a fix looks like.`
	if t.level >= sserun.MaxDifficulty-1 {
		return d + ` At this difficulty level it says only whether each proof of concept passed or failed, without output.` + fmt.Sprintf(strings.Replace(common, " and the end of the output (max_output_bytes, default %d), saying how many bytes were cut", "", 1), t.limit)
	}
	return d + ` It returns each one's result and the run script's output.` + common
}

// tools are the handlers.
type tools struct {
	call  Caller
	limit int
	level int
}

// NoInput is the input of a tool that takes no arguments.
type NoInput struct{}

// ScriptInput is the input of build, test and run_pocs.
type ScriptInput struct {
	MaxOutputBytes int `json:"max_output_bytes,omitempty" jsonschema:"how many bytes of the end of the output to return (default 32768, at most 1048576)"`
}

// ScriptOutput is what build, test and run_pocs return.
type ScriptOutput struct {
	Tool           string       `json:"tool" jsonschema:"the tool that ran"`
	Passed         bool         `json:"passed" jsonschema:"true when the script exited with status 0 (for run_pocs: every proof of concept passed)"`
	ExitStatus     int          `json:"exit_status" jsonschema:"the script's exit status: 124 when it ran out of time, 128+N when signal N killed it"`
	DurationMS     int64        `json:"duration_ms" jsonschema:"how long the script ran, in milliseconds"`
	TimedOut       bool         `json:"timed_out,omitempty" jsonschema:"true when the script was stopped at its time limit"`
	Output         string       `json:"output" jsonschema:"the end of the script's standard output and error, interleaved"`
	OutputBytes    int64        `json:"output_bytes" jsonschema:"the size of the whole output, in bytes"`
	OutputCutBytes int64        `json:"output_cut_bytes" jsonschema:"how many bytes were cut from the front of the output"`
	PoCs           []PoCOutcome `json:"pocs,omitempty" jsonschema:"for run_pocs: each proof of concept's result"`
}

// PoCOutcome is one proof of concept's result.
type PoCOutcome struct {
	Name       string `json:"name" jsonschema:"the proof of concept"`
	Passed     bool   `json:"passed"`
	ExitStatus *int   `json:"exit_status,omitempty" jsonschema:"the run script's exit status (absent when the difficulty level hides it)"`
}

// callTool asks the daemon and turns a refusal into an error, which the
// SDK returns as a tool error (isError), not a protocol failure.
func (t *tools) callTool(ctx context.Context, op string) (*sserun.Response, error) {
	resp, err := t.call(ctx, sserun.Request{Op: op})
	if err != nil {
		return nil, fmt.Errorf("the task's daemon did not answer: %w", err)
	}
	if resp.Error != "" {
		return nil, errors.New(resp.Error)
	}
	return resp, nil
}

func (t *tools) taskInfo(ctx context.Context, _ *mcp.CallToolRequest, _ NoInput) (*mcp.CallToolResult, *sserun.TaskInfo, error) {
	resp, err := t.callTool(ctx, sserun.OpTaskInfo)
	if err != nil {
		return nil, nil, err
	}
	if resp.Info == nil {
		return nil, nil, errors.New("the task's daemon sent no task information")
	}
	return text(resp.Info.Text()), resp.Info, nil
}

func (t *tools) status(ctx context.Context, _ *mcp.CallToolRequest, _ NoInput) (*mcp.CallToolResult, *sserun.Status, error) {
	resp, err := t.callTool(ctx, sserun.OpStatus)
	if err != nil {
		return nil, nil, err
	}
	if resp.Status == nil {
		return nil, nil, errors.New("the task's daemon sent no status")
	}
	return text(resp.Output), resp.Status, nil
}

func (t *tools) script(name string) mcp.ToolHandlerFor[ScriptInput, *ScriptOutput] {
	op := name
	if name == sserun.ToolRunPoCs {
		op = sserun.OpPoC
	}
	return func(ctx context.Context, _ *mcp.CallToolRequest, in ScriptInput) (*mcp.CallToolResult, *ScriptOutput, error) {
		limit := t.limit
		if in.MaxOutputBytes > 0 {
			limit = min(in.MaxOutputBytes, MaxOutputLimit)
		}
		resp, err := t.callTool(ctx, op)
		if err != nil {
			return nil, nil, err
		}
		out := scriptOutput(name, resp, limit)
		return text(out.text()), out, nil
	}
}

// scriptOutput turns the daemon's answer into the tool's, its output cut
// to its last limit bytes.
func scriptOutput(name string, resp *sserun.Response, limit int) *ScriptOutput {
	body, cut := resp.Output, resp.OutputCut
	// The daemon's own marker says what ScriptOutput says in fields.
	if cut > 0 {
		if _, rest, ok := strings.Cut(body, "\n"); ok && strings.HasPrefix(body, "[ssebench: ") {
			body = rest
		}
	}
	total := cut + int64(len(body))
	if len(body) > limit {
		cut += int64(len(body) - limit)
		body = body[len(body)-limit:]
	}
	out := &ScriptOutput{
		Tool: name, Passed: resp.OK, ExitStatus: resp.Exit, DurationMS: resp.DurationMS,
		TimedOut: resp.TimedOut, Output: body, OutputBytes: total, OutputCutBytes: cut,
	}
	for _, p := range resp.PoCs {
		out.PoCs = append(out.PoCs, PoCOutcome{Name: p.Name, Passed: p.OK, ExitStatus: p.Exit})
	}
	return out
}

// text renders the result for a model that reads text content.
func (o *ScriptOutput) text() string {
	var b strings.Builder
	state := "passed"
	if !o.Passed {
		state = "FAILED"
	}
	fmt.Fprintf(&b, "%s %s (exit status %d) in %s", o.Tool, state, o.ExitStatus, (time.Duration(o.DurationMS) * time.Millisecond).Round(time.Millisecond))
	if o.TimedOut {
		b.WriteString(", stopped at its time limit")
	}
	b.WriteString(".\n")
	for _, p := range o.PoCs {
		s := "pass"
		if !p.Passed {
			s = "fail"
		}
		if p.ExitStatus != nil {
			fmt.Fprintf(&b, "- %s: %s (exit status %d)\n", p.Name, s, *p.ExitStatus)
		} else {
			fmt.Fprintf(&b, "- %s: %s\n", p.Name, s)
		}
	}
	if o.Tool == sserun.ToolRunPoCs && slices.ContainsFunc(o.PoCs, func(p PoCOutcome) bool { return p.ExitStatus == nil }) {
		return b.String()
	}
	if o.OutputCutBytes > 0 {
		fmt.Fprintf(&b, "\nOutput: the last %d of %d bytes (%d cut from the front; ask for more with max_output_bytes):\n", len(o.Output), o.OutputBytes, o.OutputCutBytes)
	} else {
		fmt.Fprintf(&b, "\nOutput (%d bytes):\n", o.OutputBytes)
	}
	b.WriteString(o.Output)
	return b.String()
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
