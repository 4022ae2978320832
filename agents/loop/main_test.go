package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/gateway/gatewaytest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// noMCP is an MCP endpoint where nothing listens.
const noMCP = "http://127.0.0.1:1/mcp"

// TestLoop runs the loop against the scripted server: the script's tool
// calls edit a file and run a command, then the model says it is done.
func TestLoop(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc f() int { return 1 }\n"), 0o644)
	script := []gatewaytest.Reply{
		{Match: "Find the bug", Text: "Let me fix f.", ToolCalls: []gatewaytest.ToolCall{
			{Name: "edit_file", Arguments: `{"path":"main.go","old_text":"return 1","new_text":"return 2"}`},
			{Name: "shell", Arguments: `{"command":"grep -c 'return 2' main.go; exit 4"}`},
		}},
		{Match: "exit 4", Text: "Fixed."},
	}
	up, err := gatewaytest.New(script, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	t.Chdir(dir)
	var log bytes.Buffer
	env := map[string]string{"SSE_BASE_URL": up.URL + "/v1", "SSE_API_KEY": "k", "SSE_MODEL_NAME": "scripted", "SSE_MCP_URL": noMCP}
	if code := run(context.Background(), func(k string) string { return env[k] }, &log); code != 0 {
		t.Fatalf("run() = %d\n%s", code, log.String())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "main.go")); !strings.Contains(string(b), "return 2") {
		t.Errorf("main.go = %s, want the edit", b)
	}
	got := up.Received()
	if len(got) != 2 || got[1].Turn != 1 {
		t.Fatalf("the server got %d requests, want 2", len(got))
	}
	if !strings.Contains(string(got[1].Body), `exit 4\n1\n`) || !strings.Contains(string(got[1].Body), "edited main.go") {
		t.Errorf("the second request does not carry the tool results: %s", got[1].Body)
	}
	if !strings.Contains(log.String(), "model: Fixed.") {
		t.Errorf("log:\n%s", log.String())
	}
}

// TestLoopRefused: a 429 from the gateway ends the loop at once, and the
// log shows it.
func TestLoopRefused(t *testing.T) {
	script := []gatewaytest.Reply{{ToolCalls: []gatewaytest.ToolCall{{Name: "shell", Arguments: `{"command":"true"}`}}}, {Text: "never"}}
	up, err := gatewaytest.New(script, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	u, _ := url.Parse(up.URL)
	gw, err := gateway.New(&gateway.Config{Upstream: gateway.Upstream{BaseURL: u, Key: "k"}}, gateway.WithLimits(gateway.Limits{MaxRequests: 1}))
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: gw}
	go srv.Serve(l)
	defer srv.Close()
	t.Chdir(t.TempDir())
	var log bytes.Buffer
	env := map[string]string{"SSE_BASE_URL": "http://" + l.Addr().String(), "SSE_API_KEY": gw.Token(), "SSE_MODEL_NAME": "scripted", "SSE_MCP_URL": noMCP}
	if code := run(context.Background(), func(k string) string { return env[k] }, &log); code != 1 {
		t.Errorf("run() = %d, want 1", code)
	}
	if s := log.String(); !strings.Contains(s, "429") || !strings.Contains(s, "max_requests") || strings.Contains(s, "retrying") {
		t.Errorf("log does not show one refusal with 429:\n%s", s)
	}
}

// TestLoopMCP: the MCP server's tools are offered to the model next to
// shell and edit_file, and a call of one reaches the server and its answer
// goes back to the model.
func TestLoopMCP(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "fake-ssebench", Version: "1"}, nil)
	calls := 0
	mcp.AddTool(srv, &mcp.Tool{Name: "task_info", Description: "what is known about the bug"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			calls++
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the crash is in f()"}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	script := []gatewaytest.Reply{
		{Match: "Find the bug", ToolCalls: []gatewaytest.ToolCall{{Name: "task_info", Arguments: `{}`}}},
		{Match: "the crash is in f()", Text: "Done."},
	}
	up, err := gatewaytest.New(script, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	t.Chdir(t.TempDir())
	var log bytes.Buffer
	env := map[string]string{"SSE_BASE_URL": up.URL + "/v1", "SSE_API_KEY": "k", "SSE_MODEL_NAME": "scripted", "SSE_MCP_URL": hs.URL}
	if code := run(context.Background(), func(k string) string { return env[k] }, &log); code != 0 {
		t.Fatalf("run() = %d\n%s", code, log.String())
	}
	if calls != 1 {
		t.Errorf("the MCP server got %d calls of task_info, want 1", calls)
	}
	got := up.Received()
	if len(got) != 2 {
		t.Fatalf("the model got %d requests, want 2\n%s", len(got), log.String())
	}
	if b := string(got[0].Body); !strings.Contains(b, `"name":"task_info"`) || !strings.Contains(b, `"name":"shell"`) {
		t.Errorf("the first request does not offer task_info and shell: %s", b)
	}
	if !strings.Contains(log.String(), "loop: MCP tools: task_info") {
		t.Errorf("log:\n%s", log.String())
	}
}
