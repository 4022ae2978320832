package entrypoint

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/sserun"
)

// flow is a fake task relocated by SSE_TASK_ROOT, with the real binaries
// built: as root it is the real thing (the agent runs as uid 1000 and the
// scripts as nobody); otherwise everything runs as the test's user.
type flow struct {
	root                                       bool
	base, bin, task, src, work, results, agent string
	admin                                      string
	env                                        []string
}

func newFlow(t *testing.T) *flow {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the runtime binaries; skipped with -short")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	f := &flow{root: os.Geteuid() == 0}
	if f.root {
		// As root the entrypoint and the daemon kill every process of
		// model (uid 1000) and of the runner when they are done.
		requireIdle(t, sserun.Model.UID, "nobody")
	}
	base := t.TempDir()
	// Every user must reach the directories the agent and scripts use.
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.base = base
	f.bin = filepath.Join(base, "bin")
	f.task = filepath.Join(base, "ssebench")
	f.src = filepath.Join(base, "src")
	f.work = filepath.Join(base, "work")
	f.results = filepath.Join(base, "results")
	bin, task, src, work := f.bin, f.task, f.src, f.work
	for _, d := range []string{bin, task, src, work, filepath.Join(task, "scripts"), filepath.Join(task, "pocs"), filepath.Join(task, "mcp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(work, 0o1777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(task, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, b := range []struct{ out, pkg string }{
		{filepath.Join(bin, "entrypoint"), "../../cmd/ssebench-entrypoint"},
		{filepath.Join(task, "ssebench-daemon"), "../../cmd/ssebench-daemon"},
		{filepath.Join(task, "mcp", "ssebench-mcp"), "../../cmd/ssebench-mcp"},
	} {
		build := exec.Command("go", "build", "-trimpath", "-o", b.out, b.pkg)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", b.pkg, err, out)
		}
	}

	writeFile(t, filepath.Join(task, "config.yaml"), `id: Flow-1
source: `+src+`
task_description: {issue: it crashes}
scripts: {build: scripts/build.sh, test: scripts/test.sh, run: scripts/run.sh}
files: {patch: diffs/patch.diff, poc: [pocs/crash.txt]}
`)
	writeFile(t, filepath.Join(task, "scripts", "build.sh"), "set -e\necho building as $(id -u)\ncp main.txt built.txt\n[ ! -f stamp.txt ] || echo \"stamp $(cat stamp.txt)\"\n")
	writeFile(t, filepath.Join(task, "scripts", "test.sh"), "set -e\ngrep -q good main.txt\necho tests pass\n")
	writeFile(t, filepath.Join(task, "scripts", "run.sh"), "[ -f built.txt ] || sh \"$(dirname \"$0\")/build.sh\" || exit 125\nif grep -q bug built.txt; then echo CRASH; exit 86; fi\necho handled $1\n")
	writeFile(t, filepath.Join(task, "pocs", "crash.txt"), "crash\n")
	writeFile(t, filepath.Join(src, "main.txt"), "good bug\n")
	gitInit(t, src)
	if f.root {
		chownR(t, src, sserun.Model.UID, sserun.Model.GID)
	}
	f.agent = filepath.Join(base, "agent.sock")
	f.admin = filepath.Join(base, "run", "admin.sock")
	f.env = append(os.Environ(),
		contract.EnvTaskRoot+"="+task,
		contract.EnvResults+"="+f.results,
		contract.EnvAgentSocket+"="+f.agent,
		contract.EnvAdminSocket+"="+f.admin,
		contract.EnvWorkDir+"="+work,
		contract.EnvRunnerUser+"=nobody",
		contract.EnvMCPAddr+"="+freeAddr(t),
		"SSE_API_KEY=sekrit",
	)
	return f
}

// freeAddr returns a loopback address no one listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// command returns the entrypoint running agent, from SOURCE_DIR.
func (f *flow) command(agent string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(f.bin, "entrypoint"), agent)
	cmd.Dir = f.src
	cmd.Env = f.env
	return cmd
}

// TestFlow runs the real binaries, entrypoint → daemon → grade, on a fake
// task.
func TestFlow(t *testing.T) {
	f := newFlow(t)
	root, bin, src, work, results, agentSock := f.root, f.bin, f.src, f.work, f.results, f.agent
	// The agent asks the daemon for a proof-of-concept run (it crashes),
	// fixes the bug, and asks again.
	agent := "echo agent as $(id -u) in $PWD home $HOME; " +
		bin + "/entrypoint --call poc; echo poc exit $?; " +
		"echo 'good fixed' > main.txt; " +
		bin + "/entrypoint --call poc; echo poc exit $?; " +
		"test -z \"$SSE_ADMIN_SOCKET\" && echo no admin socket"
	out, err := f.command(agent).CombinedOutput()
	if err != nil {
		t.Fatalf("entrypoint: %v\n%s", err, out)
	}

	agentLog := readFile(t, filepath.Join(results, contract.AgentLog))
	wantUID := os.Getuid()
	if root {
		wantUID = sserun.Model.UID
	}
	for _, want := range []string{
		"agent as " + strconv.Itoa(wantUID) + " in " + src,
		"=== pocs/crash.txt: exit 86\nbuilding as ", "CRASH\npoc exit 86\n",
		"handled " + work + "/ssebench-run-", "poc exit 0\n",
		"no admin socket",
	} {
		if !strings.Contains(agentLog, want) {
			t.Errorf("agent.log does not contain %q:\n%s", want, agentLog)
		}
	}
	if root && !strings.Contains(agentLog, "home /home/model") {
		t.Errorf("agent.log: the agent's HOME is not /home/model:\n%s", agentLog)
	}

	var res map[string]any
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(results, contract.ResultFile))), &res); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"task_id": "Flow-1", "agent_exit": 0.0, "timed_out": false, "passed": true} {
		if res[k] != want {
			t.Errorf("result.json %s = %v, want %v\n%v", k, res[k], want, res)
		}
	}
	for _, check := range []string{"build", "test", "poc"} {
		c, _ := res[check].(map[string]any)
		if c == nil || c["ok"] != true || c["log"] != check+".log" {
			t.Errorf("result.json %s = %v, want ok with its log", check, res[check])
		}
	}
	if root {
		if got := readFile(t, filepath.Join(results, "build.log")); !strings.Contains(got, "building as 65534") {
			t.Errorf("build.log = %q, want the build run as nobody", got)
		}
	}
	if patch := readFile(t, filepath.Join(results, contract.PatchFile)); !strings.Contains(patch, "-good bug\n+good fixed\n") {
		t.Errorf("final.patch:\n%s", patch)
	}
	if daemonLog := readFile(t, filepath.Join(results, contract.DaemonLog)); !strings.Contains(daemonLog, "grade (admin=true): ok=true") {
		t.Errorf("daemon.log:\n%s", daemonLog)
	}
	if ents, _ := os.ReadDir(work); len(ents) != 0 {
		t.Errorf("scratch directories left in %s: %d", work, len(ents))
	}
	if _, err := os.Stat(agentSock); err == nil {
		t.Error("the daemon's agent socket outlived the run")
	}
	if res["difficulty"] != 2.0 || res["tool_calls"] != 2.0 {
		t.Errorf("result.json difficulty %v, tool_calls %v; want 2 and 2", res["difficulty"], res["tool_calls"])
	}
	calls := toolCalls(t, results)
	if len(calls) != 2 || calls[0].Tool != "run_pocs" || calls[0].Client != "cli" || calls[0].Exit != 86 || !calls[1].OK {
		t.Errorf("tool_calls.jsonl = %+v, want the two run_pocs calls", calls)
	}
}

func toolCalls(t *testing.T, results string) []sserun.ToolCall {
	t.Helper()
	var calls []sserun.ToolCall
	for line := range strings.Lines(readFile(t, filepath.Join(results, sserun.ToolCallsFile))) {
		var c sserun.ToolCall
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("tool_calls.jsonl line %q: %v", line, err)
		}
		calls = append(calls, c)
	}
	return calls
}

// TestFlowMCPProbe runs the mcp-probe agent's script against the MCP
// server the entrypoint started: the tools, a build, and the calls in
// tool_calls.jsonl.
func TestFlowMCPProbe(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	f := newFlow(t)
	probe := filepath.Join(f.bin, "mcp-probe")
	script, err := os.ReadFile("../../agents/mcp-probe/mcp-probe.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(probe, script, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(f.base, "archive")
	if err := os.Mkdir(archive, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(archive, 0o1777); err != nil {
		t.Fatal(err)
	}
	var addr string
	for _, kv := range f.env {
		if v, ok := strings.CutPrefix(kv, contract.EnvMCPAddr+"="); ok {
			addr = v
		}
	}
	f.env = append(f.env, "SSE_ARCHIVE="+archive, "MCP_PROBE_URL=http://"+addr+"/mcp")
	out, err := f.command("bash " + probe).CombinedOutput()
	log := readFile(t, filepath.Join(f.results, contract.AgentLog))
	if err != nil {
		t.Fatalf("entrypoint: %v\n%s\nagent.log:\n%s\nmcp.log:\n%s", err, out, log, readFile(t, filepath.Join(f.results, contract.MCPLog)))
	}
	summary := readFile(t, filepath.Join(archive, "mcp-probe", "summary.txt"))
	for _, want := range []string{"tools: build run_pocs status task_info test \n", "build: passed", `"name":"ssebench"`} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary.txt does not contain %q:\n%s\nagent.log:\n%s", want, summary, log)
		}
	}
	if info := readFile(t, filepath.Join(archive, "mcp-probe", "task_info.json")); !strings.Contains(info, `"issue":"it crashes"`) {
		t.Errorf("task_info.json = %s, want the issue (the fallback of difficulty 2)", info)
	}
	var tools []string
	for _, c := range toolCalls(t, f.results) {
		if c.Client != "mcp" {
			t.Errorf("tool call %+v does not come from the MCP server", c)
		}
		tools = append(tools, c.Tool)
	}
	if got := strings.Join(tools, " "); got != "task_info build run_pocs status" {
		t.Errorf("tool_calls.jsonl tools = %q", got)
	}
}

// TestFlowAgentPhaseEnds leaves processes behind the agent command: a
// sleep and a loop that rewrites a file of the tree every 100 ms, both out
// of the agent's process group. When the phase ends none is left, the
// graded tree is the tree of final.patch, and the agent socket refuses
// tools.
func TestFlowAgentPhaseEnds(t *testing.T) {
	f := newFlow(t)
	if !f.root {
		t.Skip("killing every process of model needs root")
	}
	f.env = append(f.env, contract.EnvKeepAlive+"=1")
	agent := `setsid sleep 1000 & (setsid sh -c 'i=0; while :; do i=$((i+1)); echo $i > stamp.txt; sleep 0.1; done' &); sleep 1; echo started`
	cmd := f.command(agent)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	}()
	// SSE_KEEP_ALIVE: the entrypoint waits once result.json is written.
	resultFile := filepath.Join(f.results, contract.ResultFile)
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(resultFile); err == nil {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the entrypoint ended: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no result.json after 2 minutes:\n%s", out.String())
		}
	}
	if pids := processesOf(t, sserun.Model.UID); len(pids) > 0 {
		t.Errorf("processes of model left after the agent phase: %v", pids)
	}
	stamp := readFile(t, filepath.Join(f.src, "stamp.txt"))
	time.Sleep(300 * time.Millisecond)
	if again := readFile(t, filepath.Join(f.src, "stamp.txt")); again != stamp {
		t.Errorf("stamp.txt still changes after the agent phase: %q, then %q", stamp, again)
	}
	patch := readFile(t, filepath.Join(f.results, contract.PatchFile))
	if !strings.Contains(patch, "+++ b/stamp.txt\n@@ -0,0 +1 @@\n+"+stamp) {
		t.Errorf("final.patch does not hold stamp.txt = %q:\n%s", stamp, patch)
	}
	if build := readFile(t, filepath.Join(f.results, "build.log")); !strings.Contains(build, "stamp "+stamp) {
		t.Errorf("build.log = %q: the graded tree is not the patched one (stamp %q)", build, stamp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := sserun.Do(ctx, f.agent, sserun.Request{Op: sserun.OpBuild})
	if err != nil || resp.OK || !strings.Contains(resp.Error, "agent phase is over") {
		t.Errorf("build on the agent socket after the phase = %+v, %v; want a refusal", resp, err)
	}
	if log := readFile(t, filepath.Join(f.results, contract.DaemonLog)); !strings.Contains(log, "agent_end (admin=true): agent phase over") {
		t.Errorf("daemon.log does not record the end of the agent phase:\n%s", log)
	}
}

// processesOf lists the live processes of uid.
func processesOf(t *testing.T, uid int) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	// Only this test's pid namespace: while other packages' tests run, the
	// agents of their containers are uid 1000 too, in namespaces of their
	// own.
	self, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, e := range ents {
		if ns, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns", "pid")); err != nil || ns != self {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		var zombie, mine bool
		for _, line := range strings.Split(string(status), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "State:" && f[1] == "Z" {
				zombie = true
			}
			if len(f) >= 3 && f[0] == "Uid:" && (f[1] == strconv.Itoa(uid) || f[2] == strconv.Itoa(uid)) {
				mine = true
			}
		}
		if mine && !zombie {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

func chownR(t *testing.T, dir string, uid, gid int) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// requireIdle skips the test when uid, or the user named name, has
// processes on this machine: the run would kill them.
func requireIdle(t *testing.T, uid int, name string) {
	t.Helper()
	u, err := sserun.LookupUser(sserun.PasswdFile, name)
	if err != nil {
		t.Skip(err)
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip(err)
	}
	for _, e := range ents {
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			f := strings.Fields(line)
			if len(f) >= 3 && f[0] == "Uid:" && (f[1] == strconv.Itoa(uid) || f[1] == strconv.Itoa(u.UID) || f[2] == strconv.Itoa(uid) || f[2] == strconv.Itoa(u.UID)) {
				t.Skipf("uid %s has processes on this machine (pid %s), which the run would kill", f[1], e.Name())
			}
		}
	}
}

// TestFlowMCPStdio has the agent spawn `entrypoint --mcp-stdio`, as model
// when the test runs as root, and talk MCP to it on a pipe.
func TestFlowMCPStdio(t *testing.T) {
	f := newFlow(t)
	msgs := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"build","arguments":{}}}`,
	}
	// Standard input stays open until the build's answer is out.
	script := "out=$(mktemp); (printf '%s\\n' '" + strings.Join(msgs, "' '") + "'; " +
		"for i in $(seq 120); do grep -q '\"id\":3' $out && break; sleep 0.5; done) | " +
		f.bin + "/entrypoint --mcp-stdio > $out; cat $out"
	if out, err := f.command(script).CombinedOutput(); err != nil {
		t.Fatalf("entrypoint: %v\n%s", err, out)
	}
	log := readFile(t, filepath.Join(f.results, contract.AgentLog))
	for _, want := range []string{`"id":2,"result":{`, `"tools":[{`, `"name":"run_pocs"`, `"id":3,"result":{"content":[{"type":"text","text":"build passed (exit status 0)`} {
		if !strings.Contains(log, want) {
			t.Errorf("the stdio server's answers do not contain %q:\n%s", want, log)
		}
	}
	if calls := toolCalls(t, f.results); len(calls) != 1 || calls[0].Tool != "build" || calls[0].Client != "mcp-stdio" {
		t.Errorf("tool_calls.jsonl = %+v, want one build from mcp-stdio", calls)
	}
}

// TestFlowResultsStream: with SSE_RESULTS_STREAM the entrypoint ends by
// writing the results to its standard output, framed by the run's token,
// which the agent never sees.
func TestFlowResultsStream(t *testing.T) {
	f := newFlow(t)
	const token = "streamtoken-0123456789"
	f.env = append(f.env, contract.EnvResultsStream+"="+token)
	cmd := f.command(`echo "token:[$SSE_RESULTS_STREAM]"`)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		t.Fatalf("entrypoint: %v", err)
	}
	dst := t.TempDir()
	if err := contract.ReadResultsStream(&stdout, nil, token, map[string]string{contract.StreamResults: dst}, 0); err != nil {
		t.Fatalf("reading the entrypoint's output: %v", err)
	}
	if got, want := readFile(t, filepath.Join(dst, contract.ResultFile)), readFile(t, filepath.Join(f.results, contract.ResultFile)); got != want {
		t.Errorf("result.json from the stream:\n%s\nwant:\n%s", got, want)
	}
	if log := readFile(t, filepath.Join(dst, contract.AgentLog)); !strings.Contains(log, "token:[]") {
		t.Errorf("agent.log = %q: the agent saw the stream's token", log)
	}
}
