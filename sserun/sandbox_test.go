package sserun

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

// sandboxProbeEnv makes the test binary, run as a sandboxed command,
// TestSandboxProbe: it reports what it sees instead of testing.
const sandboxProbeEnv = "SSEBENCH_SANDBOX_PROBE"

// TestSandboxProbe is not a test: run by TestSandbox inside a sandbox, it
// prints one line per thing the sandbox must hide or give, as
// "name=value".
func TestSandboxProbe(t *testing.T) {
	addr := os.Getenv(sandboxProbeEnv)
	if addr == "" {
		t.Skip("run by TestSandbox only")
	}
	var tmp []string
	for _, d := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		ents, _ := os.ReadDir(d)
		names := []string{}
		for _, e := range ents {
			names = append(names, e.Name())
		}
		tmp = append(tmp, d+":"+strings.Join(names, ","))
	}
	fmt.Printf("tmp=%s\n", strings.Join(tmp, " "))
	_, err := os.ReadFile(os.Getenv("SECRET_FILE"))
	fmt.Printf("secret=%v\n", err == nil)
	fmt.Printf("wrote=%v\n", os.WriteFile("/tmp/left-by-the-script", []byte("x"), 0o644) == nil)
	// The agent's world-writable file in a folder of its own.
	drop, err := os.OpenFile(os.Getenv("DROP_FILE"), os.O_WRONLY, 0)
	if err == nil {
		_, err = drop.WriteString("the proof of concept")
		drop.Close()
	}
	fmt.Printf("drop=%v\n", err == nil)

	// The agent's listener on the container's loopback.
	if c, err := net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
		fmt.Fprintln(c, "the hidden tests")
		c.Close()
		fmt.Println("dial=reached")
	} else {
		fmt.Println("dial=refused")
	}
	// Its own loopback works.
	own := "broken"
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		go func() {
			if c, err := l.Accept(); err == nil {
				c.Write([]byte("hi"))
				c.Close()
			}
		}()
		if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
			if b, _ := io.ReadAll(c); string(b) == "hi" {
				own = "works"
			}
			c.Close()
		}
		l.Close()
	}
	fmt.Printf("lo=%s\n", own)
	wd, _ := os.Getwd()
	fmt.Printf("cwd=%s\n", wd)
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		for _, k := range []string{"Uid", "Gid", "Groups", "CapPrm", "CapEff", "NoNewPrivs"} {
			if strings.HasPrefix(line, k+":") {
				fmt.Printf("%s=%s\n", k, strings.Join(strings.Fields(strings.TrimPrefix(line, k+":")), " "))
			}
		}
	}
	os.Stdout.Sync()
	os.Exit(0)
}

// probeLines parses TestSandboxProbe's output.
func probeLines(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}

// TestSandbox runs the probe as nobody in a sandbox, with a file in the
// container's /tmp and a listener on its 127.0.0.1 that the agent would
// have put there.
func TestSandbox(t *testing.T) {
	hostile.Attack(t, "grader sandbox", "each script in user, mount, network and IPC namespaces of its own")
	testenv.Need(t, os.Geteuid() == 0, "the sandbox test needs root")
	u, err := LookupUser(PasswdFile, "nobody")
	testenv.Need(t, err == nil, fmt.Sprintf("the sandbox test needs the account nobody: %v", err))
	requireIdle(t, u.UID)

	// The agent's file in /tmp, readable by all.
	secret, err := os.CreateTemp("/tmp", "agent-drop-")
	if err != nil {
		t.Fatal(err)
	}
	secret.Close()
	defer os.Remove(secret.Name())
	if err := os.Chmod(secret.Name(), 0o666); err != nil {
		t.Fatal(err)
	}
	// The agent's listener on the container's loopback.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		b, _ := io.ReadAll(c)
		got <- string(b)
	}()

	// A folder of the agent's, outside /tmp, with a file every user may
	// write.
	agentDir, err := os.MkdirTemp("/run", "ssebench-agent-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(agentDir)
	dropFile := filepath.Join(agentDir, "drop")
	if err := os.WriteFile(dropFile, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dropFile, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(agentDir, 0o755); err != nil {
		t.Fatal(err)
	}

	// The scratch tree: under /tmp, as the daemon's is by default.
	scratch := sharedTempDir(t)
	probe := filepath.Join(scratch, "probe")
	if err := copyFile(os.Args[0], probe); err != nil {
		t.Fatal(err)
	}
	defer os.Remove("/tmp/left-by-the-script")
	var out bytes.Buffer
	p := &Process{
		Args:    []string{probe, "-test.run=^TestSandboxProbe$"},
		Dir:     scratch,
		Env:     []string{sandboxProbeEnv + "=" + l.Addr().String(), "SECRET_FILE=" + secret.Name(), "DROP_FILE=" + dropFile},
		User:    &u,
		Output:  &out,
		Sandbox: &Sandbox{Keep: []string{scratch}, Hide: []string{agentDir}},
	}
	ex, err := p.Run(context.Background())
	if err != nil || ex.Code != 0 {
		t.Fatalf("Run() = %+v, %v\n%s", ex, err, out.String())
	}
	if ex.Sandbox != SandboxOn {
		t.Errorf("Exit.Sandbox = %q, want %q", ex.Sandbox, SandboxOn)
	}
	m := probeLines(out.String())
	want := map[string]string{
		"tmp":        "/tmp:" + strings.TrimPrefix(scratch, "/tmp/")[:strings.Index(strings.TrimPrefix(scratch, "/tmp/"), "/")] + " /var/tmp: /dev/shm:",
		"secret":     "false",
		"wrote":      "true",
		"drop":       "false",
		"dial":       "refused",
		"lo":         "works",
		"cwd":        scratch,
		"Uid":        strings.Repeat(fmt.Sprint(u.UID)+" ", 3) + fmt.Sprint(u.UID),
		"Gid":        strings.Repeat(fmt.Sprint(u.GID)+" ", 3) + fmt.Sprint(u.GID),
		"Groups":     "",
		"CapPrm":     "0000000000000000",
		"CapEff":     "0000000000000000",
		"NoNewPrivs": "1",
	}
	if _, err := os.Stat("/var/tmp"); err != nil {
		want["tmp"] = strings.Replace(want["tmp"], " /var/tmp:", "", 1)
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("in the sandbox, %s = %q, want %q", k, m[k], v)
		}
	}
	select {
	case s := <-got:
		t.Errorf("the listener on the container's loopback got %q", s)
	default:
	}
	if b, _ := os.ReadFile(dropFile); len(b) > 0 {
		t.Errorf("the script wrote %q into a file of the agent's", b)
	}
	if _, err := os.Stat("/tmp/left-by-the-script"); err == nil {
		t.Errorf("a file the script wrote in its /tmp is in the container's /tmp")
	}
}

// TestSandboxKillsLeftovers checks that what a sandboxed command leaves
// running dies with it, even out of its process group. The leftover's pid
// is the PID namespace's own, meaningless outside: what is checked is
// that the user has no process left.
func TestSandboxKillsLeftovers(t *testing.T) {
	testenv.Need(t, os.Geteuid() == 0, "the sandbox test needs root")
	u, err := LookupUser(PasswdFile, "nobody")
	testenv.Need(t, err == nil, fmt.Sprintf("the sandbox test needs the account nobody: %v", err))
	requireIdle(t, u.UID)
	dir := sharedTempDir(t)
	p := &Process{
		Args:    []string{Shell, "-c", "setsid sleep 300 & setsid sh -c 'sleep 300 & sleep 300' & echo started"},
		Dir:     dir,
		User:    &u,
		Sandbox: &Sandbox{Keep: []string{dir}},
	}
	ex, err := p.Run(context.Background())
	if err != nil || ex.Sandbox != SandboxOn {
		t.Fatalf("Run() = %+v, %v", ex, err)
	}
	pids, err := processesOf(u.UID, hostPidNS())
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if len(pids) > 0 {
		t.Errorf("processes %v left by the sandboxed command outlived it", pids)
	}
}

// TestSandboxProcesses checks that a sandboxed script sees its own
// processes and no other's: not the command line of a process of the
// container (here a marker started by the test), of the test itself (as
// of the daemon), or of the helper that is its init.
func TestSandboxProcesses(t *testing.T) {
	hostile.Attack(t, "grader sandbox", "each script in a PID namespace of its own, with a /proc that lists only its processes")
	testenv.Need(t, os.Geteuid() == 0, "the sandbox test needs root")
	u, err := LookupUser(PasswdFile, "nobody")
	testenv.Need(t, err == nil, fmt.Sprintf("the sandbox test needs the account nobody: %v", err))
	requireIdle(t, u.UID)
	marker := fmt.Sprintf("ssebench-marker-%d", time.Now().UnixNano())
	other := exec.Command(Shell, "-c", "sleep 300", marker)
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		other.Process.Kill()
		other.Wait()
	}()
	dir := sharedTempDir(t)
	var out bytes.Buffer
	p := &Process{
		Args:    []string{Shell, "-c", "cat /proc/*/cmdline | tr '\\0' ' '; echo; ls -d /proc/[0-9]* | wc -l"},
		Dir:     dir,
		User:    &u,
		Output:  &out,
		Sandbox: &Sandbox{Keep: []string{dir}},
	}
	ex, err := p.Run(context.Background())
	if err != nil || ex.Code != 0 || ex.Sandbox != SandboxOn || ex.PIDNamespace != SandboxOn {
		t.Fatalf("Run() = %+v, %v\n%s", ex, err, out.String())
	}
	got := out.String()
	if !strings.Contains(got, "cat /proc/*/cmdline") {
		t.Errorf("the script does not see its own command line:\n%s", got)
	}
	for _, hidden := range []string{marker, os.Args[0], sandboxArg0} {
		if strings.Contains(got, hidden) {
			t.Errorf("the script sees the command line of another process (%q):\n%s", hidden, got)
		}
	}
	// sh, ls and wc at most, each of them the script's.
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if n, err := strconv.Atoi(strings.TrimSpace(lines[len(lines)-1])); err != nil || n > 3 {
		t.Errorf("the script sees more processes than its own:\n%s", got)
	}
}

// TestSandboxInit checks the command's end in its PID namespace, where
// the helper is its init: the status a shell reports, orphans reaped, and
// the time limit.
func TestSandboxInit(t *testing.T) {
	testenv.Need(t, os.Geteuid() == 0, "the sandbox test needs root")
	u, err := LookupUser(PasswdFile, "nobody")
	testenv.Need(t, err == nil, fmt.Sprintf("the sandbox test needs the account nobody: %v", err))
	requireIdle(t, u.UID)
	tests := []struct {
		name    string
		script  string
		timeout time.Duration
		code    int
		out     string
	}{
		{"status", "exit 3", 0, 3, ""},
		{"a signal", "kill -TERM $$", 0, 128 + 15, ""},
		{"killed", "kill -KILL $$", 0, 128 + 9, ""},
		// Orphans are the init's: they are reaped, not left as zombies.
		{"orphans reaped", "for i in 1 2 3 4 5; do (sh -c 'exit 0' &); done; sleep 0.5; grep -l '^State:.*Z' /proc/[0-9]*/status | wc -l", 0, 0, "0\n"},
		{"the time limit", "echo started; setsid sleep 300 & wait", 300 * time.Millisecond, contract.TimeoutStatus, "started\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := sharedTempDir(t)
			var out bytes.Buffer
			p := &Process{Args: []string{Shell, "-c", tt.script}, Dir: dir, User: &u, Output: &out, Timeout: tt.timeout, Sandbox: &Sandbox{Keep: []string{dir}}}
			start := time.Now()
			ex, err := p.Run(context.Background())
			if err != nil || ex.PIDNamespace != SandboxOn {
				t.Fatalf("Run() = %+v, %v", ex, err)
			}
			if ex.Code != tt.code || out.String() != tt.out || ex.TimedOut != (tt.timeout > 0) {
				t.Errorf("Run() = %+v with output %q, want code %d and output %q", ex, out.String(), tt.code, tt.out)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("Run() took %v", d)
			}
			if pids, _ := processesOf(u.UID, hostPidNS()); len(pids) > 0 {
				t.Errorf("processes %v of %s outlived the command", pids, u.Name)
				for _, pid := range pids {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
	}
}

// maskedProcFiles are files of /proc that container runtimes cover with
// /dev/null (containerd's and Kubernetes' default MaskedPaths).
var maskedProcFiles = []string{"/proc/timer_list", "/proc/keys", "/proc/kcore", "/proc/sched_debug", "/proc/latency_stats"}

// TestSandboxMaskedProc runs a sandboxed command where /proc has a path
// masked, as in a container: the kernel refuses the sandbox a /proc of
// its own, and the command runs in the other namespaces, without a PID
// namespace, once, and says why.
func TestSandboxMaskedProc(t *testing.T) {
	testenv.Need(t, os.Geteuid() == 0, "the sandbox test needs root")
	u, err := LookupUser(PasswdFile, "nobody")
	testenv.Need(t, err == nil, fmt.Sprintf("the sandbox test needs the account nobody: %v", err))
	requireIdle(t, u.UID)
	mask := ""
	for _, f := range maskedProcFiles {
		if _, err := os.Stat(f); err == nil {
			mask = f
			break
		}
	}
	testenv.Need(t, mask != "", "the masked /proc test needs one of "+strings.Join(maskedProcFiles, ", "))
	dir := sharedTempDir(t)
	var out bytes.Buffer
	p := &Process{
		Args:    []string{Shell, "-c", "echo ran; ls -d /proc/[0-9]* | wc -l"},
		Dir:     dir,
		User:    &u,
		Output:  &out,
		Sandbox: &Sandbox{Keep: []string{dir}},
	}
	type result struct {
		ex  Exit
		err error
	}
	done := make(chan result, 1)
	go func() {
		// A mount namespace of this thread's own, where /proc is masked
		// as a container's is; the helper is forked from this thread.
		// The thread is never unlocked: it ends with the goroutine.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			done <- result{err: fmt.Errorf("unsharing the mount namespace: %w", err)}
			return
		}
		if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			done <- result{err: err}
			return
		}
		if err := unix.Mount("/dev/null", mask, "", unix.MS_BIND, ""); err != nil {
			done <- result{err: fmt.Errorf("masking %s: %w", mask, err)}
			return
		}
		ex, err := p.Run(context.Background())
		done <- result{ex, err}
	}()
	r := <-done
	if r.err != nil || r.ex.Code != 0 || r.ex.Sandbox != SandboxOn {
		t.Fatalf("Run() = %+v, %v, output %q; want it run in the sandbox", r.ex, r.err, out.String())
	}
	if !strings.HasPrefix(r.ex.PIDNamespace, SandboxNone+procStep) {
		t.Errorf("Exit.PIDNamespace = %q, want %q and why", r.ex.PIDNamespace, SandboxNone+procStep)
	}
	if !strings.HasPrefix(out.String(), "ran\n") || strings.Count(out.String(), "ran") != 1 {
		t.Errorf("output %q, want the command run once", out.String())
	}
}

// TestSandboxRefused checks that a sandbox that cannot be set up runs the
// command without it and says why.
func TestSandboxRefused(t *testing.T) {
	testenv.Need(t, os.Geteuid() == 0, "the sandbox test needs root")
	u, err := LookupUser(PasswdFile, "nobody")
	testenv.Need(t, err == nil, fmt.Sprintf("the sandbox test needs the account nobody: %v", err))
	requireIdle(t, u.UID)
	var out bytes.Buffer
	p := &Process{
		Args:   []string{Shell, "-c", "echo ran"},
		Dir:    "/",
		User:   &u,
		Output: &out,
		// A kept directory that is not there: the helper gives up before
		// the command runs.
		Sandbox: &Sandbox{Keep: []string{"/tmp/ssebench-no-such-dir/x"}},
	}
	ex, err := p.Run(context.Background())
	if err != nil || ex.Code != 0 || out.String() != "ran\n" {
		t.Fatalf("Run() = %+v, %v, output %q; want the command run once", ex, err, out.String())
	}
	if !strings.HasPrefix(ex.Sandbox, SandboxNone) || !strings.Contains(ex.Sandbox, "ssebench-no-such-dir") {
		t.Errorf("Exit.Sandbox = %q, want %q and the reason", ex.Sandbox, SandboxNone)
	}
}

// TestProcessNoNewPrivs checks that a process run as another user cannot
// gain privileges through a setuid program.
func TestProcessNoNewPrivs(t *testing.T) {
	testenv.Need(t, os.Geteuid() == 0, "the sandbox test needs root")
	u, err := LookupUser(PasswdFile, "nobody")
	testenv.Need(t, err == nil, fmt.Sprintf("the sandbox test needs the account nobody: %v", err))
	requireIdle(t, u.UID)
	var out bytes.Buffer
	p := &Process{Args: []string{Shell, "-c", "grep NoNewPrivs /proc/self/status"}, Dir: "/", User: &u, Output: &out}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(strings.Fields(out.String()), " "); got != "NoNewPrivs: 1" {
		t.Errorf("as %s: %q, want NoNewPrivs: 1", u.Name, got)
	}
	// Root's own processes (git for the entrypoint) are left as they were.
	out.Reset()
	p = &Process{Args: []string{Shell, "-c", "grep NoNewPrivs /proc/self/status"}, Dir: "/", Output: &out}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(strings.Fields(out.String()), " "); got != "NoNewPrivs: 0" {
		t.Errorf("as root: %q, want NoNewPrivs: 0", got)
	}
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

func TestGradeSandbox(t *testing.T) {
	on, none := &Result{Sandbox: SandboxOn}, &Result{Sandbox: SandboxNone + "clone: operation not permitted"}
	tests := []struct {
		name string
		g    Grade
		want string
	}{
		{"all in", Grade{Build: on, Test: on, PoC: &Result{}, IntentTest: on}, SandboxOn},
		{"one refused", Grade{Build: on, Test: none}, none.Sandbox},
		{"nothing ran", Grade{Build: &Result{}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.g.Sandbox(); got != tt.want {
				t.Errorf("Grade.Sandbox() = %q, want %q", got, tt.want)
			}
		})
	}
}
