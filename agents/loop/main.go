// Command loop is ssebench's reference agent: a tool-use loop over the
// OpenAI-compatible chat completions API with the run's MCP tools
// (task_info, build, test, run_pocs, status: SPEC.md section 13, from
// $SSE_MCP_URL or http://127.0.0.1:3000/mcp) plus two of its own, a shell
// and a file edit. Without an MCP server it works with its own two. It
// talks to $SSE_BASE_URL with $SSE_API_KEY as
// $SSE_MODEL_NAME (in a restricted run: the run's model gateway) and works
// in the directory it starts in (the task's source tree).
//
// The first message is $SSE_TASK_PROMPT when set, else a generic request
// to find and fix the bug, naming `entrypoint --call build|test|poc`.
// The loop ends when the model answers without a tool call (exit 0), after
// SSE_LOOP_MAX_TURNS turns (default 50, exit 3), or on an error from the
// model API that retrying does not cure (exit 1; a refusal such as 429 is
// not retried and its body is printed).
//
// ssebench compiles it for the agent image (agent.yaml's go_build), static
// and for the run's platform; by hand:
//
//	CGO_ENABLED=0 go build -trimpath -o agents/loop/sse-loop ./agents/loop
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	defaultMaxTurns = 50
	// shellTimeout bounds one shell command: a build or a test run.
	shellTimeout = 10 * time.Minute
	// maxToolOutput is how much of a command's output goes back to the
	// model: its end, where errors are.
	maxToolOutput = 16 << 10
	// requestTimeout bounds one model request; the gateway has its own.
	requestTimeout = 10 * time.Minute
	retries        = 3
)

const defaultPrompt = `You are working in a software repository at %s. A bug in it makes the program crash or misbehave. Find the bug and fix it in the source with the smallest correct change.

Tools: "shell" runs a bash command in the repository; "edit_file" replaces text in a file. To build or run the task's tests and proofs of concept, run "entrypoint --call build", "entrypoint --call test" or "entrypoint --call poc" in the shell. When the fix is done, answer with a short summary and no tool call.`

const mcpPrompt = `

The benchmark's own tools are there too (%s): "task_info" tells what is known about the bug, "build", "test" and "run_pocs" build the program, run its tests and its proofs of concept, "status" tells what you have run so far.`

var tools = []any{
	map[string]any{"type": "function", "function": map[string]any{
		"name":        "shell",
		"description": "Run a bash command in the repository and return its exit status and output (the end of it when long).",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{
			"command": map[string]any{"type": "string", "description": "the bash command line"},
		}, "required": []string{"command"}},
	}},
	map[string]any{"type": "function", "function": map[string]any{
		"name":        "edit_file",
		"description": "Replace the one occurrence of old_text in a file with new_text. With old_text empty, write new_text as the whole file (creating it).",
		"parameters": map[string]any{"type": "object", "properties": map[string]any{
			"path":     map[string]any{"type": "string", "description": "file path, relative to the repository"},
			"old_text": map[string]any{"type": "string", "description": "the exact text to replace; must occur exactly once"},
			"new_text": map[string]any{"type": "string", "description": "the replacement"},
		}, "required": []string{"path", "new_text"}},
	}},
}

type message struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatResponse struct {
	Choices []struct {
		Message      message `json:"message"`
		FinishReason string  `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func str(s string) *string { return &s }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Getenv, os.Stdout))
}

// agent is one run of the loop.
type agent struct {
	base, key, model string
	dir              string
	client           *http.Client
	log              io.Writer
	// mcp is the run's MCP server, nil when there is none.
	mcp *mcpTools
	// tools are the chat API's tool definitions: ours, then MCP's.
	tools []any
}

func run(ctx context.Context, getenv func(string) string, log io.Writer) int {
	dir, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(log, "loop:", err)
		return 1
	}
	a := &agent{
		base:   strings.TrimSuffix(getenv("SSE_BASE_URL"), "/"),
		key:    getenv("SSE_API_KEY"),
		model:  getenv("SSE_MODEL_NAME"),
		dir:    dir,
		client: &http.Client{Timeout: requestTimeout},
		log:    log,
	}
	if a.base == "" || a.model == "" || a.model == "none" {
		fmt.Fprintln(log, "loop: no model: SSE_BASE_URL and SSE_MODEL_NAME must be set (ssebench run --model NAME)")
		return 1
	}
	maxTurns := defaultMaxTurns
	if v, err := strconv.Atoi(getenv("SSE_LOOP_MAX_TURNS")); err == nil && v > 0 {
		maxTurns = v
	}
	a.tools = tools
	if m, err := connectMCP(ctx, mcpEndpoint(getenv)); err != nil {
		fmt.Fprintf(log, "loop: no MCP tools (%v): shell and edit_file only\n", err)
	} else {
		defer m.close()
		a.mcp = m
		a.tools = append(append([]any{}, tools...), m.defs...)
		fmt.Fprintf(log, "loop: MCP tools: %s\n", m.list())
	}
	prompt := getenv("SSE_TASK_PROMPT")
	if prompt == "" {
		prompt = fmt.Sprintf(defaultPrompt, dir)
		if a.mcp != nil {
			prompt += fmt.Sprintf(mcpPrompt, a.mcp.list())
		}
	}
	msgs := []message{{Role: "user", Content: str(prompt)}}
	for turn := 1; turn <= maxTurns; turn++ {
		resp, err := a.complete(ctx, msgs)
		if err != nil {
			fmt.Fprintf(log, "loop: turn %d: %v\n", turn, err)
			return 1
		}
		if len(resp.Choices) == 0 {
			fmt.Fprintf(log, "loop: turn %d: the model's answer has no choices\n", turn)
			return 1
		}
		m := resp.Choices[0].Message
		m.Role = "assistant"
		fmt.Fprintf(log, "loop: turn %d: %d+%d tokens\n", turn, resp.Usage.PromptTokens, resp.Usage.CompletionTokens)
		if m.Content != nil && *m.Content != "" {
			fmt.Fprintf(log, "model: %s\n", *m.Content)
		}
		msgs = append(msgs, m)
		if len(m.ToolCalls) == 0 {
			fmt.Fprintln(log, "loop: done")
			return 0
		}
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(log, "tool %s %s\n", tc.Function.Name, tc.Function.Arguments)
			out := a.call(ctx, tc.Function.Name, tc.Function.Arguments)
			fmt.Fprintf(log, "result: %s\n", indent(cutHead(out, 2000)))
			msgs = append(msgs, message{Role: "tool", ToolCallID: tc.ID, Content: str(out)})
		}
	}
	fmt.Fprintf(log, "loop: stopped after %d turns (SSE_LOOP_MAX_TURNS)\n", maxTurns)
	return 3
}

// apiError is a refusal or failure of the model API.
type apiError struct {
	status int
	body   string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("the model API answered %d %s: %s", e.status, http.StatusText(e.status), strings.TrimSpace(e.body))
}

// retryable says whether another try may succeed: the upstream or the
// gateway failing, not a refusal.
func retryable(err error) bool {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status >= 500
	}
	return !errors.Is(err, context.Canceled)
}

func (a *agent) complete(ctx context.Context, msgs []message) (*chatResponse, error) {
	body, err := json.Marshal(map[string]any{"model": a.model, "messages": msgs, "tools": a.tools})
	if err != nil {
		return nil, err
	}
	var last error
	for try := 0; try < retries; try++ {
		if try > 0 {
			fmt.Fprintf(a.log, "loop: retrying after %v\n", last)
			select {
			case <-time.After(time.Duration(try) * 2 * time.Second):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		resp, err := a.post(ctx, body)
		if err == nil {
			return resp, nil
		}
		if last = err; !retryable(err) {
			break
		}
	}
	return nil, last
}

func (a *agent) post(ctx context.Context, body []byte) (*chatResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if a.key != "" {
		req.Header.Set("Authorization", "Bearer "+a.key)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the model's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &apiError{status: resp.StatusCode, body: cutHead(string(data), 2000)}
	}
	var cr chatResponse
	if err := json.Unmarshal(data, &cr); err != nil {
		return nil, fmt.Errorf("the model's answer is not JSON: %w", err)
	}
	return &cr, nil
}

// call runs a tool and returns what the model reads back.
func (a *agent) call(ctx context.Context, name, args string) string {
	switch name {
	case "shell":
		var p struct{ Command string }
		if err := json.Unmarshal([]byte(args), &p); err != nil || p.Command == "" {
			return "error: shell needs {\"command\": \"...\"}"
		}
		return a.shell(ctx, p.Command)
	case "edit_file":
		var p struct {
			Path    string `json:"path"`
			OldText string `json:"old_text"`
			NewText string `json:"new_text"`
		}
		if err := json.Unmarshal([]byte(args), &p); err != nil || p.Path == "" {
			return "error: edit_file needs {\"path\", \"old_text\", \"new_text\"}"
		}
		if err := a.edit(p.Path, p.OldText, p.NewText); err != nil {
			return "error: " + err.Error()
		}
		return "edited " + p.Path
	}
	if a.mcp.has(name) {
		return a.mcp.call(ctx, name, args)
	}
	if a.mcp != nil {
		return fmt.Sprintf("error: no tool %q: the tools are shell, edit_file, %s", name, a.mcp.list())
	}
	return fmt.Sprintf("error: no tool %q: the tools are shell and edit_file", name)
}

func (a *agent) shell(ctx context.Context, command string) string {
	ctx, cancel := context.WithTimeout(ctx, shellTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir = a.dir
	cmd.Stdin = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		return "error: " + err.Error()
	}
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Sprintf("timed out after %s\n%s", shellTimeout, cutTail(string(out), maxToolOutput))
	}
	return fmt.Sprintf("exit %d\n%s", code, cutTail(string(out), maxToolOutput))
}

func (a *agent) edit(path, old, new string) error {
	if !filepath.IsAbs(path) {
		path = filepath.Join(a.dir, path)
	}
	if old == "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		return os.WriteFile(path, []byte(new), 0o644)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	switch n := strings.Count(string(data), old); n {
	case 0:
		return fmt.Errorf("old_text does not occur in %s: read the file again and copy the text exactly", path)
	case 1:
	default:
		return fmt.Errorf("old_text occurs %d times in %s: include more lines to make it unique", n, path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(strings.Replace(string(data), old, new, 1)), fi.Mode().Perm())
}

func cutTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("[%d bytes cut]\n", len(s)-n) + s[len(s)-n:]
}

func cutHead(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("\n[%d bytes cut]", len(s)-n)
}

func indent(s string) string { return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") }
