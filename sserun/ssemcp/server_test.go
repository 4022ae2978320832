package ssemcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/42-b3yond-6ug/ssebench/sserun"
)

// fakeDaemon is a daemon for a task whose build prints a long line and
// whose proof of concept crashes.
type fakeDaemon struct {
	d    *sserun.Daemon
	root string
}

func newFakeDaemon(t *testing.T, level int) *fakeDaemon {
	t.Helper()
	base := t.TempDir()
	root, src, work := filepath.Join(base, "ssebench"), filepath.Join(base, "src"), filepath.Join(base, "work")
	files := map[string]string{
		filepath.Join(root, "config.yaml"): `id: mcp-1
project: demo
language: go
source: ` + src + `
task_description:
  issue: demo crashes on a short input
  crash_report: [reports/crash.txt]
  bug_description: an off-by-one in the parser
scripts: {build: scripts/build.sh, test: scripts/test.sh, run: scripts/run.sh}
files: {poc: [pocs/short.txt]}
`,
		filepath.Join(root, "scripts", "build.sh"):  "echo building; head -c 5000 /dev/zero | tr '\\0' x; echo; echo built\n",
		filepath.Join(root, "scripts", "test.sh"):   "echo tests fail; exit 3\n",
		filepath.Join(root, "scripts", "run.sh"):    "echo CRASH on $(cat \"$1\"); exit 86\n",
		filepath.Join(root, "reports", "crash.txt"): "panic: index out of range\n",
		filepath.Join(root, "pocs", "short.txt"):    "ab\n",
		filepath.Join(src, "main.txt"):              "bug\n",
	}
	for name, content := range files {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := sserun.ReadTaskConfig(root)
	if err != nil {
		t.Fatal(err)
	}
	d, err := sserun.NewDaemon(root, cfg, sserun.WithWorkDir(work), sserun.WithDifficulty(level),
		sserun.WithEnv([]string{"PATH=" + os.Getenv("PATH")}))
	if err != nil {
		t.Fatal(err)
	}
	return &fakeDaemon{d: d, root: root}
}

// caller asks the daemon as the agent socket would.
func (f *fakeDaemon) caller() Caller {
	return func(ctx context.Context, req sserun.Request) (*sserun.Response, error) {
		r := f.d.Handle(ctx, req, false)
		return &r, nil
	}
}

// serveHTTP serves the daemon's tools over streamable HTTP and returns the
// endpoint.
func serveHTTP(t *testing.T, f *fakeDaemon, opts ...Option) string {
	t.Helper()
	s, err := NewServer(context.Background(), f.caller(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(Handler(s))
	t.Cleanup(hs.Close)
	return hs.URL + Path
}

// connect connects the SDK's own client to endpoint.
func connect(t *testing.T, endpoint string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatalf("Connect() = %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("ListTools() = %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if len(tool.Description) < 80 {
			t.Errorf("tool %s: description %q is too short to guide a model", tool.Name, tool.Description)
		}
		schema, _ := json.Marshal(tool.InputSchema)
		if !strings.Contains(string(schema), `"type":"object"`) {
			t.Errorf("tool %s: input schema %s is not an object schema", tool.Name, schema)
		}
		if tool.OutputSchema == nil {
			t.Errorf("tool %s has no output schema", tool.Name)
		}
	}
	slices.Sort(names)
	return names
}

// call calls a tool and decodes its structured content into out.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s) = %v", name, err)
	}
	if out != nil && !res.IsError {
		data, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("CallTool(%s) structured content %s: %v", name, data, err)
		}
	}
	return res
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestConformance drives the server with the SDK's own client over
// streamable HTTP: initialize (Connect), tools/list and tools/call.
func TestConformance(t *testing.T) {
	f := newFakeDaemon(t, 2)
	cs := connect(t, serveHTTP(t, f, WithOutputLimit(100)))
	if got := cs.InitializeResult(); got == nil || got.ServerInfo == nil || got.ServerInfo.Name != "ssebench" || got.Capabilities.Tools == nil {
		t.Fatalf("initialize result = %+v, want the ssebench server with tools", got)
	}
	if diff := cmp.Diff([]string{"build", "run_pocs", "status", "task_info", "test"}, toolNames(t, cs)); diff != "" {
		t.Errorf("tools at difficulty 2 (-want +got):\n%s", diff)
	}

	var info sserun.TaskInfo
	res := call(t, cs, "task_info", nil, &info)
	if res.IsError || info.BugDescription != "an off-by-one in the parser" || info.Issue != "" || len(info.CrashReports) != 1 || info.Difficulty != 2 {
		t.Errorf("task_info = %+v (%s), want the bug description and crash report only", info, textOf(res))
	}
	if !strings.Contains(textOf(res), "## Bug description") {
		t.Errorf("task_info text = %q", textOf(res))
	}

	var build ScriptOutput
	res = call(t, cs, "build", nil, &build)
	if res.IsError || !build.Passed || build.ExitStatus != 0 || !strings.HasSuffix(build.Output, "x\nbuilt\n") {
		t.Errorf("build = %+v", build)
	}
	// 9 + 5001 + 6 bytes, of which the last 100 are returned.
	if len(build.Output) != 100 || build.OutputBytes != 5016 || build.OutputCutBytes != 4916 {
		t.Errorf("build output %d bytes of %d, %d cut; want 100 of 5016, 4916 cut", len(build.Output), build.OutputBytes, build.OutputCutBytes)
	}
	if txt := textOf(res); !strings.Contains(txt, "build passed (exit status 0)") || !strings.Contains(txt, "4916 cut from the front") {
		t.Errorf("build text = %q", txt)
	}
	res = call(t, cs, "build", map[string]any{"max_output_bytes": 10000}, &build)
	if res.IsError || build.OutputCutBytes != 0 || !strings.HasPrefix(build.Output, "building\n") {
		t.Errorf("build with max_output_bytes = %+v", build)
	}

	var test ScriptOutput
	if res := call(t, cs, "test", nil, &test); res.IsError || test.Passed || test.ExitStatus != 3 || !strings.Contains(textOf(res), "test FAILED (exit status 3)") {
		t.Errorf("test = %+v, %q: want a failure that is not a tool error", test, textOf(res))
	}

	var pocs ScriptOutput
	res = call(t, cs, "run_pocs", nil, &pocs)
	if res.IsError || pocs.Passed || pocs.ExitStatus != 86 || !strings.Contains(pocs.Output, "CRASH on ab") ||
		len(pocs.PoCs) != 1 || pocs.PoCs[0].Name != "pocs/short.txt" || pocs.PoCs[0].ExitStatus == nil {
		t.Errorf("run_pocs = %+v", pocs)
	}

	var st sserun.Status
	if res := call(t, cs, "status", nil, &st); res.IsError || st.Calls != 5 || st.CallsByTool["build"] != 2 || st.Difficulty != 2 {
		t.Errorf("status = %+v (%s), want the 5 calls before it", st, textOf(res))
	}

	// A bad argument and a refused call are tool errors, not protocol
	// failures; an unknown tool is a JSON-RPC error.
	if res := call(t, cs, "build", map[string]any{"max_output_bytes": "lots"}, nil); !res.IsError {
		t.Errorf("build with a bad argument = %+v, want a tool error", res)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shell"}); err == nil {
		t.Error("CallTool(shell) succeeded")
	}
	f.d.Handle(context.Background(), sserun.Request{Op: sserun.OpAgentEnd}, true)
	res = call(t, cs, "build", nil, nil)
	if !res.IsError || !strings.Contains(textOf(res), "the agent phase is over") {
		t.Errorf("build after the agent phase = %+v (%q), want a tool error", res, textOf(res))
	}
}

func TestLevels(t *testing.T) {
	t.Run("4 has no run_pocs", func(t *testing.T) {
		cs := connect(t, serveHTTP(t, newFakeDaemon(t, 4)))
		if diff := cmp.Diff([]string{"build", "status", "task_info", "test"}, toolNames(t, cs)); diff != "" {
			t.Errorf("tools at difficulty 4 (-want +got):\n%s", diff)
		}
		var info sserun.TaskInfo
		call(t, cs, "task_info", nil, &info)
		if info.Issue == "" || info.BugDescription != "" || info.CrashReports != nil || info.PoCCount != 0 {
			t.Errorf("task_info at 4 = %+v, want the issue only", info)
		}
	})
	t.Run("3 says pass or fail", func(t *testing.T) {
		cs := connect(t, serveHTTP(t, newFakeDaemon(t, 3)))
		var pocs ScriptOutput
		res := call(t, cs, "run_pocs", nil, &pocs)
		want := []PoCOutcome{{Name: "PoC 1", Passed: false}}
		if res.IsError || pocs.Passed || strings.Contains(pocs.Output, "CRASH") || !cmp.Equal(want, pocs.PoCs) {
			t.Errorf("run_pocs at 3 = %+v, want pass/fail only", pocs)
		}
		if txt := textOf(res); strings.Contains(txt, "CRASH") || strings.Contains(txt, "short.txt") || !strings.Contains(txt, "PoC 1: fail") {
			t.Errorf("run_pocs text at 3 = %q", txt)
		}
		tools, _ := cs.ListTools(context.Background(), nil)
		for _, tool := range tools.Tools {
			if tool.Name == "run_pocs" && !strings.Contains(tool.Description, "without output") {
				t.Errorf("run_pocs description at 3 = %q, want it to say there is no output", tool.Description)
			}
		}
	})
	t.Run("0 shows the PoCs", func(t *testing.T) {
		cs := connect(t, serveHTTP(t, newFakeDaemon(t, 0)))
		var info sserun.TaskInfo
		res := call(t, cs, "task_info", nil, &info)
		if len(info.PoCs) != 1 || info.PoCs[0].Content != "ab\n" || info.Issue == "" {
			t.Errorf("task_info at 0 = %+v, want the PoC's contents", info)
		}
		if !strings.Contains(textOf(res), "## Proof of concept: PoC 1: short.txt") {
			t.Errorf("task_info text at 0 = %q", textOf(res))
		}
	})
}

// TestMalformed sends what no client should: each gets a JSON-RPC error
// or an HTTP error, and the server goes on serving.
func TestMalformed(t *testing.T) {
	endpoint := serveHTTP(t, newFakeDaemon(t, 2))
	post := func(body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %q: %v", body, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, body := range []string{
		`{not json`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"build"}}`, // no session
		`{"jsonrpc":"1.0","id":1}`,
		``,
	} {
		code, got := post(body)
		t.Logf("POST %q = %d %q", body, code, got)
		if !strings.Contains(got, `"jsonrpc":"2.0"`) || !strings.Contains(got, `"error":{"code":`) {
			t.Errorf("POST %q = %d %q, want a JSON-RPC error", body, code, got)
		}
	}
	// Still serving.
	cs := connect(t, endpoint)
	if len(toolNames(t, cs)) != 5 {
		t.Error("the server stopped serving after malformed requests")
	}
}

// TestStdio runs the server over a stream, as `entrypoint --mcp-stdio`
// does on its standard input and output.
func TestStdio(t *testing.T) {
	f := newFakeDaemon(t, 2)
	s, err := NewServer(context.Background(), f.caller())
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var build ScriptOutput
	if res := call(t, cs, "build", nil, &build); res.IsError || !build.Passed {
		t.Errorf("build over a stream = %+v", build)
	}
}

func TestScriptOutputCut(t *testing.T) {
	tests := []struct {
		name      string
		resp      sserun.Response
		limit     int
		want      string
		total     int64
		cut       int64
		wantInTxt string
	}{
		{"short", sserun.Response{Result: sserun.Result{OK: true, Output: "ok\n"}}, 10, "ok\n", 3, 0, "Output (3 bytes):\nok\n"},
		{"cut here", sserun.Response{Result: sserun.Result{Output: "0123456789"}}, 4, "6789", 10, 6, "the last 4 of 10 bytes (6 cut from the front"},
		{"cut by the daemon too", sserun.Response{Result: sserun.Result{
			Output: "[ssebench: the first 100 bytes of output were cut]\n0123456789", OutputCut: 100}}, 4, "6789", 110, 106, "106 cut"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scriptOutput("build", &tt.resp, tt.limit)
			if got.Output != tt.want || got.OutputBytes != tt.total || got.OutputCutBytes != tt.cut {
				t.Errorf("scriptOutput() = %q, %d bytes, %d cut; want %q, %d, %d", got.Output, got.OutputBytes, got.OutputCutBytes, tt.want, tt.total, tt.cut)
			}
			if txt := got.text(); !strings.Contains(txt, tt.wantInTxt) {
				t.Errorf("text() = %q, want %q in it", txt, tt.wantInTxt)
			}
		})
	}
}

// TestOutputLimitOption: a limit that is not positive is refused when the
// server is made, not ignored; a larger one is kept within the daemon's.
func TestOutputLimitOption(t *testing.T) {
	for _, n := range []int{0, -1} {
		if _, err := makeOptions(WithOutputLimit(n)); err == nil || !strings.Contains(err.Error(), "must be positive") {
			t.Errorf("WithOutputLimit(%d) = %v, want a refusal", n, err)
		}
	}
	o, err := makeOptions(WithOutputLimit(MaxOutputLimit * 2))
	if err != nil || o.outputLimit != MaxOutputLimit {
		t.Errorf("WithOutputLimit(2×max) = %d, %v; want %d", o.outputLimit, err, MaxOutputLimit)
	}
}
