package pipeline

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/42-b3yond-6ug/ssebench/images/buildkit"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// socketDialTimeout bounds the preflight's connection to a local socket:
// a daemon accepts at once or not at all.
const socketDialTimeout = 2 * time.Second

// dialUnix connects to a Unix socket; tests replace it to be refused as a
// user who is not root is.
var dialUnix = func(path string) (net.Conn, error) {
	return net.DialTimeout("unix", path, socketDialTimeout)
}

// Daemons says which daemons a command will use, and where they listen
// ("": the environment's address, else the default).
type Daemons struct {
	// Containerd runs the containers; BuildKit builds case and base
	// images (a run that finds them needs it not).
	Containerd, BuildKit bool
	// ContainerdAddr and BuildKitAddr are the --containerd-addr and
	// --buildkit-addr flags.
	ContainerdAddr, BuildKitAddr string
}

// CheckDaemons says, before any work, what stops this process from using
// the daemons of need: a socket it may not open (the daemons run as root,
// their sockets are root's: "needs root"), or, for containerd, no daemon
// on the socket. Without it a user who was not root read "buildkitd is
// not running" (it was) from run, and eval removed "what the interrupted
// evaluation left" and left an empty folder. command names the command
// ("run", "eval"). BuildKit is checked for the socket's permission only:
// whether it runs is asked when a build needs it.
func CheckDaemons(command string, need Daemons) error {
	if need.Containerd {
		addr := need.ContainerdAddr
		if addr == "" {
			addr = strings.TrimSpace(os.Getenv(runner.AddressEnv))
		}
		if addr == "" {
			addr = runner.DefaultAddress
		}
		if err := checkSocket(command, "containerd", addr, "--containerd-addr", true); err != nil {
			return err
		}
	}
	if need.BuildKit {
		addr := need.BuildKitAddr
		if addr == "" {
			addr = strings.TrimSpace(os.Getenv(buildkit.EnvHost))
		}
		if addr == "" {
			addr = buildkit.DefaultAddress
		}
		if err := checkSocket(command, "buildkitd", addr, "--buildkit-addr", false); err != nil {
			return err
		}
	}
	return nil
}

// checkSocket connects to the Unix socket of addr (a path or unix://path;
// other addresses are not checked). running says whether a daemon that is
// not there is an error too.
func checkSocket(command, daemon, addr, flag string, running bool) error {
	path, ok := strings.CutPrefix(addr, "unix://")
	if !ok && strings.Contains(addr, "://") {
		return nil
	}
	c, err := dialUnix(path)
	if err == nil {
		c.Close()
		return nil
	}
	switch {
	case errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM):
		return fmt.Errorf("ssebench %s needs root: the socket %s of %s is %s, and this is %s; run it as root (sudo)", command, path, daemon, owner(path), whoAmI())
	case !running:
		return nil
	case errors.Is(err, syscall.ENOENT):
		return fmt.Errorf("%s is not running: there is no socket %s (start it, or name its socket with %s)", daemon, path, flag)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%s is not running: nothing answers on %s (start it, or name its socket with %s)", daemon, path, flag)
	}
	return fmt.Errorf("reaching %s on %s: %w", daemon, path, err)
}

// owner is "root's" or "<user>'s" for the file at path, or the folder
// that keeps a user from it.
func owner(path string) string {
	for p := path; p != "/" && p != "."; p = parentDir(p) {
		st, err := os.Stat(p)
		if err != nil {
			continue
		}
		s, ok := st.Sys().(*syscall.Stat_t)
		if !ok {
			break
		}
		id := strconv.Itoa(int(s.Uid))
		name := "uid " + id
		if u, err := user.LookupId(id); err == nil {
			name = u.Username
		}
		return name + "'s"
	}
	return "not this user's"
}

func parentDir(p string) string {
	i := strings.LastIndexByte(strings.TrimRight(p, "/"), '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// whoAmI names this process's user.
func whoAmI() string {
	id := strconv.Itoa(os.Geteuid())
	if u, err := user.LookupId(id); err == nil {
		return "user " + u.Username
	}
	return "uid " + id
}
