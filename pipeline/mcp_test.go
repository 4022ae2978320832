package pipeline_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/pipeline"
)

// leftover runs as the agent. It checks, as model, that the MCP server's
// files, the daemon's admin socket and /ssebench are out of reach, and
// that the MCP server runs as nobody; then it leaves behind a sleep and a
// loop that rewrites stamp.txt every 100 ms, both out of its process
// group, and Go code that reports, when the grade's test binary runs it, the
// stamp it sees and how many processes of model are alive.
const leftover = `#!/bin/bash
fail=0
bad() { echo "BAD: $*"; fail=1; }
for p in /ssebench /ssebench/mcp /ssebench/mcp/ssebench-mcp /ssebench/ssebench-daemon /ssebench/config.yaml; do
	ls "$p" >/dev/null 2>&1 && bad "can list $p"
	cat "$p" >/dev/null 2>&1 && bad "can read $p"
	[ -x "$p" ] && [ ! -d "$p" ] && bad "can execute $p"
done
[ -z "${SSE_ADMIN_SOCKET:-}" ] || bad "SSE_ADMIN_SOCKET is set"
err=$(SSE_DAEMON_SOCKET=/run/ssebench/admin.sock /usr/local/bin/entrypoint --call ping 2>&1) && bad "pinged the admin socket"
# In a sandbox run the admin socket is in the task's container, not here.
case "$err" in *"permission denied"*|*"no such file or directory"*) ;; *) bad "admin socket: $err" ;; esac
mcp=
for d in /proc/[0-9]*; do
	[ "$(cat "$d/comm" 2>/dev/null)" = ssebench-mcp ] && mcp=$d
	case "$(tr '\0' ' ' <"$d/cmdline" 2>/dev/null)" in *" --mcp-http "*) mcp=$d ;; esac
done
[ -n "$mcp" ] || bad "no MCP server process"
[ "$(stat -c %u "$mcp")" = 65534 ] || bad "the MCP server runs as $(stat -c %u "$mcp"), not nobody"
cat "$mcp/environ" >/dev/null 2>&1 && bad "can read the MCP server's environment"
cat "$mcp/exe" >/dev/null 2>&1 && bad "can read the MCP server's program"
curl -sf -o /dev/null http://127.0.0.1:3000/mcp -X POST -H 'Content-Type: application/json' -d '{' ; [ $? = 22 ] || bad "the MCP server does not answer on 127.0.0.1:3000"

cd /src/kvconf || exit 1
# A test file would not be graded (the graded tree takes the pristine
# *_test.go files), so the report comes from an init in the package, run
# by the test binary.
cat > stamp.go <<'EOF'
package kvconf

import (
	"fmt"
	"os"
	"strings"
)

func init() {
	if !strings.HasSuffix(os.Args[0], ".test") {
		return
	}
	stamp, _ := os.ReadFile("stamp.txt")
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil || strings.Contains(string(b), "State:\tZ") {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "Uid:" && f[1] == "1000" {
				n++
			}
		}
	}
	fmt.Printf("STAMP=%s MODEL_PROCESSES=%d\n", strings.TrimSpace(string(stamp)), n)
}
EOF
setsid sleep 1000 &
(setsid sh -c 'i=0; while :; do i=$((i+1)); echo $i > stamp.txt; sleep 0.1; done' &)
sleep 1
[ $fail = 0 ] && echo "ALL GOOD"
exit $fail
`

// TestMCP runs agents that use the MCP server on an example task in
// containerd: the probe at three difficulty levels, and an agent that
// leaves processes behind.
func TestMCP(t *testing.T) {
	x := setup(t)
	ctx := context.Background()
	cp(t, filepath.Join(moduleDir(t), "agents", "mcp-probe"), filepath.Join(x.home, "agents", "mcp-probe"))
	agentDir(t, x.home, "leftover", "FROM ssebench-agent\nCOPY --chmod=0755 leftover.sh /opt/leftover.sh\nCMD [\"/opt/leftover.sh\"]\n",
		map[string]string{"leftover.sh": leftover})

	probe := func(t *testing.T, level int) (dir string, tools []string) {
		t.Helper()
		res, out, err := x.run(t, ctx, "mcp-probe", func(r *pipeline.RunRequest) { r.Difficulty = level })
		if err != nil {
			t.Fatalf("Run() = %v\n%s", err, out)
		}
		dir = filepath.Join(res.Dir, "archive", "mcp-probe")
		log := read(t, filepath.Join(res.Dir, "agent.log"))
		if res.Summary.ExitCode != 0 {
			t.Errorf("mcp-probe exit %d:\n%s", res.Summary.ExitCode, log)
		}
		summary := read(t, filepath.Join(dir, "summary.txt"))
		if !strings.Contains(summary, "build: passed") || !strings.Contains(summary, `"name":"ssebench"`) {
			t.Errorf("summary.txt:\n%s\nagent.log:\n%s", summary, log)
		}
		var list struct {
			Result struct {
				Tools []struct {
					Name        string `json:"name"`
					Description string `json:"description"`
				} `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(read(t, filepath.Join(dir, "tools.json"))), &list); err != nil {
			t.Fatal(err)
		}
		for _, tool := range list.Result.Tools {
			tools = append(tools, tool.Name)
		}
		slices.Sort(tools)
		var build struct {
			Result struct {
				IsError    bool `json:"isError"`
				Structured struct {
					Passed     bool   `json:"passed"`
					ExitStatus int    `json:"exit_status"`
					Output     string `json:"output"`
				} `json:"structuredContent"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(read(t, filepath.Join(dir, "build.json"))), &build); err != nil {
			t.Fatal(err)
		}
		if build.Result.IsError || !build.Result.Structured.Passed || build.Result.Structured.ExitStatus != 0 {
			t.Errorf("build through MCP = %+v, want a successful build", build.Result)
		}
		calls := read(t, filepath.Join(res.Dir, "tool_calls.jsonl"))
		for _, tool := range []string{"task_info", "build", "status"} {
			if !strings.Contains(calls, `"tool":"`+tool+`","client":"mcp","ok":true`) {
				t.Errorf("tool_calls.jsonl has no successful %s call from the MCP server:\n%s", tool, calls)
			}
		}
		var r struct {
			Difficulty int `json:"difficulty"`
			ToolCalls  int `json:"tool_calls"`
		}
		if err := json.Unmarshal([]byte(read(t, filepath.Join(res.Dir, "result.json"))), &r); err != nil {
			t.Fatal(err)
		}
		if r.Difficulty != level || r.ToolCalls != strings.Count(calls, "\n") {
			t.Errorf("result.json difficulty %d, tool_calls %d; want %d and the %d lines of tool_calls.jsonl", r.Difficulty, r.ToolCalls, level, strings.Count(calls, "\n"))
		}
		return dir, tools
	}

	t.Run("level 0", func(t *testing.T) {
		dir, tools := probe(t, 0)
		if !slices.Contains(tools, "run_pocs") {
			t.Errorf("tools at level 0 = %q, want run_pocs", tools)
		}
		info := read(t, filepath.Join(dir, "task_info.json"))
		// The PoC's contents, JSON-encoded (the escape of the file's \x4
		// is itself escaped).
		poc := read(t, filepath.Join(moduleDir(t), "datasets", "examples", e2eTask, "sse", "pocs", "short-hex-escape.conf"))
		enc, _ := json.Marshal(poc)
		if !strings.Contains(info, strings.Trim(string(enc), `"`)) || !strings.Contains(info, "kvconf crashes on a malformed configuration file") {
			t.Errorf("task_info at level 0 lacks the PoC's contents or the issue:\n%s", info)
		}
		if pocs := read(t, filepath.Join(dir, "run_pocs.json")); !strings.Contains(pocs, "panic") {
			t.Errorf("run_pocs at level 0 has no output:\n%s", pocs)
		}
	})
	t.Run("level 3", func(t *testing.T) {
		dir, tools := probe(t, 3)
		if !slices.Contains(tools, "run_pocs") {
			t.Errorf("tools at level 3 = %q, want run_pocs", tools)
		}
		pocs := read(t, filepath.Join(dir, "run_pocs.json"))
		if !strings.Contains(pocs, `"output":"PoC 1: fail\n"`) || strings.Contains(pocs, "panic") || strings.Contains(pocs, "short-hex-escape") {
			t.Errorf("run_pocs at level 3 = %s, want pass or fail only", pocs)
		}
		info := read(t, filepath.Join(dir, "task_info.json"))
		if strings.Contains(info, "crash_reports") || strings.Contains(info, `"issue"`) || !strings.Contains(info, "bug_description") {
			t.Errorf("task_info at level 3 = %s, want the bug description only", info)
		}
	})
	t.Run("level 4", func(t *testing.T) {
		dir, tools := probe(t, 4)
		if slices.Contains(tools, "run_pocs") {
			t.Errorf("tools at level 4 = %q, want no run_pocs", tools)
		}
		if _, err := os.Stat(filepath.Join(dir, "run_pocs.json")); err == nil {
			t.Error("the probe called run_pocs at level 4")
		}
	})

	t.Run("leftovers", func(t *testing.T) {
		res, out, err := x.run(t, ctx, "leftover", func(r *pipeline.RunRequest) { r.Difficulty = 2 })
		if err != nil {
			t.Fatalf("Run() = %v\n%s", err, out)
		}
		log := read(t, filepath.Join(res.Dir, "agent.log"))
		if res.Summary.ExitCode != 0 || !strings.Contains(log, "ALL GOOD") {
			t.Errorf("as model (exit %d):\n%s", res.Summary.ExitCode, log)
		}
		patch := read(t, filepath.Join(res.Dir, "final.patch"))
		m := regexp.MustCompile(`\+\+\+ b/stamp.txt\n@@ -0,0 \+1 @@\n\+(\d+)\n`).FindStringSubmatch(patch)
		if m == nil {
			t.Fatalf("final.patch has no stamp.txt:\n%s", patch)
		}
		// The graded tree is final.patch applied to the original: the
		// agent's code sees the stamp of the patch, and no process of
		// model. (The hidden tests panic on the buggy tree, so the
		// project's own tests' log is the one that shows it.)
		want := "STAMP=" + m[1] + " MODEL_PROCESSES=0"
		if got := read(t, filepath.Join(res.Dir, "test.log")); !strings.Contains(got, want) {
			t.Errorf("test.log does not contain %q:\n%s", want, got)
		}
		if daemon := read(t, filepath.Join(res.Dir, "daemon.log")); !strings.Contains(daemon, "agent_end (admin=true): agent phase over") {
			t.Errorf("daemon.log does not record the end of the agent phase:\n%s", daemon)
		}
	})
}
