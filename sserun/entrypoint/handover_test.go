package entrypoint

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/sserun"
)

// TestHandOver: in a pod, the task container learns of the agent
// container from the agent's side alone: its exit file when it ended
// itself, and its lock released when it was killed before it could say
// so. A lock that is free before the agent's side started means nothing.
func TestHandOver(t *testing.T) {
	note := func(format string, args ...any) { t.Logf(format, args...) }
	for _, tc := range []struct {
		name   string
		killed bool
		want   int
		told   bool
	}{
		{name: "ended", want: 3, told: true},
		{name: "killed", killed: true, want: agentGone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			agentSide := &entrypoint{env: sserun.Env{HandoverDir: dir}}
			taskSide := &entrypoint{env: sserun.Env{HandoverDir: dir}}
			w := taskSide.watchAgent()
			// Nothing yet: the wait goes on.
			ctx, cancel := context.WithTimeout(context.Background(), 3*handOverPoll)
			if _, _, err := w.wait(ctx); err == nil {
				t.Fatal("the task side saw an end before the agent side started")
			}
			cancel()
			h := agentSide.startHandOver(note)
			if h == nil {
				t.Fatal("no hand-over")
			}
			if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("the hand-over directory is %v (%v), want 0700: model must not write it", fi.Mode(), err)
			}
			if lockFree(filepath.Join(dir, contract.HandoverLock)) {
				t.Fatal("the lock is free while the agent's side lives")
			}
			done := make(chan struct{})
			var code int
			var told bool
			var err error
			go func() {
				defer close(done)
				code, told, err = w.wait(context.Background())
			}()
			select {
			case <-done:
				t.Fatal("the task side saw an end while the agent's side lives")
			case <-time.After(3 * handOverPoll):
			}
			if tc.killed {
				// What the kernel does when the process dies.
				h.lock.Close()
			} else {
				h.end(3, note)
			}
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the task side did not see the end")
			}
			if err != nil || code != tc.want || told != tc.told {
				t.Errorf("wait = %d, told %v, %v; want %d, told %v", code, told, err, tc.want, tc.told)
			}
		})
	}
}

// TestSeed: the seed copies SOURCE_DIR into the pod's volume with its
// owners and modes, and makes the run directory root's with the agent
// socket's directory and a root-only hand-over directory.
func TestSeed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the seed sets owners: it runs as root")
	}
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "pkg", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "pkg", "a.go"), []byte("package pkg\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "pkg", ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("pkg/a.go", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	if err := filepath.Walk(src, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, contract.ModelUID, contract.ModelGID)
	}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(src, 0o750); err != nil {
		t.Fatal(err)
	}
	vol, run := t.TempDir(), t.TempDir()
	os.Chmod(run, 0o777)
	env := map[string]string{contract.EnvSourceDir: src, contract.EnvTaskRoot: filepath.Join(t.TempDir(), "none")}
	if err := seed(func(k string) string { return env[k] }, vol, run); err != nil {
		t.Fatal(err)
	}
	owner := func(p string) (uint32, os.FileMode) {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Uid, fi.Mode()
	}
	for p, mode := range map[string]os.FileMode{".": os.ModeDir | 0o750, "pkg/a.go": 0o640, "pkg/.git/HEAD": 0o644} {
		if uid, m := owner(filepath.Join(vol, p)); uid != contract.ModelUID || m != mode {
			t.Errorf("%s: uid %d mode %v, want %d %v", p, uid, m, contract.ModelUID, mode)
		}
	}
	if _, m := owner(filepath.Join(vol, "link")); m&os.ModeSymlink == 0 {
		t.Errorf("link is %v, want a symlink", m)
	}
	for p, mode := range map[string]os.FileMode{".": os.ModeDir | 0o755, "agent": os.ModeDir | 0o755, "handover": os.ModeDir | 0o700} {
		if uid, m := owner(filepath.Join(run, p)); uid != 0 || m != mode {
			t.Errorf("run/%s: uid %d mode %v, want root's %v", p, uid, m, mode)
		}
	}
}
