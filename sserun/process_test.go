package sserun

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) STATE ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// exited waits until pid has exited, at most timeout, and reports whether
// it did: a pidfd becomes readable when its process ends, so this waits on
// the event itself rather than sleeping a guessed time.
func exited(pid int, timeout time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return !alive(pid) // ESRCH: gone and reaped already
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(timeout)
	for {
		n, err := unix.Poll(fds, int(max(time.Until(deadline), 0).Milliseconds()))
		if err == unix.EINTR {
			continue
		}
		return n > 0 || !alive(pid)
	}
}

func readPID(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestProcessExit(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   int
		out    string
	}{
		{"success", "echo out; echo err >&2", 0, "out\nerr\n"},
		{"status", "exit 3", 3, ""},
		{"signal", "kill -TERM $$", 128 + 15, ""},
		{"cwd and env", `echo "$PWD $FOO"`, 0, "/ bar\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			p := &Process{Args: []string{Shell, "-c", tt.script}, Dir: "/", Env: []string{"FOO=bar", "PWD=/"}, Output: &out}
			ex, err := p.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if ex.Code != tt.want || ex.TimedOut || out.String() != tt.out {
				t.Errorf("Run() = %+v with output %q, want code %d and output %q", ex, out.String(), tt.want, tt.out)
			}
		})
	}
}

func TestProcessStderrApart(t *testing.T) {
	var out, errOut bytes.Buffer
	p := &Process{Args: []string{Shell, "-c", "echo out; echo err >&2"}, Output: &out, Stderr: &errOut}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out.String() != "out\n" || errOut.String() != "err\n" {
		t.Errorf("output %q, stderr %q; want %q and %q", out.String(), errOut.String(), "out\n", "err\n")
	}
}

func TestProcessToFile(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := &Process{Args: []string{Shell, "-c", "echo hello; cat"}, Output: f}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f.Name())
	// cat reads /dev/null: it ends at once.
	if string(b) != "hello\n" {
		t.Errorf("log = %q, want %q", b, "hello\n")
	}
}

// TestProcessTimeout checks the time limit: status 124, and the whole
// process group killed, background children included.
func TestProcessTimeout(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	var out bytes.Buffer
	p := &Process{
		Args:    []string{Shell, "-c", "sleep 300 & echo $! > " + pidFile + "; echo started; wait"},
		Output:  &out,
		Timeout: 300 * time.Millisecond,
	}
	start := time.Now()
	ex, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ex.Code != contract.TimeoutStatus || !ex.TimedOut {
		t.Errorf("Run() = %+v, want code 124, timed out", ex)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Run() took %v after a 300ms limit", d)
	}
	if out.String() != "started\n" {
		t.Errorf("output = %q", out.String())
	}
	pid := readPID(t, pidFile)
	if !exited(pid, 5*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("background sleep %d outlived the time limit", pid)
	}
}

// TestProcessLeftovers checks that a background process the command left
// behind is killed when the command ends, and that its open pipe does not
// hold Run.
func TestProcessLeftovers(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	var out bytes.Buffer
	p := &Process{Args: []string{Shell, "-c", "sleep 300 & echo $! > " + pidFile}, Output: &out}
	start := time.Now()
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > outputGrace {
		t.Errorf("Run() took %v", d)
	}
	pid := readPID(t, pidFile)
	if !exited(pid, 5*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("background sleep %d outlived its command", pid)
	}
}

func TestProcessCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	ex, err := (&Process{Args: []string{"/bin/sleep", "300"}}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Code != 128+9 || ex.TimedOut {
		t.Errorf("Run() = %+v, want code 137, not timed out", ex)
	}
}

func TestProcessOtherUserNeedsRoot(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may run as anyone")
	}
	_, err := (&Process{Args: []string{"/bin/true"}, User: &User{Name: "x", UID: os.Getuid() + 1}}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "needs root") {
		t.Errorf("Run() = %v, want a needs-root error", err)
	}
}

// TestProcessAsUser runs as nobody, as root can: the uid, the primary
// group and no supplementary groups; and every process the user has is
// killed afterwards.
func TestProcessAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	u, err := LookupUser(PasswdFile, "nobody")
	if err != nil {
		t.Skip(err)
	}
	requireIdle(t, u.UID)
	pidFile := filepath.Join(sharedTempDir(t), "pid")
	var out bytes.Buffer
	// setsid: the leftover leaves the process group; only KillUser finds it.
	script := "id -u; id -g; id -G; setsid sleep 300 & echo $! > " + pidFile
	p := &Process{Args: []string{Shell, "-c", script}, Dir: "/", Output: &out, User: &u}
	if _, err := p.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat(strconv.Itoa(u.UID)+"\n", 1) + strconv.Itoa(u.GID) + "\n" + strconv.Itoa(u.GID) + "\n"
	if out.String() != want {
		t.Errorf("id output = %q, want %q", out.String(), want)
	}
	pid := readPID(t, pidFile)
	if !exited(pid, 5*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("a process of %s outlived the command", u.Name)
	}
}

func TestKillUserRefuses(t *testing.T) {
	for _, uid := range []int{0, os.Getuid()} {
		if err := KillUser(uid); err == nil {
			t.Errorf("KillUser(%d) = nil, want a refusal", uid)
		}
	}
}

func TestTailBuffer(t *testing.T) {
	tb := newTailBuffer(4)
	for _, s := range []string{"ab", "cdef", "g", "hijklmnop", "q"} {
		tb.Write([]byte(s))
	}
	want := "[ssebench: the first 13 bytes of output were cut]\nnopq"
	if got := tb.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	small := newTailBuffer(10)
	small.Write([]byte("abc"))
	if got := small.String(); got != "abc" {
		t.Errorf("String() = %q, want %q", got, "abc")
	}
}

// sharedTempDir returns a temporary directory that every user may enter
// and write to, as tests that run processes as another user need (the
// testing package makes its directories 0700).
func sharedTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// requireIdle skips the test when a user it runs processes as has
// processes on this machine: Run kills every process of that user
// afterwards, which a test must not do to a real account.
func requireIdle(t *testing.T, uids ...int) {
	t.Helper()
	for _, uid := range uids {
		pids, err := processesOf(uid, hostPidNS())
		if err != nil {
			t.Skip(err)
		}
		if len(pids) > 0 {
			t.Skipf("uid %d has processes on this machine, which the test would kill", uid)
		}
	}
}
