package pipeline

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCheckDaemonsNotRoot: a socket this user may not open is said to
// need root, once, naming the socket and its owner; buildkitd's too,
// though whether it runs is not asked.
func TestCheckDaemonsNotRoot(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "containerd.sock")
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	orig := dialUnix
	t.Cleanup(func() { dialUnix = orig })
	dialUnix = func(path string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.EACCES)}
	}
	for _, c := range []struct {
		need   Daemons
		daemon string
	}{
		{Daemons{Containerd: true, ContainerdAddr: sock}, "containerd"},
		{Daemons{BuildKit: true, BuildKitAddr: "unix://" + sock}, "buildkitd"},
	} {
		err := CheckDaemons("run", c.need)
		if want := "ssebench run needs root: the socket " + sock + " of " + c.daemon + " is " + owner(sock); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("CheckDaemons(%+v) = %v, want %q", c.need, err, want)
		}
	}
}

// TestCheckDaemonsNotRunning: containerd without its socket, or with no
// one on it, is said not to run; buildkitd is asked when a build needs it.
func TestCheckDaemonsNotRunning(t *testing.T) {
	dir := t.TempDir()
	gone := filepath.Join(dir, "gone.sock")
	err := CheckDaemons("eval", Daemons{Containerd: true, ContainerdAddr: gone})
	if want := "containerd is not running: there is no socket " + gone; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("CheckDaemons(no socket) = %v, want %q", err, want)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "stale.sock"))
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	err = CheckDaemons("eval", Daemons{Containerd: true, ContainerdAddr: filepath.Join(dir, "stale.sock")})
	if err == nil || !strings.Contains(err.Error(), "containerd is not running: nothing answers on") {
		t.Errorf("CheckDaemons(stale socket) = %v, want it said not to run", err)
	}
	if err := CheckDaemons("run", Daemons{BuildKit: true, BuildKitAddr: "unix://" + gone}); err != nil {
		t.Errorf("CheckDaemons(no buildkitd) = %v, want nil: a run may need no build", err)
	}
}
