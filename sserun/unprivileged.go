package sserun

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// The MCP server needs no privilege: it listens on a loopback port and asks
// the daemon's agent socket, which is open to every user. The entrypoint
// starts it as root (its program is in a root-only directory), and it
// drops at once to MCPUser, given in MCPUserEnv, before it reads anything.
const (
	// MCPUserEnv names the variable that holds "uid:gid" for the MCP
	// server.
	MCPUserEnv = "SSE_MCP_USER"
	// MCPUser is nobody's uid and gid: neither root, nor model, nor
	// sse-runner, whose scripts run the agent's code and could ptrace or
	// signal a process of their own uid. No other process of a run uses
	// it, and it owns no file. MCPUserAlt is the MCP server's where the
	// scripts' account is nobody (SSE_RUNNER_USER=nobody).
	MCPUser    = "65534:65534"
	MCPUserAlt = "65533:65533"
)

// MCPUserFor returns the MCP server's "uid:gid" when the scripts run as
// runnerUID: never an account that runs the agent's code.
func MCPUserFor(runnerUID int) string {
	if runnerUID == 65534 {
		return MCPUserAlt
	}
	return MCPUser
}

// DropPrivileges makes this process, when it runs as root, spec's user
// ("uid:gid", no supplementary groups) on every thread, with
// no_new_privs, and checks that root cannot be had back. A process that is
// not root is left as it is: it has nothing to drop.
func DropPrivileges(spec string) error {
	u, g, ok := strings.Cut(spec, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil || uid <= 0 || gid <= 0 {
		return fmt.Errorf("%s=%q: want uid:gid of an account other than root", MCPUserEnv, spec)
	}
	if syscall.Geteuid() != 0 {
		return nil
	}
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("dropping the supplementary groups: %w", err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return fmt.Errorf("becoming group %d: %w", gid, err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("becoming user %d: %w", uid, err)
	}
	if _, _, errno := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, 38 /* PR_SET_NO_NEW_PRIVS */, 1, 0); errno != 0 && errno != syscall.ENOTSUP {
		return fmt.Errorf("setting no_new_privs: %w", errno)
	}
	if syscall.Setuid(0) == nil || syscall.Geteuid() != uid || syscall.Getegid() != gid {
		return fmt.Errorf("dropping to %s did not hold", spec)
	}
	return nil
}
