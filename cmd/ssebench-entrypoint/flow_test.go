package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
		{filepath.Join(bin, "entrypoint"), "."},
		{filepath.Join(task, "ssebench-daemon"), "../ssebench-daemon"},
		{filepath.Join(task, "mcp", "ssebench-mcp"), "../ssebench-mcp"},
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
		sserun.EnvTaskRoot+"="+task,
		sserun.EnvResults+"="+f.results,
		sserun.EnvAgentSocket+"="+f.agent,
		sserun.EnvAdminSocket+"="+f.admin,
		sserun.EnvWorkDir+"="+work,
		sserun.EnvRunnerUser+"=nobody",
		sserun.EnvMCPAddr+"="+freeAddr(t),
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

	agentLog := readFile(t, filepath.Join(results, sserun.AgentLog))
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
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(results, sserun.ResultFile))), &res); err != nil {
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
	if patch := readFile(t, filepath.Join(results, sserun.PatchFile)); !strings.Contains(patch, "-good bug\n+good fixed\n") {
		t.Errorf("final.patch:\n%s", patch)
	}
	if daemonLog := readFile(t, filepath.Join(results, sserun.DaemonLog)); !strings.Contains(daemonLog, "grade (admin=true): ok=true") {
		t.Errorf("daemon.log:\n%s", daemonLog)
	}
	if ents, _ := os.ReadDir(work); len(ents) != 0 {
		t.Errorf("scratch directories left in %s: %d", work, len(ents))
	}
	if _, err := os.Stat(agentSock); err == nil {
		t.Error("the daemon's agent socket outlived the run")
	}
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
