package commands

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
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
		need   daemonNeeds
		g      options.Global
		daemon string
	}{
		{daemonNeeds{Containerd: true}, options.Global{ContainerdAddr: sock}, "containerd"},
		{daemonNeeds{BuildKit: true}, options.Global{BuildKitAddr: "unix://" + sock}, "buildkitd"},
	} {
		err := checkDaemons(&c.g, "run", c.need)
		if want := "ssebench run needs root: the socket " + sock + " of " + c.daemon + " is " + owner(sock); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("checkDaemons(%+v) = %v, want %q", c.need, err, want)
		}
	}
}

// TestCheckDaemonsNotRunning: containerd without its socket, or with no
// one on it, is said not to run; buildkitd is asked when a build needs it.
func TestCheckDaemonsNotRunning(t *testing.T) {
	dir := t.TempDir()
	gone := filepath.Join(dir, "gone.sock")
	err := checkDaemons(&options.Global{ContainerdAddr: gone}, "eval", daemonNeeds{Containerd: true})
	if want := "containerd is not running: there is no socket " + gone; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("checkDaemons(no socket) = %v, want %q", err, want)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "stale.sock"))
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	err = checkDaemons(&options.Global{ContainerdAddr: filepath.Join(dir, "stale.sock")}, "eval", daemonNeeds{Containerd: true})
	if err == nil || !strings.Contains(err.Error(), "containerd is not running: nothing answers on") {
		t.Errorf("checkDaemons(stale socket) = %v, want it said not to run", err)
	}
	if err := checkDaemons(&options.Global{BuildKitAddr: "unix://" + gone}, "run", daemonNeeds{BuildKit: true}); err != nil {
		t.Errorf("checkDaemons(no buildkitd) = %v, want nil: a run may need no build", err)
	}
}
