package entrypoint

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/sserun"
)

const (
	// daemonName is the daemon's file name in the task root.
	daemonName = "ssebench-daemon"
	// mcpName is the MCP server's path in the task root: a directory of
	// its own under /ssebench, which only root can enter.
	mcpName = "mcp/ssebench-mcp"
	// serviceStartTimeout bounds the wait for a service to answer: each
	// only reads a config and listens.
	serviceStartTimeout = 30 * time.Second
	// serviceStopTimeout is how long a service gets to stop on SIGTERM.
	serviceStopTimeout = 5 * time.Second
)

// services are the helper programs the entrypoint starts, as root, before
// the agent: the task's daemon, then the MCP server, which asks the
// daemon. Each is started here and nowhere else, so another one (a model
// gateway's forwarder) is one more step in startServices and, when the
// agent alone uses it, one more stop in endAgentPhase.
type services struct {
	daemon *service
	mcp    *service
}

// startServices starts the services of the mode: in sandbox mode the
// daemon and, once the daemon answers, the MCP server. A service that is
// missing or fails is noted and the run goes on without it.
func (e *entrypoint) startServices(ctx context.Context, note func(string, ...any)) *services {
	s := &services{}
	if e.mode != modeSandbox {
		return s
	}
	s.daemon = e.startDaemon(ctx, note)
	if s.daemon == nil {
		return s
	}
	s.mcp = e.startMCP(ctx, note)
	return s
}

// endAgentPhase stops the services only the agent uses, once the daemon
// has ended the agent phase.
func (s *services) endAgentPhase() {
	s.mcp.stop()
	s.mcp = nil
}

// stop stops every service, the last started first.
func (s *services) stop() {
	s.mcp.stop()
	s.daemon.stop()
}

// service is a program the entrypoint started.
type service struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once cmd.Wait returned
}

// startService starts path with args and env as root, in its own process
// group, output to the results file logName, and waits until ready
// answers nil. It returns nil, after noting why, when the program is not
// there or does not become ready.
func (e *entrypoint) startService(ctx context.Context, name, path string, args, env []string, logName string,
	ready func(context.Context) error, note func(string, ...any)) *service {
	logf, err := os.OpenFile(filepath.Join(e.env.Results, logName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		note("opening the %s's log: %v", name, err)
		return nil
	}
	defer logf.Close()
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		note("starting the %s: %v", name, err)
		return nil
	}
	s := &service{name: name, cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()
	wctx, cancel := context.WithTimeout(ctx, serviceStartTimeout)
	defer cancel()
	// Stop waiting as soon as the service dies: its log says why.
	go func() {
		select {
		case <-s.exited:
			cancel()
		case <-wctx.Done():
		}
	}()
	if err := ready(wctx); err != nil {
		note("the %s did not start (see %s): %v", name, logName, err)
		s.stop()
		return nil
	}
	return s
}

// stop stops the service: SIGTERM, then SIGKILL to its process group if
// it does not stop in time.
func (s *service) stop() {
	if s == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(serviceStopTimeout):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
}

// startDaemon starts the task's daemon, when the image has one, and waits
// until its admin socket answers. Its output goes to daemon.log.
func (e *entrypoint) startDaemon(ctx context.Context, note func(string, ...any)) *service {
	path := filepath.Join(e.env.TaskRoot, daemonName)
	if _, err := os.Stat(path); err != nil {
		note("no daemon at %s: the agent cannot build or test through it, and the run is not graded", path)
		return nil
	}
	ready := func(ctx context.Context) error { return sserun.WaitReady(ctx, e.env.AdminSocket) }
	return e.startService(ctx, "daemon", path, nil, e.daemonEnv(), contract.DaemonLog, ready, note)
}

// daemonEnv is the daemon's environment: the container's, with its
// sockets, and without the results stream's token. The daemon's scripts
// run the agent's code, which can print its environment: with the token,
// that code could forge the block the host takes result.json from.
func (e *entrypoint) daemonEnv() []string {
	env := slices.DeleteFunc(slices.Clone(e.environ), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == contract.EnvResultsStream || k == initChildEnv
	})
	return withEnv(env, map[string]string{
		contract.EnvAgentSocket: e.env.AgentSocket,
		contract.EnvAdminSocket: e.env.AdminSocket,
	})
}

// startMCP starts the MCP server, when the image has one, and waits until
// it accepts connections. It gets no more of the environment than it
// needs: it talks to the daemon's agent socket and nothing else, as
// nobody (sserun.MCPUser). Its log is opened here, by root, in the results
// directory, where neither model nor nobody can write.
func (e *entrypoint) startMCP(ctx context.Context, note func(string, ...any)) *service {
	return e.startMCPAt(ctx, note, filepath.Join(e.env.TaskRoot, mcpName))
}

// selfMCP is the MCP server of an agent container, which has no
// /ssebench: the entrypoint's own program (static, ours, a path the agent
// policy keeps agent layers away from) with --mcp-http. self is nil when
// the program cannot be found; the agent then has no MCP tools.
func selfMCP() []string {
	self, err := os.Executable()
	if err != nil {
		return nil
	}
	return []string{self, mcpHTTPFlag}
}

// startMCPAt starts the MCP server command (a program and its arguments;
// see startMCP).
func (e *entrypoint) startMCPAt(ctx context.Context, note func(string, ...any), command ...string) *service {
	if len(command) == 0 {
		note("no MCP server: the agent has no MCP tools (entrypoint --call still works)")
		return nil
	}
	path := command[0]
	if _, err := os.Stat(path); err != nil {
		note("no MCP server at %s: the agent has no MCP tools (entrypoint --call still works)", path)
		return nil
	}
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		contract.EnvAgentSocket + "=" + e.env.AgentSocket,
		contract.EnvMCPAddr + "=" + e.env.MCPAddr,
		// It drops to nobody before it reads anything: neither root, nor
		// model, nor sse-runner (who runs the agent's code in scripts).
		sserun.MCPUserEnv + "=" + e.mcpUser(),
	}
	ready := func(ctx context.Context) error { return waitListening(ctx, e.env.MCPAddr) }
	return e.startService(ctx, "MCP server", path, command[1:], env, contract.MCPLog, ready, note)
}

// mcpUser is the MCP server's "uid:gid": nobody, unless the task's
// scripts run as nobody.
func (e *entrypoint) mcpUser() string {
	runner := -1
	if u, err := sserun.LookupUser(sserun.PasswdFile, e.env.RunnerUser); err == nil {
		runner = u.UID
	}
	return sserun.MCPUserFor(runner)
}

// waitListening dials addr until it accepts a TCP connection or ctx ends.
func waitListening(ctx context.Context, addr string) error {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", addr, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
