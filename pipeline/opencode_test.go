package pipeline_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/gateway/gatewaytest"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
	"github.com/42-b3yond-6ug/ssebench/sserun/entrypoint"
)

// TestOpenCodeRun runs agents/opencode on the example Go task against the
// scripted model server, offline: the runtime image carries OpenCode from
// the npm registry (or its cache), the entrypoint starts its server as
// model with the run's gateway as provider, the agent attaches to it, the
// script's bash call applies the fix and checks that the host's key is in
// no process environment it can read, and the grade passes. model.jsonl
// shows the requests, opencode.log the server's output, and no file of
// the run folder holds the key.
func TestOpenCodeRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds images and runs a container")
	}
	bkAddr := testenv.RequireBuildKit(t)
	testenv.RequireContainerd(t)
	reg := testenv.RequireRegistry(t)
	osImage := testenv.OSImage(t)
	ctx := context.Background()
	repo := moduleDir(t)

	home := exampleHome(t, repo)
	cp(t, filepath.Join(repo, "agents", "opencode"), filepath.Join(home, "agents", "opencode"))
	e := newEnv(t, home, home, testenv.Unique(reg+"/ssebench-e2e-opencode29"), bkAddr)
	buildGoBase(t, ctx, e, repo, osImage)
	var log strings.Builder
	idx, err := runtimebin.Build(ctx, runtimebin.WithModuleDir(repo), runtimebin.WithTempDir(e.Store.TempDir()),
		runtimebin.WithPlatforms(v1.Platform{OS: "linux", Architecture: "amd64"}),
		runtimebin.WithOpenCode(runtimebin.DefaultOpenCodeVersion), runtimebin.WithLog(&log))
	if err != nil {
		t.Fatalf("building the runtime: %v", err)
	}
	if log.Len() > 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the runtime has no OpenCode: %s", log.String())
		}
		t.Skipf("the runtime has no OpenCode: %s", log.String())
	}
	if err := e.Store.WriteIndex(ctx, mustRef(t, e.Names.Runtime()), idx); err != nil {
		t.Fatal(err)
	}
	x := &e2e{env: e, home: home, runs: filepath.Join(home, "runs"), store: e.Store}

	patch := read(t, filepath.Join(repo, "datasets", "examples", e2eTask, "sse", "diffs", "patch.diff"))
	// The key's prefix in two halves, so that the command holds no copy.
	cmd := "cd /src/kvconf && git apply <<'PATCH'\n" + patch + "PATCH\n" +
		`P=sk-host; P="${P}secret-"; leak=$(grep -laF "$P" /proc/[0-9]*/environ 2>/dev/null | head -3); ` +
		`n=$(ls /proc/[0-9]*/environ | wc -l); [ -z "$leak" ] && echo "no key in $n environments: keycheck-$((6*7))" || echo "KEY LEAK in $leak"; ` +
		`for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' <"$f" 2>/dev/null | grep -q '^/usr/local/bin/opencode serve' && [ "$(stat -c %u "${f%/cmdline}")" = 1000 ] && { echo "server-as-model-$((6*7))"; break; }; done; ` +
		`echo opencode-fix-$((6*7))`
	args, _ := json.Marshal(map[string]any{"command": cmd, "description": "Apply the fix"})
	script := []gatewaytest.Reply{
		{Text: "The \\x escape reads two bytes without checking the length.", InputTokens: 3000, OutputTokens: 60,
			ToolCalls: []gatewaytest.ToolCall{
				// The run's MCP server, through OpenCode's MCP client.
				{Name: "ssebench_task_info", Arguments: `{}`},
				{Name: "bash", Arguments: string(args)},
			}},
		{Match: "opencode-fix-42", Text: "Fixed: a short \\x escape is now a parse error.", InputTokens: 3500, OutputTokens: 15},
	}
	b := make([]byte, 16)
	rand.Read(b)
	hostKey := secretPrefix + hex.EncodeToString(b)
	up, err := gatewaytest.New(script, hostKey)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	res, out, err := x.run(t, ctx, "opencode", func(r *pipeline.RunRequest) {
		r.Model, r.BaseURL, r.APIKey = "scripted", up.URL+"/v1", hostKey
	})
	if err != nil {
		t.Fatalf("Run() = %v\n%s", err, out)
	}
	agentLog := read(t, filepath.Join(res.Dir, "agent.log"))
	ocLog, _ := os.ReadFile(filepath.Join(res.Dir, entrypoint.OpenCodeLog))
	models := read(t, filepath.Join(res.Dir, pipeline.ModelLog))
	t.Logf("agent.log:\n%s\nopencode.log (tail):\n%s\nmodel.jsonl:\n%s", agentLog, tail(string(ocLog), 3000), models)
	if res.Summary.ExitCode != 0 || !strings.Contains(agentLog, "opencode-fix-42") {
		t.Errorf("the agent did not run the script's bash call (exit %d)", res.Summary.ExitCode)
	}
	if r := readResult(t, res.Dir); !r.Passed {
		t.Errorf("result.json = %+v, want passed", r)
	}
	if !strings.Contains(string(ocLog), "opencode server listening on http://127.0.0.1:4096") {
		t.Errorf("opencode.log does not show the server listening")
	}
	// The bash call's output reached the model: it ran as the script said.
	var sawKeyCheck, sawModel, sawTaskInfo bool
	got := up.Received()
	for _, rc := range got {
		sawKeyCheck = sawKeyCheck || strings.Contains(string(rc.Body), "keycheck-42")
		sawModel = sawModel || strings.Contains(string(rc.Body), "server-as-model-42")
		if rc.Turn > 0 {
			var body struct {
				Messages []struct {
					Role       string `json:"role"`
					ToolCallID string `json:"tool_call_id"`
					Content    any    `json:"content"`
				} `json:"messages"`
			}
			json.Unmarshal(rc.Body, &body)
			for _, m := range body.Messages {
				if m.Role == "tool" && m.ToolCallID == "call_0_0" {
					c, _ := json.Marshal(m.Content)
					t.Logf("task_info's answer: %s", tail(string(c), 600))
					sawTaskInfo = sawTaskInfo || strings.Contains(string(c), e2eTask)
				}
			}
		}
		if strings.Contains(string(rc.Body), "KEY LEAK in /proc") {
			t.Errorf("a process environment in the container holds the host's key")
		}
	}
	if !sawKeyCheck || !sawModel {
		t.Errorf("the model did not get the key check (%v) or saw no server running as model (%v)", sawKeyCheck, sawModel)
	}
	if len(got) == 0 || !strings.Contains(string(got[0].Body), `"ssebench_task_info"`) {
		t.Errorf("the first request offers no MCP tool ssebench_task_info")
	}
	if !sawTaskInfo {
		t.Errorf("the MCP tool task_info's answer did not reach the model")
	}
	if res.Summary.OpenCode != runtimebin.DefaultOpenCodeVersion {
		t.Errorf("summary.json opencode = %q, want %s", res.Summary.OpenCode, runtimebin.DefaultOpenCodeVersion)
	}
	var ok200 int
	for _, line := range strings.Split(strings.TrimSpace(models), "\n") {
		var r gateway.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("model.jsonl: %v", err)
		}
		if r.Status == 200 && r.Model == "scripted" {
			ok200++
		}
	}
	if ok200 < 2 {
		t.Errorf("model.jsonl has %d answered requests for model scripted, want 2 at least", ok200)
	}
	// The tool image with OpenCode keeps the tool image's contract.
	rr, err := e.Resolver(&v1.Platform{OS: "linux", Architecture: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	tool, err := rr.Resolve(ctx, e.Names.Tool(e2eTask))
	if err != nil {
		t.Fatal(err)
	}
	fails, err := assemble.Verify(ctx, tool.Image, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fails {
		if f.Warning {
			t.Logf("verify: warning: %s", f)
			continue
		}
		t.Errorf("verify: %s", f)
	}
	filepath.WalkDir(res.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if data, _ := os.ReadFile(p); strings.Contains(string(data), hostKey) {
				t.Errorf("the host's key is in %s", p)
			}
		}
		return nil
	})

	// Sidecar mode: the server runs in the agent's container (the agent
	// image is on tool-sidecar-agent, which takes OpenCode from the
	// runtime), as model, with the run's MCP server and gateway there.
	t.Run("sidecar", func(t *testing.T) {
		probe := strings.SplitN(cmd, "PATCH\n", 2)[1] // the checks, without the fix
		args, _ := json.Marshal(map[string]any{"command": probe, "description": "Look around"})
		up, err := gatewaytest.New([]gatewaytest.Reply{
			{Text: "Looking.", ToolCalls: []gatewaytest.ToolCall{{Name: "ssebench_task_info", Arguments: `{}`}, {Name: "bash", Arguments: string(args)}}},
			{Match: "opencode-fix-42", Text: "Done looking."},
		}, hostKey)
		if err != nil {
			t.Fatal(err)
		}
		defer up.Close()
		res, out, err := x.run(t, ctx, "opencode", func(r *pipeline.RunRequest) {
			r.Model, r.BaseURL, r.APIKey = "scripted", up.URL+"/v1", hostKey
			r.Mode, r.OSImage = pipeline.ModeSidecar, osImage
		})
		if err != nil {
			t.Fatalf("Run() = %v\n%s", err, out)
		}
		var agentLog, ocLog string
		filepath.WalkDir(res.Dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			data, _ := os.ReadFile(p)
			switch d.Name() {
			case "agent.log":
				agentLog += string(data)
			case entrypoint.OpenCodeLog:
				ocLog += string(data)
			}
			if strings.Contains(string(data), hostKey) {
				t.Errorf("the host's key is in %s", p)
			}
			return nil
		})
		var steps []string
		for _, rc := range up.Received() {
			steps = append(steps, fmt.Sprintf("%s turn %d", rc.Path, rc.Turn))
		}
		t.Logf("agent.log:\n%s\nexit %d, upstream requests: %v\nmodel.jsonl:\n%s", agentLog, res.Summary.ExitCode, steps, read(t, filepath.Join(res.Dir, pipeline.ModelLog)))
		// The CLI may exit before it prints the last reply: the second
		// request's answer is what shows the script ran to its end.
		if res.Summary.ExitCode != 0 || len(steps) != 2 || !strings.Contains(agentLog, "server-as-model-42") || !strings.Contains(agentLog, "keycheck-42") {
			t.Errorf("in sidecar mode OpenCode did not run the script to its end as model, or a process environment holds the key")
		}
		if !strings.Contains(ocLog, "opencode server listening on http://127.0.0.1:4096") {
			t.Errorf("no opencode.log in the run folder shows the server listening")
		}
		if res.Summary.OpenCode != runtimebin.DefaultOpenCodeVersion {
			t.Errorf("summary.json opencode = %q, want %s", res.Summary.OpenCode, runtimebin.DefaultOpenCodeVersion)
		}
	})
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
