package sserun

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// Sandbox asks Process.Run to start the command in namespaces of its own
// (user, mount, network, IPC and PID), so that it shares with the rest of
// the container neither /tmp, /var/tmp and /dev/shm, nor the loopback
// interface, abstract Unix sockets or System V IPC, nor the view of the
// container's processes: the task's scripts run the agent's code, which
// must not hand what it sees (a proof of concept, the hidden tests) to
// the agent through a shared temporary directory or a listener of the
// agent's on 127.0.0.1, nor read other processes' command lines in /proc.
//
// The command gets fresh, empty tmpfs mounts on /tmp, /var/tmp and
// /dev/shm, its own loopback interface (up, and empty of others'
// listeners), a /proc of its own that lists only its own processes,
// no_new_privs, and runs as Process.User with no capabilities. The
// helper that set it up stays as the PID namespace's init, root and
// hidden from the command (hidepid): it reaps orphans and ends with the
// command's status, and its end makes the kernel kill whatever the
// command left.
//
// Where the kernel or the container runtime refuses the namespaces (a
// seccomp profile that blocks them, user namespaces turned off), the
// command runs without them and Exit.Sandbox says why. Where only the new
// /proc is refused, the command runs in the other namespaces, without a
// PID namespace, and Exit.PIDNamespace says why: the kernel allows a new
// proc mount in a user namespace only while some /proc of the mount
// namespace shows everything, and runtimes that mask paths of /proc
// (/proc/kcore, /proc/timer_list, ... bound over with /dev/null) leave
// none. A PID namespace seen through the container's /proc would break
// programs that look themselves up by their pid in it (LeakSanitizer
// does), so it is not used alone.
type Sandbox struct {
	// Keep are directories that lie under a directory the sandbox
	// replaces and that the command needs (its scratch tree, its HOME and
	// TMPDIR): they stay visible at the same path on top of it.
	Keep []string
	// Hide are directories the command must not reach at all, covered
	// with an empty read-only tmpfs: the agent's own (its SOURCE_DIR and
	// home), where it could leave a world-writable file, a FIFO or a
	// socket for the agent's code in a script to hand things to. A
	// directory that is not there is skipped.
	Hide []string
	// Required: where the sandbox is refused, the command does not run
	// without it; Run returns ErrNoSandbox and Exit.Sandbox says why.
	// Without it the command runs unsandboxed (a PID namespace alone may
	// always be missing).
	Required bool
}

// ErrNoSandbox is Process.Run's error when a Sandbox is Required and the
// kernel or the container runtime refused it: the command did not run.
var ErrNoSandbox = errors.New("the sandbox was refused")

// SandboxOn is what Exit.Sandbox says when the command ran in the sandbox.
const SandboxOn = "namespaces"

// SandboxNone starts what Exit.Sandbox says when the sandbox was refused:
// "none: " and the reason.
const SandboxNone = "none: "

// sandboxArg0 is argv[0] of the helper: the binary that links this
// package, run again through /proc/self/exe, becomes the helper in init.
const sandboxArg0 = "ssebench-sandbox"

// sandboxFailed is the helper's exit status when it could not set the
// sandbox up; the reason goes down the report pipe.
const sandboxFailed = 127

// procStep starts the reason the helper reports when the PID namespace's
// /proc could not be mounted: Process.Run then tries without a PID
// namespace.
const procStep = "mounting a /proc of its own: "

// procOpts are the sandbox's /proc mount options: hidepid=2 hides the
// processes of other users, the root init among them, so that the
// command sees its own and nothing else.
const procOpts = "hidepid=2"

// privateDirs are the directories every user may write that the sandbox
// replaces with a file system of its own: a tmpfs of a capped size, and
// for POSIX message queues the new IPC namespace's own. Memory spent in a
// tmpfs counts against the container's memory limit too.
var privateDirs = []struct {
	path, fstype, opts string
}{
	{"/tmp", "tmpfs", "mode=1777,size=1g"},
	{"/var/tmp", "tmpfs", "mode=1777,size=1g"},
	{"/dev/shm", "tmpfs", "mode=1777,size=64m"},
	{"/run/lock", "tmpfs", "mode=1777,size=16m"},
	{"/dev/mqueue", "mqueue", ""},
}

// hiddenOpts is the tmpfs that covers a hidden directory, mounted
// read-only: empty for good.
const hiddenOpts = "mode=0755,size=4k"

// sandboxSpec is what the parent tells the helper, as JSON in argv[1].
type sandboxSpec struct {
	UID, GID int
	Dir      string
	Keep     []string
	Hide     []string
	Args     []string
	// PID: the helper is the init of a new PID namespace; it mounts a
	// /proc for it and runs the command as its child.
	PID bool
	// OOMFirst: the helper raises its oom_score_adj (Process.OOMFirst)
	// before the command starts, which inherits it.
	OOMFirst bool
}

func init() {
	if len(os.Args) > 1 && os.Args[0] == sandboxArg0 {
		sandboxMain()
	}
}

// sandboxMain is the helper: it runs as root in the new namespaces, sets
// them up, becomes the runner and execs the command; in a PID namespace
// it starts the command as the runner instead, and stays its init. It
// never returns. Any failure before the exec goes down fd 3 and ends the
// helper with sandboxFailed; the parent then knows that none of the
// command ran.
func sandboxMain() {
	// no_new_privs is per thread, and so is the exec: both on this one.
	runtime.LockOSThread()
	report := os.NewFile(3, "sandbox-report")
	fail := func(step string, err error) {
		fmt.Fprintf(report, "%s: %v", step, err)
		os.Exit(sandboxFailed)
	}
	if _, err := unix.FcntlInt(3, unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		os.Exit(sandboxFailed)
	}
	var spec sandboxSpec
	if err := json.Unmarshal([]byte(os.Args[1]), &spec); err != nil || len(spec.Args) == 0 {
		fail("reading the sandbox's request", err)
	}
	if err := setupSandbox(&spec); err != nil {
		fail("setting up the sandbox", err)
	}
	if spec.OOMFirst {
		_ = os.WriteFile("/proc/self/oom_score_adj", []byte(oomFirstScore), 0)
	}
	if spec.PID {
		// The kept directories were bound through /proc/self/fd: the
		// new /proc comes after them.
		flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
		if err := unix.Mount("proc", "/proc", "proc", flags, procOpts); err != nil {
			fail(strings.TrimSuffix(procStep, ": "), err)
		}
	}
	// The command inherits it from this (locked) thread, in a fork as in
	// an exec.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail("setting no_new_privs", err)
	}
	if spec.PID {
		pid, err := startAsInit(&spec)
		if err != nil {
			fail("starting "+spec.Args[0], err)
		}
		// The command runs: nothing more to report.
		report.Close()
		os.Exit(reap(pid))
	}
	// Leaving uid 0 for the runner's clears every capability.
	if err := syscall.Setgroups([]int{}); err != nil {
		fail("dropping the supplementary groups", err)
	}
	if err := syscall.Setresgid(spec.GID, spec.GID, spec.GID); err != nil {
		fail("taking the runner's group", err)
	}
	if err := syscall.Setresuid(spec.UID, spec.UID, spec.UID); err != nil {
		fail("taking the runner's uid", err)
	}
	err := syscall.Exec(spec.Args[0], spec.Args, os.Environ())
	fail("starting "+spec.Args[0], err)
}

// startAsInit starts the command as the runner, with this process's
// standard files, working directory and environment, and returns its pid.
// The child drops the supplementary groups, then takes the runner's gid
// and uid (all of real, effective and saved, as root's setgid and setuid
// do), which clears every capability.
func startAsInit(spec *sandboxSpec) (int, error) {
	return syscall.ForkExec(spec.Args[0], spec.Args, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
		Sys: &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: uint32(spec.UID), Gid: uint32(spec.GID), Groups: []uint32{}},
		},
	})
}

// reap is the PID namespace's init: it reaps every process that ends,
// orphans included, until the command itself ends, and returns the exit
// status to end with, the command's: 128+N when signal N killed it, as a
// shell says. Its own end then makes the kernel kill what is left.
func reap(cmd int) int {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return sandboxFailed // ECHILD: the command is gone unseen
		}
		if pid != cmd {
			continue
		}
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

// setupSandbox makes the mounts private, puts a fresh tmpfs on each
// private directory with the kept directories bound back on top, brings
// lo up and enters the working directory.
func setupSandbox(spec *sandboxSpec) error {
	// Nothing mounted here may reach the container's mount namespace.
	if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making the mounts private: %w", err)
	}
	// The kept directories are opened before the tmpfs hides them; a
	// directory under another kept one comes along with it.
	type kept struct {
		path string
		fd   int
	}
	var hide []string
	for _, h := range spec.Hide {
		h = filepath.Clean(h)
		// One under /tmp is gone with the rest of it.
		if fi, err := os.Lstat(h); err == nil && fi.IsDir() && filepath.IsAbs(h) && h != "/" && !covered(h, nil) {
			hide = append(hide, h)
		}
	}
	var keep []kept
	for _, k := range spec.Keep {
		k = filepath.Clean(k)
		if !filepath.IsAbs(k) || !covered(k, hide) || keptUnder(k, spec.Keep) {
			continue
		}
		fd, err := unix.Open(k, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("opening %s: %w", k, err)
		}
		keep = append(keep, kept{k, fd})
	}
	for _, d := range privateDirs {
		if fi, err := os.Lstat(d.path); err != nil || !fi.IsDir() {
			continue // the image has none: nothing to share either
		}
		if err := unix.Mount(d.fstype, d.path, d.fstype, unix.MS_NOSUID|unix.MS_NODEV, d.opts); err != nil {
			return fmt.Errorf("mounting a %s on %s: %w", d.fstype, d.path, err)
		}
	}
	for _, h := range hide {
		flags := uintptr(unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
		if err := unix.Mount("tmpfs", h, "tmpfs", flags, hiddenOpts); err != nil {
			return fmt.Errorf("hiding %s: %w", h, err)
		}
	}
	for _, k := range keep {
		// The folders above it are the sandbox's, root's and empty.
		if err := os.MkdirAll(k.path, 0o755); err != nil {
			return err
		}
		src := "/proc/self/fd/" + strconv.Itoa(k.fd)
		if err := unix.Mount(src, k.path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("keeping %s: %w", k.path, err)
		}
		unix.Close(k.fd)
	}
	if err := loopbackUp(); err != nil {
		return err
	}
	if spec.Dir != "" {
		if err := os.Chdir(spec.Dir); err != nil {
			return err
		}
	}
	return nil
}

// covered tells whether p lies under a directory the sandbox replaces or
// hides.
func covered(p string, hide []string) bool {
	for _, d := range privateDirs {
		if strings.HasPrefix(p, d.path+"/") {
			return true
		}
	}
	for _, h := range hide {
		if strings.HasPrefix(p, h+"/") {
			return true
		}
	}
	return false
}

// keptUnder tells whether p lies under another directory of keep.
func keptUnder(p string, keep []string) bool {
	for _, k := range keep {
		k = filepath.Clean(k)
		if k != p && strings.HasPrefix(p, k+"/") {
			return true
		}
	}
	return false
}

// loopbackUp brings up lo, the only interface of a new network namespace,
// so that the command can still listen and connect on 127.0.0.1 (test
// suites do): its own, not the container's.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	return nil
}

// sandboxAttr sets attr up to start the helper in new namespaces with
// identity id maps, a PID namespace too when pid is true, and returns the
// helper's argv.
func (p *Process) sandboxAttr(attr *syscall.SysProcAttr, pid bool) ([]string, error) {
	if p.User == nil {
		return nil, errors.New("the daemon does not run as root, so it cannot run scripts as another user in a sandbox")
	}
	uids, err := identityMap("/proc/self/uid_map")
	if err != nil {
		return nil, err
	}
	gids, err := identityMap("/proc/self/gid_map")
	if err != nil {
		return nil, err
	}
	attr.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC
	if pid {
		attr.Cloneflags |= syscall.CLONE_NEWPID
	}
	attr.UidMappings, attr.GidMappings = uids, gids
	attr.GidMappingsEnableSetgroups = true
	spec, err := json.Marshal(sandboxSpec{UID: p.User.UID, GID: p.User.GID, Dir: p.Dir, Keep: p.Sandbox.Keep, Hide: p.Sandbox.Hide, Args: p.Args, PID: pid, OOMFirst: p.OOMFirst})
	if err != nil {
		return nil, err
	}
	return []string{sandboxArg0, string(spec)}, nil
}

// identityMap maps every id this process's user namespace has onto
// itself: files keep their owners in the sandbox, and the runner is the
// runner.
func identityMap(file string) ([]syscall.SysProcIDMap, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading the id map: %w", err)
	}
	defer f.Close()
	var m []syscall.SysProcIDMap
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var inside, outside, n int
		if _, err := fmt.Sscan(sc.Text(), &inside, &outside, &n); err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		m = append(m, syscall.SysProcIDMap{ContainerID: inside, HostID: inside, Size: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("%s is empty", file)
	}
	return m, nil
}

// readReport reads what the helper says before its exec: nothing when
// the exec happened (the pipe closes on exec), the reason otherwise.
func readReport(r io.Reader) string {
	b, _ := io.ReadAll(io.LimitReader(r, 4096))
	return strings.TrimSpace(string(b))
}

// Sandbox returns how the grade's scripts ran, for result.json: the first
// refusal (SandboxNone and why) when a check ran without its sandbox,
// else SandboxOn when one ran in it, else "" (nothing ran, or the daemon
// is not root). A proof-of-concept check sums its runs and has no say of
// its own; its runs are sandboxed as the build's are.
func (g *Grade) Sandbox() string {
	got := ""
	for _, name := range contract.Checks {
		switch r := g.Check(name); {
		case r == nil:
		case strings.HasPrefix(r.Sandbox, SandboxNone):
			return r.Sandbox
		case r.Sandbox != "":
			got = r.Sandbox
		}
	}
	return got
}
