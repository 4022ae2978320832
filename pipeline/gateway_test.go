package pipeline_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/gateway/gatewaytest"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
)

// secretPrefix starts the host's API key in the closed-network test. The
// probes search the container for it; they spell it in two halves so that
// their own files do not hold it.
const secretPrefix = "sk-hostsecret-"

// netChecks is shared by both probes: every TCP connect but loopback
// fails, DNS fails. $1 is who runs it.
const netChecks = `
fail=0
bad() { echo "BAD ($who): $*"; fail=1; }
for hp in 1.1.1.1/80 8.8.8.8/53 169.254.169.254/80 10.0.0.1/80 172.17.0.1/80 192.168.1.1/443 100.100.100.200/80; do
	if timeout 3 bash -c "exec 3<>/dev/tcp/${hp%/*}/${hp#*/}" 2>/dev/null; then bad "TCP connect to $hp succeeded"; fi
done
# The host's addresses, as the container's default route would reach them.
for h in $(ip -4 route 2>/dev/null | awk '/default/ {print $3}'); do
	timeout 3 bash -c "exec 3<>/dev/tcp/$h/80" 2>/dev/null && bad "TCP connect to the gateway host $h succeeded"
done
timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/4000' || bad "cannot connect to the model gateway at 127.0.0.1:4000"
if timeout 5 getent hosts example.com >/dev/null 2>&1; then bad "DNS resolves example.com"; fi
if timeout 5 getent hosts metadata.google.internal >/dev/null 2>&1; then bad "DNS resolves metadata.google.internal"; fi
[ -n "$(grep -v '^ *lo:' /proc/net/dev | grep ':' )" ] && bad "interfaces besides lo: $(cat /proc/net/dev)"
P=sk-host; P="${P}secret-"
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do
	grep -qaF "$P" "$f" 2>/dev/null && bad "the host key is in $f"
done
leak=$(grep -rlsaF "$P" /etc /home /root /tmp /run /var /opt /src /ssebench /usr/local/bin 2>/dev/null | head -3)
[ -z "$leak" ] || bad "the host key is in $leak"
`

// rootProbe is the run's ENTRYPOINT (RunRequest.Entrypoint): as root it starts the real
// entrypoint, waits until the agent is running, checks, and lets the
// agent finish.
const rootProbe = `#!/bin/bash
who=root
# A replaced ENTRYPOINT drops the image's CMD: name the agent here.
/usr/local/bin/entrypoint /opt/probe.sh &
ep=$!
i=0; while [ ! -e /tmp/agent-ready ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
{
` + netChecks + `
grep -qs '^Uid:[[:space:]]*1000[[:space:]]' /proc/[0-9]*/status || bad "no model process seen: the checks ran outside the agent phase"
[ $fail = 0 ] && echo "ROOT ALL GOOD"
} > /var/lib/ssebench/results/root-probe.log 2>&1
touch /tmp/root-done
wait $ep
`

// modelProbe is the agent (as model): the same checks, then model
// requests through the gateway, the fourth past --max-requests 3.
const modelProbe = `#!/bin/bash
who=model
` + netChecks + `
[ "$SSE_BASE_URL" = http://127.0.0.1:4000 ] || bad "SSE_BASE_URL=$SSE_BASE_URL"
ls /run/ssebench-gateway >/dev/null 2>&1 && bad "model can list the gateway's directory"
body='{"model":"scripted","messages":[{"role":"user","content":"fix the bug"}]}'
code=$(curl -s -o /tmp/r0 -w '%{http_code}' -H "Authorization: Bearer wrong-token" -H 'Content-Type: application/json' -d "$body" "$SSE_BASE_URL/chat/completions")
echo "wrong token: $code $(cat /tmp/r0)"
[ "$code" = 401 ] || bad "a wrong token got $code"
for i in 1 2 3 4; do
	code=$(curl -s -o /tmp/r$i -w '%{http_code}' -H "Authorization: Bearer $SSE_API_KEY" -H 'Content-Type: application/json' -d "$body" "$SSE_BASE_URL/chat/completions")
	echo "request $i: $code $(cat /tmp/r$i)"
done
grep -q 'scripted hello' /tmp/r1 || bad "the first reply is not the script's"
touch /tmp/agent-ready
i=0; while [ ! -e /tmp/root-done ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
[ $fail = 0 ] && echo "MODEL ALL GOOD"
exit $fail
`

// testGatewayRun runs a restricted run whose agent reaches the scripted
// model server only through the gateway.
func testGatewayRun(t *testing.T, x *e2e) {
	ctx := context.Background()
	agentDir(t, x.home, "netprobe", "FROM ssebench-agent\nCOPY --chmod=0755 root.sh /opt/root.sh\nCOPY --chmod=0755 probe.sh /opt/probe.sh\nCMD [\"/opt/probe.sh\"]\n",
		map[string]string{"root.sh": rootProbe, "probe.sh": modelProbe})
	b := make([]byte, 16)
	rand.Read(b)
	hostKey := secretPrefix + hex.EncodeToString(b)
	up, err := gatewaytest.New([]gatewaytest.Reply{{Text: "scripted hello from the model", InputTokens: 50, OutputTokens: 7}}, hostKey)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()

	res, out, err := x.run(t, ctx, "netprobe", func(r *pipeline.RunRequest) {
		// An agent image may not replace the entrypoint: the root probe
		// wraps it for this run only.
		r.Entrypoint = []string{"/opt/root.sh"}
		r.Model = "scripted"
		r.BaseURL = up.URL + "/v1"
		r.APIKey = hostKey
		r.Limits = gateway.Limits{MaxRequests: 3}
	})
	if err != nil {
		t.Fatalf("Run() = %v\n%s", err, out)
	}
	log := read(t, filepath.Join(res.Dir, "agent.log"))
	rootLog := read(t, filepath.Join(res.Dir, "root-probe.log"))
	t.Logf("agent.log:\n%s\nroot-probe.log:\n%s", log, rootLog)
	if !strings.Contains(log, "MODEL ALL GOOD") {
		t.Errorf("as model, the checks failed (exit %d)", res.Summary.ExitCode)
	}
	if !strings.Contains(rootLog, "ROOT ALL GOOD") {
		t.Errorf("as root, the checks failed")
	}
	if !strings.Contains(log, "request 4: 429") || !strings.Contains(log, "max_requests") {
		t.Errorf("agent.log does not show the fourth request refused with 429 max_requests")
	}

	// model.jsonl: the wrong token, three answers, the refusal.
	var statuses []int
	for _, line := range strings.Split(strings.TrimSpace(read(t, filepath.Join(res.Dir, pipeline.ModelLog))), "\n") {
		var r gateway.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("model.jsonl: %v", err)
		}
		statuses = append(statuses, r.Status)
	}
	if jsonInts(statuses) != "[401,200,200,200,429]" {
		t.Errorf("model.jsonl statuses %v, want 401 200 200 200 429", statuses)
	}
	// The totals, in summary.json and result.json, match the script's.
	want := func(where string, u *gateway.Totals) {
		if u == nil || u.Requests != 3 || u.Refused != 2 || u.InputTokens != 150 || u.OutputTokens != 21 || u.LimitReached != "max_requests" {
			t.Errorf("%s model_usage = %+v, want 3 requests of 50+7 tokens, 2 refused, max_requests reached", where, u)
		}
	}
	want("summary.json", res.Summary.ModelUsage)
	var rj struct {
		ModelUsage *gateway.Totals `json:"model_usage"`
		AgentExit  int             `json:"agent_exit"`
	}
	if err := json.Unmarshal([]byte(read(t, filepath.Join(res.Dir, "result.json"))), &rj); err != nil {
		t.Fatal(err)
	}
	want("result.json", rj.ModelUsage)
	// The upstream saw the real key, and the key is in no result.
	if got := up.Received(); len(got) != 3 || got[0].Header.Get("Authorization") != "Bearer "+hostKey {
		t.Errorf("the upstream got %d requests (want 3) with the host's key", len(got))
	}
	filepath.WalkDir(res.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if data, _ := os.ReadFile(p); strings.Contains(string(data), hostKey) {
				t.Errorf("the host's key is in %s", p)
			}
		}
		return nil
	})
}

func jsonInts(v []int) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// testLoopRun runs agents/loop against the scripted server: the script's
// tool calls fix the example task, the grade passes, and model.jsonl and
// the totals show the script's usage.
func testLoopRun(t *testing.T, x *e2e) {
	ctx := context.Background()
	repo := moduleDir(t)
	// The folder as it is in the repository: ssebench compiles its
	// go_build program, which needs the module around it.
	dst := filepath.Join(x.home, "agents", "loop")
	os.RemoveAll(dst)
	if err := os.Symlink(filepath.Join(repo, "agents", "loop"), dst); err != nil {
		t.Fatal(err)
	}
	old := "\t\tcase 'x':\n\t\t\thi, lo := unhex(s[i+1]), unhex(s[i+2])\n"
	fixed := "\t\tcase 'x':\n\t\t\tif i+2 >= len(s) {\n\t\t\t\treturn \"\", fmt.Errorf(\"short \\\\x escape %q: want two hex digits\", s[i-1:])\n\t\t\t}\n\t\t\thi, lo := unhex(s[i+1]), unhex(s[i+2])\n"
	args, _ := json.Marshal(map[string]string{"path": "/src/kvconf/unquote.go", "old_text": old, "new_text": fixed})
	script := []gatewaytest.Reply{
		{Match: "Find the bug", Text: "The \\x escape reads two bytes without checking the length.", InputTokens: 1000, OutputTokens: 80,
			ToolCalls: []gatewaytest.ToolCall{
				// One of the run's MCP tools, through the loop's MCP client.
				{Name: "task_info", Arguments: `{}`},
				{Name: "edit_file", Arguments: string(args)},
				// Cheap: compiling here would double the grade's time.
				{Name: "shell", Arguments: `{"command":"cd /src/kvconf && gofmt -l . && grep -c 'i+2 >= len' unquote.go && entrypoint --call ping"}`},
			}},
		{Match: "exit 0\n1\n", Text: "Fixed: a short \\x escape is now a parse error.", InputTokens: 1500, OutputTokens: 20},
	}
	b := make([]byte, 16)
	rand.Read(b)
	hostKey := secretPrefix + hex.EncodeToString(b)
	up, err := gatewaytest.New(script, hostKey)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	res, out, err := x.run(t, ctx, "loop", func(r *pipeline.RunRequest) {
		r.Model, r.BaseURL, r.APIKey = "scripted", up.URL+"/v1", hostKey
	})
	if err != nil {
		t.Fatalf("Run() = %v\n%s", err, out)
	}
	log := read(t, filepath.Join(res.Dir, "agent.log"))
	t.Logf("agent.log:\n%s", log)
	if res.Summary.ExitCode != 0 || !strings.Contains(log, "edited /src/kvconf/unquote.go") || !strings.Contains(log, "loop: done") {
		t.Errorf("the loop did not finish its script (exit %d)", res.Summary.ExitCode)
	}
	if i := strings.Index(log, "tool task_info {}\nresult: "); i < 0 || strings.HasPrefix(log[i+len("tool task_info {}\nresult: "):], "error") {
		t.Errorf("the loop did not get an answer from the MCP tool task_info")
	}
	if r := readResult(t, res.Dir); !r.Passed {
		t.Errorf("result.json = %+v, want passed", r)
	}
	recs := strings.Split(strings.TrimSpace(read(t, filepath.Join(res.Dir, pipeline.ModelLog))), "\n")
	if len(recs) != 2 {
		t.Errorf("model.jsonl has %d lines, want 2", len(recs))
	}
	for _, line := range recs {
		var r gateway.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Status != 200 || r.Model != "scripted" || r.Failed {
			t.Errorf("model.jsonl line %s: want a 200 for model scripted", line)
		}
	}
	if u := res.Summary.ModelUsage; u == nil || u.Requests != 2 || u.InputTokens != 2500 || u.OutputTokens != 100 || u.TotalTokens != 2600 {
		t.Errorf("model_usage = %+v, want 2 requests, 2500+100 tokens as scripted", u)
	}
}

// testCodexRun builds agents/codex with BuildKit (Node.js from Debian, the
// CLI from npm) and runs it against the scripted server in the responses
// flavour: the log shows the scripted reply and the shell tool's output.
func testCodexRun(t *testing.T, x *e2e) {
	ctx := context.Background()
	repo := moduleDir(t)
	cp(t, filepath.Join(repo, "agents", "codex"), filepath.Join(x.home, "agents", "codex"))
	script := []gatewaytest.Reply{
		{Text: "Let me look around first.", InputTokens: 4000, OutputTokens: 30,
			ToolCalls: []gatewaytest.ToolCall{{Name: "exec_command", Arguments: `{"cmd":"echo codex-shell-$((6*7)); entrypoint --call ping"}`}}},
		{Match: "codex-shell-42", Text: "done: the scripted reply reached codex", InputTokens: 4500, OutputTokens: 12},
	}
	b := make([]byte, 16)
	rand.Read(b)
	hostKey := secretPrefix + hex.EncodeToString(b)
	up, err := gatewaytest.New(script, hostKey)
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	res, out, err := x.run(t, ctx, "codex", func(r *pipeline.RunRequest) {
		r.Model, r.BaseURL, r.APIKey = "scripted", up.URL+"/v1", hostKey
		r.Lookup = func(k string) string {
			if k == "SSE_API_FLAVOUR" {
				return "openai-responses"
			}
			return ""
		}
	})
	if err != nil {
		t.Fatalf("Run() = %v\n%s", err, out)
	}
	log := read(t, filepath.Join(res.Dir, "agent.log"))
	t.Logf("agent.log:\n%s", log)
	if res.Summary.ExitCode != 0 || !strings.Contains(log, "codex-shell-42") || !strings.Contains(log, "done: the scripted reply reached codex") {
		t.Errorf("codex did not run the script to its end (exit %d)", res.Summary.ExitCode)
	}
	if u := res.Summary.ModelUsage; u == nil || u.Requests < 2 || u.InputTokens < 8500 || u.OutputTokens < 42 || u.Failed != 0 {
		t.Errorf("model_usage = %+v, want the two scripted replies' 8500+42 tokens at least\nmodel.jsonl:\n%s", u, read(t, filepath.Join(res.Dir, pipeline.ModelLog)))
	}
}
