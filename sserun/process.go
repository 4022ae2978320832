package sserun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// outputGrace is how long Run waits, once the process group is dead, for
// the last output to drain.
const outputGrace = 5 * time.Second

// Process is a command run in its own process group, as another user when
// User is set. When it ends (on its own, at its time limit, or when ctx
// ends) the whole group is killed, and so is every process the user still
// has: a background process must not outlive the command and tamper with
// what runs next.
type Process struct {
	// Args is the command: Args[0] is the program's path.
	Args []string
	// Dir is the working directory.
	Dir string
	// Env is the whole environment.
	Env []string
	// User is the account to run as, with its primary group and no
	// supplementary groups. Nil runs as the caller. Only root can run a
	// process as another user.
	User *User
	// Output receives standard output, and standard error too unless
	// Stderr is set. An *os.File is handed to the process as is; any other
	// writer is fed through a pipe. Nil discards. Standard input is always
	// /dev/null.
	Output io.Writer
	// Stderr, when set, receives standard error apart from Output.
	Stderr io.Writer
	// Timeout bounds the run; 0 means no limit.
	Timeout time.Duration
	// OOMFirst makes the process, and what it starts, the kernel's first
	// choice when the container runs out of memory (oom_score_adj 1000):
	// the agent's runaway allocation is what dies, not the entrypoint
	// that reports it.
	OOMFirst bool
	// Sandbox, when set, runs the command in namespaces of its own (see
	// Sandbox); User must be set. Exit.Sandbox says whether it did.
	Sandbox *Sandbox
	// Beside marks a server that runs beside the user's main command
	// (OpenCode's, beside the agent): its end kills its own process
	// group only. The user's other processes belong to the command, whose
	// end (or the end of the agent phase) kills them, this server too.
	Beside bool
}

// Exit is how a Process ended.
type Exit struct {
	// Code is the exit status, 128+N after signal N, contract.TimeoutStatus
	// when the time limit killed it.
	Code     int
	TimedOut bool
	Duration time.Duration
	// Sandbox is, for a Process with Sandbox set, SandboxOn when the
	// command ran in its sandbox, or SandboxNone and the reason the
	// kernel or the container runtime refused it, when it ran without.
	Sandbox string
	// PIDNamespace is, for a Process with Sandbox set, SandboxOn when the
	// command also had a PID namespace and a /proc of its own (it saw no
	// other process, and nothing it started outlived it), or SandboxNone
	// and why not: then it saw the container's processes in /proc, as a
	// command without one does. A container runtime that masks paths of
	// /proc (containerd's and Kubernetes' default) forbids a new /proc in
	// a user namespace; see Sandbox.
	PIDNamespace string
}

// runMode is how far Process.run isolates the command.
type runMode int

const (
	// plain runs the command as it is, as User.
	plain runMode = iota
	// sandboxed runs it in user, mount, network and IPC namespaces.
	sandboxed
	// sandboxedPID adds a PID namespace and a /proc of its own.
	sandboxedPID
)

// Run runs the process and waits for it. The error is about starting it;
// how it ended is in Exit. When ctx ends first the group is killed and
// Code says so (137).
//
// Every process that does not run as root gets no_new_privs: no setuid
// program of the image can make the agent, or the agent's code in a
// script, root again.
func (p *Process) Run(ctx context.Context) (Exit, error) {
	if len(p.Args) == 0 {
		return Exit{Code: -1}, errors.New("running a process: no command")
	}
	if p.Sandbox == nil {
		ex, _, err := p.run(ctx, plain)
		return ex, err
	}
	ex, refused, err := p.run(ctx, sandboxedPID)
	if err != nil {
		return ex, err
	}
	if refused == "" {
		ex.Sandbox, ex.PIDNamespace = SandboxOn, SandboxOn
		return ex, nil
	}
	// None of the command ran: the helper failed before its exec. A
	// refusal is the kernel's or the runtime's, made before any of the
	// agent's code runs, so the agent cannot bring it about. Without its
	// PID namespace the command runs as it did before there was one;
	// without any sandbox it runs as it would without one. The caller
	// records why.
	noPID := refused
	if pidRefusal(refused) {
		ex, refused, err = p.run(ctx, sandboxed)
		if err != nil {
			return ex, err
		}
		if refused == "" {
			ex.Sandbox, ex.PIDNamespace = SandboxOn, SandboxNone+noPID
			return ex, nil
		}
	}
	if p.Sandbox.Required {
		return Exit{Code: -1, Sandbox: SandboxNone + refused, PIDNamespace: SandboxNone + refused}, fmt.Errorf("%w: %s", ErrNoSandbox, refused)
	}
	ex, _, err = p.run(ctx, plain)
	ex.Sandbox, ex.PIDNamespace = SandboxNone+refused, SandboxNone+refused
	return ex, err
}

// pidRefusal tells whether the sandbox may have been refused for its PID
// namespace alone: the proc mount failed, or clone did (which flag it
// refused, it does not say).
func pidRefusal(refused string) bool {
	return strings.HasPrefix(refused, procStep) || strings.HasPrefix(refused, cloneStep)
}

// cloneStep starts the refusal of clone itself.
const cloneStep = "creating namespaces: "

// run runs the process once, isolated as mode says. It returns, in
// refused, why the sandbox could not be set up; the command did not run
// then.
func (p *Process) run(ctx context.Context, mode runMode) (_ Exit, refused string, _ error) {
	cmd := exec.Command(p.Args[0], p.Args[1:]...)
	cmd.Dir = p.Dir
	cmd.Env = p.Env
	attr := &syscall.SysProcAttr{Setpgid: true}
	var report *os.File
	if mode != plain {
		args, err := p.sandboxAttr(attr, mode == sandboxedPID)
		if err != nil {
			return Exit{Code: -1}, err.Error(), nil
		}
		// The helper is this very binary, run again: it sets the
		// sandbox up as root inside it, then becomes User.
		cmd.Path, cmd.Args = "/proc/self/exe", args
		r, w, err := os.Pipe()
		if err != nil {
			return Exit{Code: -1}, "", fmt.Errorf("making the sandbox's report pipe: %w", err)
		}
		defer r.Close()
		defer w.Close()
		report = r
		cmd.ExtraFiles = []*os.File{w}
	} else {
		if p.User != nil {
			cred, err := credential(p.User)
			if err != nil {
				return Exit{Code: -1}, "", err
			}
			attr.Credential = cred
		}
		if p.OOMFirst {
			// Through a helper that raises its own score and then
			// execs the command: a write from here, after the start,
			// would come after the command's first children.
			cmd.Path, cmd.Args = "/proc/self/exe", append([]string{oomFirstArg0}, p.Args...)
		}
	}
	cmd.SysProcAttr = attr

	out, err := attach(p.Output)
	if err != nil {
		return Exit{Code: -1}, "", err
	}
	cmd.Stdout, cmd.Stderr = out.writer(), out.writer()
	sinks := []*sink{out}
	if p.Stderr != nil {
		errOut, err := attach(p.Stderr)
		if err != nil {
			out.abort()
			return Exit{Code: -1}, "", err
		}
		cmd.Stderr = errOut.writer()
		sinks = append(sinks, errOut)
	}

	start := time.Now()
	err = p.start(cmd, mode != plain)
	for _, s := range sinks {
		// The child has its copy of the pipe's write end; ours must go,
		// or the pipe never ends.
		s.started()
	}
	if err != nil {
		for _, s := range sinks {
			s.abort()
		}
		if mode != plain {
			// clone or the id maps refused: no namespaces here.
			return Exit{Code: -1}, cloneStep + err.Error(), nil
		}
		return Exit{Code: -1}, "", fmt.Errorf("starting %s: %w", p.Args[0], err)
	}
	pgid := cmd.Process.Pid
	if report != nil {
		cmd.ExtraFiles[0].Close()
		if why := readReport(report); why != "" {
			_ = cmd.Wait()
			killGroup(pgid)
			for _, s := range sinks {
				s.drain()
			}
			return Exit{Code: -1}, why, nil
		}
	}
	if p.OOMFirst {
		// Raising a score needs no privilege; a child can never lower
		// it again without CAP_SYS_RESOURCE. The helpers raised it
		// already, before the command ran; this covers a helper that
		// could not.
		_ = os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", pgid), []byte(oomFirstScore), 0)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	var expired <-chan time.Time
	if p.Timeout > 0 {
		t := time.NewTimer(p.Timeout)
		defer t.Stop()
		expired = t.C
	}
	timedOut := false
	// In its own PID namespace the helper is the command's init: killing
	// it makes the kernel kill every process of the namespace, whatever
	// group or session it moved to.
	select {
	case <-waited:
	case <-expired:
		timedOut = true
		killGroup(pgid)
		<-waited
	case <-ctx.Done():
		killGroup(pgid)
		<-waited
	}
	// Whatever the leader did, nothing it started may keep running.
	killGroup(pgid)
	if p.User != nil && !p.Beside && (mode != sandboxedPID || leftovers(p.User.UID)) {
		_ = KillUser(p.User.UID)
	}
	for _, s := range sinks {
		s.drain()
	}

	ex := Exit{Code: exitCode(cmd.ProcessState), TimedOut: timedOut, Duration: time.Since(start)}
	if timedOut {
		ex.Code = contract.TimeoutStatus
	}
	return ex, "", nil
}

// oomFirstArg0 is argv[0] of the helper that runs a command with
// OOMFirst: the binary that links this package, run again through
// /proc/self/exe, raises its own oom_score_adj in init and execs the
// command (argv[1:]), which so starts with it.
const oomFirstArg0 = "ssebench-oomfirst"

// oomFirstScore is the highest oom_score_adj: killed first.
const oomFirstScore = "1000"

func init() {
	if len(os.Args) > 1 && os.Args[0] == oomFirstArg0 {
		oomFirstMain(os.Args[1:])
	}
}

// oomFirstMain raises its own score and becomes args; it never returns.
func oomFirstMain(args []string) {
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte(oomFirstScore), 0)
	path := args[0]
	if !strings.Contains(path, "/") {
		if lp, err := exec.LookPath(path); err == nil {
			path = lp
		}
	}
	err := syscall.Exec(path, args, os.Environ())
	fmt.Fprintf(os.Stderr, "%s: %v\n", args[0], err)
	os.Exit(127)
}

// leftovers tells whether uid still has a process after a command that ran
// in a PID namespace of its own. It should have none: the kernel kills
// every process of a PID namespace when its init ends, before the init's
// parent can reap it, so what the command left died with it. When there
// is none, KillUser's kill(-1) is not needed, and neither is the moment
// in which a thread of the daemon takes the runner's uid to make it: no
// process of the runner is left to stop that thread then.
func leftovers(uid int) bool {
	pids, err := processesOf(uid, hostPidNS())
	return err != nil || len(pids) > 0
}

// start starts cmd; with no_new_privs unless the command runs as root.
// The flag is set on a locked thread that forks the child and then dies
// with its goroutine: the child inherits the flag, and no thread of this
// (root) process keeps it. The sandbox's helper sets it itself, after it
// set the sandbox up as root.
func (p *Process) start(cmd *exec.Cmd, sandboxed bool) error {
	root := os.Geteuid() == 0 && (p.User == nil || p.User.UID == 0)
	if sandboxed || root {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			errc <- fmt.Errorf("setting no_new_privs: %w", err)
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}

// sink connects a writer to a child's output: an *os.File directly, any
// other writer through a pipe copied by a goroutine.
type sink struct {
	child  *os.File // what the child writes to; nil for /dev/null
	r      *os.File // read end of the pipe, if any
	copied chan struct{}
}

func attach(w io.Writer) (*sink, error) {
	s := &sink{copied: make(chan struct{})}
	switch w := w.(type) {
	case nil:
		close(s.copied)
	case *os.File:
		s.child = w
		close(s.copied)
	default:
		r, pw, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("making an output pipe: %w", err)
		}
		s.child, s.r = pw, r
		go func() {
			defer close(s.copied)
			_, _ = io.Copy(w, r)
		}()
	}
	return s, nil
}

// writer is what exec.Cmd gets: nil (not a nil *os.File) for /dev/null.
func (s *sink) writer() io.Writer {
	if s.child == nil {
		return nil
	}
	return s.child
}

// started closes the parent's copy of the pipe's write end.
func (s *sink) started() {
	if s.r != nil {
		s.child.Close()
	}
}

// abort ends the copy when the child never started.
func (s *sink) abort() {
	if s.r != nil {
		s.child.Close()
		s.r.Close()
		<-s.copied
	}
}

// drain waits for the output to end, but not forever: a process of
// another user may still hold the pipe.
func (s *sink) drain() {
	if s.r == nil {
		return
	}
	select {
	case <-s.copied:
	case <-time.After(outputGrace):
	}
	s.r.Close()
	<-s.copied
}

// credential returns the credential that runs a process as u: its uid, its
// primary group, and an empty supplementary group list (SPEC.md section
// 12), or nil when u is the caller and the caller is not root.
func credential(u *User) (*syscall.Credential, error) {
	if os.Geteuid() == 0 {
		return &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: []uint32{}}, nil
	}
	if u.UID == os.Getuid() {
		return nil, nil
	}
	return nil, fmt.Errorf("running a process as %s (uid %d) needs root", u.Name, u.UID)
}

func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func killGroup(pgid int) {
	if pgid > 1 {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// KillUser kills every process whose real or effective uid is uid, until
// none is left. See KillAll.
func KillUser(uid int) error {
	_, err := KillAll(uid)
	return err
}

// KillAll kills every process whose real or effective uid is uid, until
// none is left, and returns how many it saw. As root it first sends
// SIGKILL to every process uid may signal, in one kill(-1) made with uid's
// credentials: the kernel does that atomically, so a fork loop cannot
// outrun it. Then it scans /proc and kills what is left, again and again
// until a scan finds nothing. It refuses to kill root's processes or the
// caller's own. Zombies are left to whoever reaps them.
func KillAll(uid int) (int, error) {
	if uid == 0 || uid == os.Getuid() || uid == os.Geteuid() {
		return 0, fmt.Errorf("refusing to kill every process of uid %d", uid)
	}
	seen := map[int]bool{}
	// In a container (its own pid namespace, as every backend runs the
	// entrypoint) everything of uid is the agent's. Outside one (the
	// entrypoint's own tests, on a host) uid's processes in other pid
	// namespaces are other containers': the broadcast would reach them,
	// so it is skipped, and the scans keep to this namespace.
	onlyNS := hostPidNS()
	if os.Geteuid() == 0 && onlyNS == "" {
		// Count what the broadcast kills, for the caller's log.
		if pids, err := processesOf(uid, ""); err == nil {
			for _, p := range pids {
				seen[p] = true
			}
		}
		_ = killAllAs(uid)
	}
	for range 200 {
		pids, err := processesOf(uid, onlyNS)
		if err != nil {
			return len(seen), err
		}
		if len(pids) == 0 {
			return len(seen), nil
		}
		for _, pid := range pids {
			seen[pid] = true
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return len(seen), fmt.Errorf("processes of uid %d keep appearing", uid)
}

// killAllAs sends SIGKILL to every process uid may signal, from a child
// that runs as uid (the helper of killAllArg0): kill(-1) signals every
// process but the caller's own and init, so a root caller would kill the
// whole container. The caller keeps its credentials throughout: a thread
// of its own that took uid for the call could, in that moment, be sent
// SIGSTOP by any process of uid (which may signal it then), and stop the
// whole daemon. The helper, stopped or killed the same way, only fails;
// KillAll's scans, made as root, then kill what is left.
func killAllAs(uid int) error {
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{killAllArg0}
	cmd.Dir, cmd.Env = "/", []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}},
		Pdeathsig:  syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the helper that kills the processes of uid %d: %w", uid, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("killing the processes of uid %d: %w", uid, err)
		}
		return nil
	case <-time.After(killAllTimeout):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("killing the processes of uid %d: the helper did not end within %s", uid, killAllTimeout)
	}
}

// killAllArg0 is argv[0] of killAllAs's helper: the binary that links
// this package, run again through /proc/self/exe as the uid whose
// processes go, makes one kill(-1) in init and exits.
const killAllArg0 = "ssebench-killall"

// killAllTimeout bounds the helper: it makes one system call.
const killAllTimeout = 10 * time.Second

func init() {
	if len(os.Args) == 1 && os.Args[0] == killAllArg0 {
		killAllMain()
	}
}

// killAllMain is the helper: SIGKILL to every process it may signal (all
// of its uid's but itself), then exit, 0 when that went.
func killAllMain() {
	all := -1
	_, _, e := syscall.RawSyscall(syscall.SYS_KILL, uintptr(all), uintptr(syscall.SIGKILL), 0)
	if e != 0 && e != syscall.ESRCH {
		fmt.Fprintf(os.Stderr, "%s: %v\n", killAllArg0, e)
		os.Exit(1)
	}
	os.Exit(0)
}

// initPidNS is the inode of the initial pid namespace (the kernel's
// PROC_PID_INIT_INO): the host's, never a container's.
const initPidNS = "pid:[4026531836]"

// hostPidNS returns the caller's pid namespace when it is the host's, else
// "".
func hostPidNS() string {
	if ns, err := os.Readlink("/proc/self/ns/pid"); err == nil && ns == initPidNS {
		return ns
	}
	return ""
}

// processesOf lists the live processes whose real or effective uid is uid;
// with ns set, only those in that pid namespace.
func processesOf(uid int, ns string) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("listing processes: %w", err)
	}
	want := strconv.Itoa(uid)
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ns != "" {
			if got, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err != nil || got != ns {
				continue
			}
		}
		status, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue // gone already
		}
		var state string
		var uids []string
		for line := range bytes.Lines(status) {
			s := string(line)
			switch {
			case strings.HasPrefix(s, "State:"):
				state = strings.TrimSpace(strings.TrimPrefix(s, "State:"))
			case strings.HasPrefix(s, "Uid:"):
				uids = strings.Fields(strings.TrimPrefix(s, "Uid:"))
			}
		}
		if strings.HasPrefix(state, "Z") || len(uids) < 2 {
			continue
		}
		if uids[0] == want || uids[1] == want {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max     int
	buf     []byte
	dropped int64
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > t.max {
		t.dropped += int64(len(p) - t.max)
		p = p[len(p)-t.max:]
	}
	t.buf = append(t.buf, p...)
	// Compact only when twice the limit: each byte moves at most once.
	if len(t.buf) > 2*t.max {
		cut := len(t.buf) - t.max
		t.dropped += int64(cut)
		t.buf = append(t.buf[:0], t.buf[cut:]...)
	}
	return n, nil
}

// cut returns how many bytes String leaves out.
func (t *tailBuffer) cut() int64 {
	if len(t.buf) > t.max {
		return t.dropped + int64(len(t.buf)-t.max)
	}
	return t.dropped
}

// String returns the kept bytes, with a first line saying how much was cut.
func (t *tailBuffer) String() string {
	b := t.buf
	dropped := t.dropped
	if len(b) > t.max {
		dropped += int64(len(b) - t.max)
		b = b[len(b)-t.max:]
	}
	if dropped == 0 {
		return string(b)
	}
	return fmt.Sprintf("[ssebench: the first %d bytes of output were cut]\n%s", dropped, b)
}
