package entrypoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/sserun"
)

// agentGone is the status a task container records for an agent
// container that ended without saying so (its side was killed): what a
// shell reports for a process killed by SIGKILL.
const agentGone = 137

// handOver is the agent container's side of a hand-over directory
// (contract.EnvHandoverDir): the lock it holds while it lives, so that
// the task container sees its end however it ends.
type handOver struct {
	dir  string
	lock *os.File
}

// startHandOver takes the hand-over lock and says the agent starts. It
// returns nil when the run has no hand-over directory (the host hands
// over). The lock's file stays open until this process ends: the kernel
// releases it then, whatever ended it.
func (e *entrypoint) startHandOver(note func(string, ...any)) *handOver {
	dir := e.env.HandoverDir
	if dir == "" {
		return nil
	}
	// Root's alone: what model could write there would end the phase
	// before the agent does.
	if err := os.Chmod(dir, 0o700); err != nil {
		note("the hand-over directory %s: %v", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, contract.HandoverLock), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		note("the hand-over lock: %v", err)
		return nil
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		note("the hand-over lock: %v", err)
		f.Close()
		return nil
	}
	if err := safefile.WriteBytes(filepath.Join(dir, contract.HandoverStart), []byte("started\n"), 0o644); err != nil {
		note("%v", err)
	}
	return &handOver{dir: dir, lock: f}
}

// end says the agent's side has ended with status code: its processes are
// gone and its report is written.
func (h *handOver) end(code int, note func(string, ...any)) {
	if h == nil {
		return
	}
	if err := safefile.WriteBytes(filepath.Join(h.dir, contract.HandoverExit), []byte(strconv.Itoa(code)+"\n"), 0o644); err != nil {
		note("%v", err)
	}
}

// agentWatch is how the task container learns of the agent container:
// files the host writes (start, exit), or, in a pod, the agent side's own
// files and its lock.
type agentWatch struct {
	start, exit string
	lock        string // "" when the host hands over
}

// watchAgent returns the task container's watch: the hand-over directory
// when the run has one, else the host's files beside the admin socket.
func (e *entrypoint) watchAgent() agentWatch {
	if dir := e.env.HandoverDir; dir != "" {
		return agentWatch{
			start: filepath.Join(dir, contract.HandoverStart),
			exit:  filepath.Join(dir, contract.HandoverExit),
			lock:  filepath.Join(dir, contract.HandoverLock),
		}
	}
	dir := e.sidecarDir()
	return agentWatch{
		start: filepath.Join(dir, filepath.Base(contract.SidecarAgentStart)),
		exit:  filepath.Join(dir, filepath.Base(contract.SidecarAgentExit)),
	}
}

// wait waits until the agent container has ended and returns its status:
// the exit file's, or agentGone when, in a pod, the agent side started
// and its lock is free with no exit file (it was killed). told says the
// status came from the exit file.
func (w agentWatch) wait(ctx context.Context) (code int, told bool, err error) {
	for {
		if b, err := os.ReadFile(w.exit); err == nil {
			n, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				return 1, true, nil
			}
			return n, true, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return 0, false, err
		}
		if w.lock != "" && fileExists(w.start) && lockFree(w.lock) {
			// The exit file may have come just before the lock went.
			if _, err := os.Stat(w.exit); err == nil {
				continue
			}
			return agentGone, false, nil
		}
		select {
		case <-ctx.Done():
			return 0, false, fmt.Errorf("waiting for the agent container: %w", ctx.Err())
		case <-time.After(handOverPoll):
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// lockFree reports whether nobody holds the lock at path: it takes it and
// lets it go at once.
func lockFree(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return true
}

// seedMain is `entrypoint --seed SRC RUN`, the first container of a pod
// (an init container from the tool image): it copies SOURCE_DIR into SRC,
// the volume both containers then mount at SOURCE_DIR, owned as the tree
// is in the image (the tool layer makes it 1000:1000) with its modes, and
// makes RUN, the volume of /run/ssebench, root's with the agent socket's
// directory and the hand-over directory.
func seedMain(args []string, stderr io.Writer) int {
	if len(args) != 2 {
		fmt.Fprintln(stderr, "usage: entrypoint "+contract.SeedFlag+" SRC RUN")
		return 2
	}
	if err := seed(os.Getenv, args[0], args[1]); err != nil {
		fmt.Fprintln(stderr, "entrypoint: seeding the pod's volumes:", err)
		return 1
	}
	return 0
}

func seed(getenv func(string) string, src, run string) error {
	env, err := sserun.ReadEnv(getenv)
	if err != nil {
		return err
	}
	sourceDir := env.SourceDir
	if cfg, err := sserun.ReadTaskConfig(env.TaskRoot); err == nil && cfg.Source != "" {
		sourceDir = cfg.Source
	}
	if sourceDir == "" {
		return errors.New("no SOURCE_DIR: the task config has no `source` and SOURCE_DIR is unset")
	}
	fi, err := os.Lstat(sourceDir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok {
		return fmt.Errorf("%s is not a directory", sourceDir)
	}
	uid, gid := int(st.Uid), int(st.Gid)
	if err := sserun.CopyTree(sourceDir, src, ".", sserun.CopyOptions{UID: uid, GID: gid}); err != nil {
		return err
	}
	if err := os.Chown(src, uid, gid); err != nil {
		return err
	}
	if err := os.Chmod(src, fi.Mode().Perm()); err != nil {
		return err
	}
	// An emptyDir is everyone's (0777): the task's scripts, run as
	// sse-runner with the agent's code, must not write beside the sockets.
	if err := os.Chown(run, 0, 0); err != nil {
		return err
	}
	if err := os.Chmod(run, 0o755); err != nil {
		return err
	}
	for _, d := range []struct {
		name string
		mode os.FileMode
	}{{filepath.Base(contract.SidecarAgentDir), 0o755}, {filepath.Base(contract.HandoverTaskDir), 0o700}} {
		p := filepath.Join(run, d.name)
		if err := os.Mkdir(p, d.mode); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := os.Chmod(p, d.mode); err != nil {
			return err
		}
	}
	return nil
}
