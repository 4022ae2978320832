package entrypoint

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

func TestParseArgs(t *testing.T) {
	tests := []struct {
		args  []string
		mode  string
		words []string
	}{
		{nil, "sandbox", nil},
		{[]string{"echo dummy_QAQ"}, "sandbox", []string{"echo dummy_QAQ"}},
		{[]string{"echo", "dummy_QAQ"}, "sandbox", []string{"echo", "dummy_QAQ"}},
		{[]string{"--mode", "sidecar", "--", "agent", "--mode", "x"}, "sidecar", []string{"agent", "--mode", "x"}},
		{[]string{"--mode=sandbox", "run"}, "sandbox", []string{"run"}},
		{[]string{"--", "--", "x"}, "sandbox", []string{"--", "x"}},
		{[]string{"python3", "--mode", "sidecar"}, "sandbox", []string{"python3", "--mode", "sidecar"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			mode, words, err := parseArgs(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if mode != tt.mode || !cmp.Equal(words, tt.words) {
				t.Errorf("parseArgs(%q) = %q, %q; want %q, %q", tt.args, mode, words, tt.mode, tt.words)
			}
		})
	}
	for _, bad := range [][]string{{"--mode"}, {"--mode", "docker"}, {"--mode="}} {
		if _, _, err := parseArgs(bad); err == nil {
			t.Errorf("parseArgs(%q) succeeded", bad)
		}
	}
}

func TestJoinCommand(t *testing.T) {
	for _, tt := range []struct {
		words []string
		want  string
	}{
		{[]string{"echo dummy_QAQ"}, "echo dummy_QAQ"},
		{[]string{"echo", "dummy_QAQ"}, "echo dummy_QAQ"},
		{[]string{"sh", "-c", "echo a && echo b"}, "sh -c echo a && echo b"},
		{nil, ""},
	} {
		if got := joinCommand(tt.words); got != tt.want {
			t.Errorf("joinCommand(%q) = %q, want %q", tt.words, got, tt.want)
		}
	}
}

func TestWithEnv(t *testing.T) {
	got := withEnv([]string{"A=1", "HOME=/root", "B=2", "USER=root"}, map[string]string{"USER": "model", "HOME": "/home/model", "C": "3"})
	want := []string{"A=1", "B=2", "C=3", "HOME=/home/model", "USER=model"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("withEnv() (-want +got):\n%s", diff)
	}
}

// testRun is a run of the entrypoint in temporary directories, with a
// task config whose source is a git repository with one commit, and no
// daemon. The agent runs as the test's user.
type testRun struct {
	base, root, src, results string
	pristine                 string // the original tree (/ssebench-repo in an image)
	vars                     map[string]string
}

func newTestRun(t *testing.T) *testRun {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	base := t.TempDir()
	r := &testRun{base: base, root: filepath.Join(base, "ssebench"), src: filepath.Join(base, "src"), results: filepath.Join(base, "results")}
	for _, d := range []string{r.root, r.src} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(r.root, "config.yaml"), "id: demo-1\nsource: "+r.src+"\n")
	r.pristine = filepath.Join(base, "pristine")
	for _, dir := range []string{r.pristine, r.src} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "main.txt"), "good bug\n")
		writeFile(t, filepath.Join(dir, ".gitignore"), "*.o\n")
	}
	gitInit(t, r.src)
	r.vars = map[string]string{
		contract.EnvResults:     r.results,
		contract.EnvTaskRoot:    r.root,
		contract.EnvAgentSocket: filepath.Join(base, "agent.sock"),
		contract.EnvAdminSocket: filepath.Join(base, "admin.sock"),
	}
	return r
}

func gitInit(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{
		{"init", "-q"},
		{"add", "-A"},
		{"-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-q", "-m", "buggy commit"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", args[0], err, out)
		}
	}
}

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// run runs the entrypoint in-process with args, from SOURCE_DIR.
func (r *testRun) run(t *testing.T, args ...string) (int, *contract.RunResult, string) {
	t.Helper()
	wd, _ := os.Getwd()
	if err := os.Chdir(r.src); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	var log bytes.Buffer
	e, err := newEntrypoint(args, func(k string) string { return r.vars[k] }, os.Environ(), &log)
	if err != nil {
		t.Fatal(err)
	}
	e.agent = nil
	e.pristine = r.pristine
	code := e.run(context.Background())
	res, err := contract.ReadRunResult(r.results)
	if err != nil {
		t.Fatalf("%v (log: %s)", err, log.String())
	}
	return code, res, log.String()
}

func TestRunAgent(t *testing.T) {
	r := newTestRun(t)
	// The CMD words are joined and run by sh -c, in the working directory,
	// with stdin from /dev/null.
	code, res, _ := r.run(t, "echo", "agent on stdout;", "echo agent on stderr >&2;",
		"cat;", "printf 'good fixed\\n' > main.txt;", "echo new > added.txt;", "echo junk > x.o;", "exit 3")
	if code != 3 || res.AgentExit != 3 || res.TimedOut {
		t.Errorf("exit %d, result %+v; want 3, not timed out", code, res)
	}
	if got := readFile(t, filepath.Join(r.results, contract.AgentLog)); got != "agent on stdout\nagent on stderr\n" {
		t.Errorf("agent.log = %q", got)
	}
	patch := readFile(t, filepath.Join(r.results, contract.PatchFile))
	for _, want := range []string{"diff --git a/added.txt b/added.txt\nnew file mode 100644", "+new\n", "-good bug\n+good fixed\n"} {
		if !strings.Contains(patch, want) {
			t.Errorf("final.patch does not contain %q:\n%s", want, patch)
		}
	}
	if strings.Contains(patch, "x.o") {
		t.Errorf("final.patch has an ignored file:\n%s", patch)
	}
	if res.PatchBytes != int64(len(patch)) || len(res.PatchSHA256) != 64 {
		t.Errorf("patch_bytes %d, sha %q; want %d bytes and a sha256", res.PatchBytes, res.PatchSHA256, len(patch))
	}
	// The agent's own index is untouched: x.o and added.txt are not staged.
	cmd := exec.Command("git", "diff", "--cached", "--name-only")
	cmd.Dir = r.src
	if out, err := cmd.Output(); err != nil || len(out) != 0 {
		t.Errorf("the agent's index changed: %q, %v", out, err)
	}
	want := &contract.RunResult{TaskID: "demo-1", Mode: "sandbox", Command: res.Command, AgentExit: 3, Difficulty: 2,
		PatchBytes: res.PatchBytes, PatchSHA256: res.PatchSHA256, AgentDurationMS: res.AgentDurationMS,
		GradeError: "no daemon to grade with (" + r.vars[contract.EnvAdminSocket] + ")",
		Notes:      []string{"no daemon at " + r.root + "/ssebench-daemon: the agent cannot build or test through it, and the run is not graded"}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("result.json (-want +got):\n%s", diff)
	}
}

// TestRunTimeout checks the agent's time limit: status 124, and the whole
// process group killed, a background child included.
func TestRunTimeout(t *testing.T) {
	r := newTestRun(t)
	r.vars[contract.EnvTimeout] = "1"
	pidFile := filepath.Join(r.base, "pid")
	start := time.Now()
	code, res, _ := r.run(t, "sleep 300 & echo $! > "+pidFile+"; wait")
	if code != 124 || res.AgentExit != 124 || !res.TimedOut {
		t.Errorf("exit %d, agent_exit %d, timed_out %t; want 124, 124, true", code, res.AgentExit, res.TimedOut)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the run took %v with a 1s limit", d)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, pidFile)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil && !zombie(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the agent's background sleep %d outlived the time limit", pid)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "ran out of time after 1s") {
		t.Errorf("notes %q do not say the agent timed out", res.Notes)
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z'
}

func TestRunNoCommand(t *testing.T) {
	r := newTestRun(t)
	code, res, _ := r.run(t)
	if code != 0 || res.PatchBytes != 0 {
		t.Errorf("exit %d, patch %d bytes; want 0, 0", code, res.PatchBytes)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "no agent command") {
		t.Errorf("notes %q do not say nothing ran", res.Notes)
	}
}

func TestRunWithoutGitRepo(t *testing.T) {
	r := newTestRun(t)
	if err := os.RemoveAll(filepath.Join(r.src, ".git")); err != nil {
		t.Fatal(err)
	}
	code, res, _ := r.run(t, "true")
	if code != 0 || res.PatchBytes != 0 {
		t.Errorf("exit %d, patch %d bytes; want 0, 0", code, res.PatchBytes)
	}
	if got := readFile(t, filepath.Join(r.results, contract.PatchFile)); got != "" {
		t.Errorf("final.patch = %q, want empty", got)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "computing final.patch") {
		t.Errorf("notes %q do not say the patch failed", res.Notes)
	}
}

// TestRunSidecar runs the two sides of sidecar mode one after the other,
// without a daemon: the agent container's side runs the agent in
// SOURCE_DIR and leaves its report; the task container's side waits for the
// host's word, takes the report and writes final.patch and result.json.
func TestRunSidecar(t *testing.T) {
	defer func(d time.Duration) { daemonWait = d }(daemonWait)
	daemonWait = 200 * time.Millisecond
	r := newTestRun(t)
	r.vars[contract.EnvSourceDir] = r.src
	start := func(args ...string) *entrypoint {
		e, err := newEntrypoint(args, func(k string) string { return r.vars[k] }, os.Environ(), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		e.agent, e.workDir = nil, r.base
		return e
	}
	if code := start("--mode", "sidecar", "--", "echo hi > new.txt; exit 3").run(context.Background()); code != 3 {
		t.Errorf("agent side: exit %d, want the agent's 3", code)
	}
	if got := readFile(t, filepath.Join(r.src, "new.txt")); got != "hi\n" {
		t.Errorf("the agent did not run in SOURCE_DIR: new.txt = %q", got)
	}
	if _, err := os.Stat(filepath.Join(r.results, contract.ResultFile)); err == nil {
		t.Error("the agent side wrote result.json: the grade is the task container's")
	}
	// The host says the agent container ended; the task side grades.
	writeFile(t, filepath.Join(r.base, "agent-exit"), "137\n")
	if code := start("--mode", "sidecar-task").run(context.Background()); code != 3 {
		t.Errorf("task side: exit %d, want the agent's 3", code)
	}
	res, err := contract.ReadRunResult(r.results)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "sidecar" || res.AgentExit != 3 || res.Command != "echo hi > new.txt; exit 3" || res.TaskID != "demo-1" {
		t.Errorf("result %+v", res)
	}
	if !strings.Contains(readFile(t, filepath.Join(r.results, contract.PatchFile)), "+hi\n") {
		t.Error("final.patch lacks the agent's new file")
	}
	if _, err := os.Stat(filepath.Join(r.base, "ready")); err != nil {
		t.Errorf("the task side did not say the agent may start: %v", err)
	}
	// Without the agent container's report (it was killed), the host's
	// status is the agent's, and the result says so.
	writeFile(t, filepath.Join(r.src, "new.txt"), "again\n")
	if code := start("--mode", "sidecar-task").run(context.Background()); code != 137 {
		t.Errorf("task side without a report: exit %d, want 137", code)
	}
	if res, err = contract.ReadRunResult(r.results); err != nil {
		t.Fatal(err)
	}
	if res.AgentExit != 137 || !strings.Contains(strings.Join(res.Notes, "\n"), "without its report") {
		t.Errorf("result %+v", res)
	}
}

// TestModes checks the built-in modes and that an unknown one is refused
// with the list: the example mode exists only in programs that import it.
func TestModes(t *testing.T) {
	if got := strings.Join(Modes(), ","); got != "sandbox,sidecar,sidecar-task" {
		t.Errorf("Modes() = %s", got)
	}
	_, _, err := parseArgs([]string{"--mode", "example", "--", "true"})
	if err == nil || err.Error() != `unknown mode "example": use sandbox, sidecar, sidecar-task` {
		t.Errorf("parseArgs(--mode example) = %v", err)
	}
}

// TestDaemonEnvHasNoStreamToken: the results stream's token never reaches
// the daemon, whose scripts run the agent's code (on Kubernetes that code
// could print a block of its own with it).
func TestDaemonEnvHasNoStreamToken(t *testing.T) {
	hostile.Attack(t, "forged results", "the results stream's token never reaches the daemon or its scripts")
	e := &entrypoint{environ: []string{"PATH=/usr/bin", contract.EnvResultsStream + "=s3cr3ts3cr3ts3cr3t", "KEEP=1"}}
	env := e.daemonEnv()
	for _, kv := range env {
		if strings.Contains(kv, "s3cr3t") {
			t.Errorf("the daemon's environment has %q", kv)
		}
	}
	if !slices.Contains(env, "KEEP=1") {
		t.Errorf("daemonEnv() = %q, want the rest of the container's environment", env)
	}
}

// TestCappedWriter: agent.log keeps the first bytes and says the rest was
// cut, however much the agent prints.
func TestCappedWriter(t *testing.T) {
	var buf bytes.Buffer
	c := &cappedWriter{w: &buf, limit: 10}
	for i := 0; i < 1000; i++ {
		if n, err := c.Write([]byte("0123456")); n != 7 || err != nil {
			t.Fatalf("Write() = %d, %v", n, err)
		}
	}
	if got, want := buf.String(), "0123456012\n[ssebench: the rest of the agent's output was cut at 10 bytes]\n"; got != want {
		t.Errorf("log = %q, want %q", got, want)
	}
}
