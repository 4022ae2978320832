package sserun

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// killAllTestEnv marks the run of TestKillAllFromChild inside its own PID
// namespace.
const killAllTestEnv = "SSEBENCH_TEST_KILLALL_INSIDE"

// TestKillAllFromChild: KillAll's kill(-1) is made by a child that runs
// as the uid, never by a thread of the caller that takes the uid for the
// call: in that moment any process of the uid could stop the whole
// daemon with SIGSTOP. A seccomp filter kills the test's process should
// one of its threads take the uid that way. It runs in a PID namespace
// of its own, where KillAll makes its kill(-1) and reaches nothing of the
// machine's.
func TestKillAllFromChild(t *testing.T) {
	hostile.Attack(t, "stop the daemon", "the kill(-1) made from a child")
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	u, err := LookupUser(PasswdFile, "nobody")
	if err != nil {
		t.Skip(err)
	}
	if os.Getenv(killAllTestEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillAllFromChild$", "-test.v")
		cmd.Env = append(os.Environ(), killAllTestEnv+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestKillAllFromChild") {
			t.Fatalf("in a PID namespace of its own: %v\n%s", err, out)
		}
		return
	}
	// Here: init of a new PID namespace, with a /proc of its own.
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Skip(err)
	}
	if err := unix.Mount("proc", "/proc", "proc", 0, ""); err != nil {
		t.Skip(err)
	}
	if hostPidNS() != "" {
		t.Fatal("still in the host's PID namespace")
	}
	sleeper := exec.Command("/bin/sleep", "60")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: []uint32{}}}
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	// From here on a thread of this process that takes another uid
	// while keeping root saved, as a thread that must become root again
	// does (setresuid(uid, uid, 0)), kills the process: the old way.
	if err := forbidTakingUID(); err != nil {
		t.Skip(err)
	}
	start := time.Now()
	if _, err := KillAll(u.UID); err != nil {
		t.Fatalf("KillAll() = %v", err)
	}
	err = sleeper.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the process of uid %d ended with %v, want SIGKILL", u.UID, err)
	}
	t.Logf("KillAll took %s", time.Since(start))
}

// forbidTakingUID installs, on every thread of the process, a seccomp
// filter that kills the process on setresuid(r, e, 0) with r other than
// 0: a thread leaving root for a moment. A child's setuid(2) before its
// exec (how Go starts a process as another user) is let through.
func forbidTakingUID() error {
	const (
		offNr   = 0  // seccomp_data.nr
		offArg0 = 16 // seccomp_data.args[0], low word (little-endian)
		offArg2 = 32 // seccomp_data.args[2], low word
	)
	prog := []unix.SockFilter{
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offNr},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: unix.SYS_SETRESUID, Jt: 0, Jf: 5},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offArg0},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 0, Jt: 3, Jf: 0},
		{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: offArg2},
		{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: 0, Jt: 0, Jf: 1},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_KILL_PROCESS},
		{Code: unix.BPF_RET | unix.BPF_K, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, e := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	if e != 0 {
		return fmt.Errorf("installing the seccomp filter: %w", e)
	}
	return nil
}
