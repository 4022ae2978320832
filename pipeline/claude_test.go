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
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/gateway/gatewaytest"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
)

// claudeRootProbe is the run's ENTRYPOINT in the Claude Code test: as root
// it starts the real entrypoint with the agent's command, waits until
// Claude Code's shell tool says the agent is running, searches every
// process's environment and command line (and the container's files) for
// the host's key and checks the network, then lets the agent finish.
const claudeRootProbe = `#!/bin/bash
who=root
/usr/local/bin/entrypoint /opt/claude-code-agent/run.sh &
ep=$!
i=0; while [ ! -e /tmp/agent-ready ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done
{
` + netChecks + `
seen=0
for d in /proc/[0-9]*; do
	grep -qs '^Uid:[[:space:]]*1000[[:space:]]' $d/status && tr '\0' ' ' < $d/cmdline 2>/dev/null | grep -q 'claude -p' && seen=1
done
[ $seen = 1 ] || bad "no claude process of model's seen: the checks ran outside the agent phase"
n=$(ls -d /proc/[0-9]* | wc -l)
[ $fail = 0 ] && echo "ROOT ALL GOOD ($n processes searched)"
} > /var/lib/ssebench/results/root-probe.log 2>&1
touch /tmp/root-done
wait $ep
`

// TestClaudeCode builds agents/claude-code with BuildKit (the pinned CLI
// from the npm registry) and runs it offline against the scripted model
// server through the gateway's messages flavour. The script drives Claude
// Code's own tools (Read, Edit, Bash) and one of the run's MCP tools: the
// example Go task is fixed and PASSED, model.jsonl records every request,
// and the host's key is in no file of the run folder and in no process of
// the container.
func TestClaudeCode(t *testing.T) {
	bkAddr := testenv.RequireBuildKit(t)
	testenv.RequireContainerd(t)
	reg := testenv.RequireRegistry(t)
	osImage := testenv.OSImage(t)
	ctx := context.Background()
	repo := moduleDir(t)

	home := exampleHome(t, repo)
	// The folder as it is, plus the root probe for this run only (an
	// agent image may not replace the entrypoint; the run request may).
	dst := filepath.Join(home, "agents", "claude-code")
	cp(t, filepath.Join(repo, "agents", "claude-code"), dst)
	df := read(t, filepath.Join(dst, "Dockerfile"))
	if !strings.Contains(df, "\nCMD ") {
		t.Fatal("agents/claude-code/Dockerfile has no CMD line to put the root probe before")
	}
	df = strings.Replace(df, "\nCMD ", "\nCOPY --chmod=0755 root.sh /opt/root.sh\nCMD ", 1)
	if err := os.WriteFile(filepath.Join(dst, "Dockerfile"), []byte(df), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "root.sh"), []byte(claudeRootProbe), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, home, home, testenv.Unique(reg+"/claude29-e2e"), bkAddr)
	buildGoBase(t, ctx, e, repo, osImage)
	buildRuntime(t, ctx, e, repo, v1.Platform{OS: "linux", Architecture: runtime.GOARCH})
	x := &e2e{env: e, home: home, runs: filepath.Join(home, "runs"), store: e.Store}

	const file = "/src/kvconf/unquote.go"
	old := "\t\tcase 'x':\n\t\t\thi, lo := unhex(s[i+1]), unhex(s[i+2])\n"
	fixed := "\t\tcase 'x':\n\t\t\tif i+2 >= len(s) {\n\t\t\t\treturn \"\", fmt.Errorf(\"short \\\\x escape %q: want two hex digits\", s[i-1:])\n\t\t\t}\n\t\t\thi, lo := unhex(s[i+1]), unhex(s[i+2])\n"
	edit, _ := json.Marshal(map[string]string{"file_path": file, "old_string": old, "new_string": fixed})
	// The shell step checks the fix, tells the root probe that the agent
	// runs, and waits for it (Claude Code is alive, with its environment,
	// the whole time).
	check := `cd /src/kvconf && gofmt -l . && grep -c 'i+2 >= len' unquote.go && entrypoint --call ping && touch /tmp/agent-ready; ` +
		`i=0; while [ ! -e /tmp/root-done ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; echo claude-check-$((6*7))`
	bash, _ := json.Marshal(map[string]string{"command": check, "description": "check the fix"})
	script := []gatewaytest.Reply{
		{Text: "Let me read the unquoting code and the task.", InputTokens: 3000, OutputTokens: 40,
			ToolCalls: []gatewaytest.ToolCall{
				// One of the run's MCP tools, through Claude Code's MCP client.
				{Name: "mcp__ssebench__task_info", Arguments: `{}`},
				// Claude Code edits only a file it has read.
				{Name: "Read", Arguments: `{"file_path":"` + file + `"}`}}},
		{Match: "unhex(s[i+2])", Text: "The \\x escape reads two bytes without checking the length.", InputTokens: 4000, OutputTokens: 120,
			ToolCalls: []gatewaytest.ToolCall{{Name: "Edit", Arguments: string(edit)}}},
		{Match: "updated", Text: "Now check it.", InputTokens: 4500, OutputTokens: 30,
			ToolCalls: []gatewaytest.ToolCall{{Name: "Bash", Arguments: string(bash)}}},
		{Match: "claude-check-42", Text: "Fixed: a short \\x escape is now a parse error.", InputTokens: 5000, OutputTokens: 20},
	}
	b := make([]byte, 16)
	rand.Read(b)
	hostKey := secretPrefix + hex.EncodeToString(b)
	up, err := gatewaytest.New(script, hostKey)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	res, out, err := x.run(t, ctx, "claude-code", func(r *pipeline.RunRequest) {
		r.Entrypoint = []string{"/opt/root.sh"}
		// The base URL as a provider's is written, with /v1: Claude
		// Code adds its own.
		r.Model, r.BaseURL, r.APIKey = "scripted", up.URL+"/v1", hostKey
		r.Lookup = func(k string) string {
			if k == "SSE_API_FLAVOUR" {
				return gatewaytest.Messages
			}
			return ""
		}
	})
	if err != nil {
		t.Fatalf("Run() = %v\n%s", err, out)
	}
	log := read(t, filepath.Join(res.Dir, "agent.log"))
	rootLog := read(t, filepath.Join(res.Dir, "root-probe.log"))
	model := read(t, filepath.Join(res.Dir, pipeline.ModelLog))
	t.Logf("agent.log:\n%s\nroot-probe.log:\n%s\nmodel.jsonl:\n%s", log, rootLog, model)
	for _, r := range up.Received() {
		t.Logf("upstream: %s %s?%s turn %d model %s stream %v anthropic-beta %q", r.Method, r.Path, r.Query, r.Turn, r.Model, r.Stream, r.Header.Get("Anthropic-Beta"))
	}

	if res.Summary.ExitCode != 0 || !strings.Contains(log, "claude-check-42") || !strings.Contains(log, "Fixed: a short") {
		t.Errorf("Claude Code did not run the script to its end (exit %d)", res.Summary.ExitCode)
	}
	if !strings.Contains(log, `"name":"mcp__ssebench__task_info"`) || !strings.Contains(log, "source_dir") {
		t.Errorf("agent.log does not show the MCP tool task_info called and answered")
	}
	if r := readResult(t, res.Dir); !r.Passed {
		t.Errorf("result.json = %+v, want passed", r)
	}
	if !strings.Contains(rootLog, "ROOT ALL GOOD") {
		t.Errorf("the root probe found the host's key or an open network (see root-probe.log)")
	}

	// model.jsonl: Claude Code's four main-loop requests, each a 200
	// stream of the run's model on the messages endpoint, plus whatever
	// else it sent, each recorded.
	var loop int
	for _, line := range strings.Split(strings.TrimSpace(model), "\n") {
		var r gateway.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("model.jsonl: %v", err)
		}
		if r.Status == 200 && r.Path == "/v1/messages" && r.Model == "scripted" && r.Stream && !r.Failed {
			loop++
		} else if r.Status != 200 {
			t.Errorf("model.jsonl: %s: want every request answered", line)
		}
	}
	if loop != len(script) {
		t.Errorf("model.jsonl has %d streamed messages requests, want %d", loop, len(script))
	}
	for _, r := range up.Received() {
		if r.Path != "/v1/messages" || r.Header.Get("X-Api-Key") != hostKey {
			t.Errorf("upstream got %s %s (key sent: %v), want /v1/messages with the host's key", r.Method, r.Path, r.Header.Get("X-Api-Key") == hostKey)
		}
	}
	if u := res.Summary.ModelUsage; u == nil || u.InputTokens < 16500 || u.OutputTokens < 210 || u.Failed != 0 || u.Refused != 0 {
		t.Errorf("model_usage = %+v, want the script's 16500+210 tokens at least, nothing failed or refused", u)
	}
	noKey(t, res.Dir, hostKey)

	// The extreme difficulty levels: Claude Code gets the run's MCP tools
	// as the level gives them (no run_pocs at 4) and calls one.
	for _, level := range []int{0, 4} {
		t.Run(fmt.Sprintf("difficulty-%d", level), func(t *testing.T) {
			up, err := gatewaytest.New([]gatewaytest.Reply{
				{Text: "What is the task?", ToolCalls: []gatewaytest.ToolCall{{Name: "mcp__ssebench__task_info", Arguments: `{}`}}},
				{Match: "source_dir", Text: "I have read the task."},
			}, hostKey)
			if err != nil {
				t.Fatal(err)
			}
			defer up.Close()
			res, out, err := x.run(t, ctx, "claude-code", func(r *pipeline.RunRequest) {
				r.Difficulty = level
				r.Model, r.BaseURL, r.APIKey = "scripted", up.URL, hostKey
				r.Lookup = func(k string) string {
					if k == "SSE_API_FLAVOUR" {
						return gatewaytest.Messages
					}
					return ""
				}
			})
			if err != nil {
				t.Fatalf("Run() = %v\n%s", err, out)
			}
			log := read(t, filepath.Join(res.Dir, "agent.log"))
			t.Logf("agent.log:\n%s", log)
			if res.Summary.ExitCode != 0 || !strings.Contains(log, "I have read the task.") {
				t.Errorf("Claude Code did not run the script to its end at level %d (exit %d)", level, res.Summary.ExitCode)
			}
			var init string // Claude Code's first line: its tools
			for _, line := range strings.Split(log, "\n") {
				if strings.Contains(line, `"subtype":"init"`) {
					init = line
					break
				}
			}
			if !strings.Contains(init, `"mcp__ssebench__task_info"`) || strings.Contains(init, `"mcp__ssebench__run_pocs"`) != (level < 4) {
				t.Errorf("level %d: Claude Code's tools %s: want the MCP tools, run_pocs only below level 4", level, init)
			}
			if u := res.Summary.ModelUsage; u == nil || u.Requests != 2 || u.Failed+u.Refused != 0 {
				t.Errorf("model_usage = %+v, want the script's 2 requests", u)
			}
			noKey(t, res.Dir, hostKey)
		})
	}
}

// noKey fails the test if a file of the run folder dir holds key.
func noKey(t *testing.T, dir, key string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if data, _ := os.ReadFile(p); strings.Contains(string(data), key) {
				t.Errorf("the host's key is in %s", p)
			}
		}
		return nil
	})
}
