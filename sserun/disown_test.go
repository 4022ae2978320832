package sserun

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestDisown: what the agent left in the archive is root's, with no
// set-id bit, and no symlink or FIFO of its making survives.
func TestDisown(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to chown")
	}
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "sub"), 0o777))
	must(os.WriteFile(filepath.Join(dir, "sub", "rootsh"), []byte("#!/bin/sh\n"), 0o755))
	must(os.Chmod(filepath.Join(dir, "sub", "rootsh"), 0o4777))
	must(os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("kept\n"), 0o600))
	must(os.Symlink("/etc/shadow", filepath.Join(dir, "shadow")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o666))
	for _, p := range []string{"sub", "sub/rootsh", "notes.txt"} {
		must(os.Lchown(filepath.Join(dir, p), 1000, 1000))
	}
	must(Disown(dir))
	for p, want := range map[string]os.FileMode{"sub": os.ModeDir | 0o755, "sub/rootsh": 0o755, "notes.txt": 0o600} {
		fi, err := os.Lstat(filepath.Join(dir, p))
		must(err)
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode() != want || st.Uid != 0 || st.Gid != 0 {
			t.Errorf("%s: mode %v owner %d:%d, want %v 0:0", p, fi.Mode(), st.Uid, st.Gid, want)
		}
	}
	for _, gone := range []string{"shadow", "fifo"} {
		if _, err := os.Lstat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want it removed", gone, err)
		}
	}
}
