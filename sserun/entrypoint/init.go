package entrypoint

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/42-b3yond-6ug/ssebench/sserun"
	"github.com/42-b3yond-6ug/ssebench/sserun/ssemcp"
)

// initChildEnv marks the entrypoint that the init started, so it does not
// start another init.
const initChildEnv = "SSE_INIT_CHILD"

// initMain runs when the entrypoint is the container's first process: it
// starts itself again as a child, passes signals on to it, reaps every
// process that ends up its child (orphans of the agent and of the task's
// scripts), and exits with the child's status. Without it those orphans
// would stay zombies until the container ends.
func initMain() int {
	self, err := os.Executable()
	if err != nil {
		self = "/proc/self/exe"
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	p, err := os.StartProcess(self, os.Args, &os.ProcAttr{
		Env:   append(os.Environ(), initChildEnv+"=1"),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "entrypoint: starting:", err)
		return 1
	}
	go func() {
		for s := range sigs {
			_ = p.Signal(s)
		}
	}()
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 1
		}
		if pid == p.Pid {
			if ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ws.ExitStatus()
		}
	}
}

// callMain is `entrypoint --call OP`: one request to the daemon's agent
// socket.
func callMain(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintf(stderr, "usage: entrypoint --call %s|%s|%s|%s|%s|%s\n", sserun.OpPing, sserun.OpTaskInfo, sserun.OpBuild, sserun.OpTest, sserun.OpPoC, sserun.OpStatus)
		return 2
	}
	env, err := sserun.ReadEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, "entrypoint:", err)
		return 2
	}
	// A call waits for as long as the daemon may run a script, and a bit.
	ctx, cancel := context.WithTimeout(context.Background(), env.ScriptTimeout+time.Minute)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	resp, err := sserun.Do(ctx, env.AgentSocket, sserun.Request{Op: args[0], Client: "cli"})
	if err != nil {
		fmt.Fprintln(stderr, "entrypoint:", err)
		return 2
	}
	fmt.Fprint(stdout, resp.Output)
	if resp.Output != "" && resp.Output[len(resp.Output)-1] != '\n' {
		fmt.Fprintln(stdout)
	}
	if resp.Error != "" {
		fmt.Fprintln(stderr, "entrypoint:", resp.Error)
		return 2
	}
	if !resp.OK && resp.Exit == 0 {
		return 1
	}
	return resp.Exit
}

// mcpHTTPFlag makes the entrypoint the agent's MCP server over HTTP
// (mcpHTTPMain).
const mcpHTTPFlag = "--mcp-http"

// mcpHTTPMain is `entrypoint --mcp-http`: what ssebench-mcp is in a tool
// image, for an agent container, which has no /ssebench. The entrypoint
// starts it as root with $SSE_MCP_USER set, and it drops to that account
// before it reads anything; it talks to the daemon's agent socket only.
func mcpHTTPMain(args []string, stderr io.Writer) int {
	if len(args) != 0 {
		fmt.Fprintln(stderr, "usage: entrypoint "+mcpHTTPFlag)
		return 2
	}
	if spec := os.Getenv(sserun.MCPUserEnv); spec != "" {
		if err := sserun.DropPrivileges(spec); err != nil {
			fmt.Fprintf(stderr, "ssebench-mcp: %v: the MCP server does not run as root\n", err)
			return 1
		}
	}
	env, err := sserun.ReadEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, "ssebench-mcp:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := ssemcp.Serve(ctx, env.AgentSocket, env.MCPAddr, "mcp", stderr); err != nil {
		fmt.Fprintln(stderr, "ssebench-mcp:", err)
		return 1
	}
	return 0
}

// mcpStdioMain is `entrypoint --mcp-stdio`: the agent's MCP server on
// standard input and output, for agents that spawn their MCP servers. It
// runs as the agent (model) and talks only to the daemon's agent socket,
// as the MCP server on 127.0.0.1:3000 does; it reads nothing else.
func mcpStdioMain(args []string, stderr io.Writer) int {
	if len(args) != 0 {
		fmt.Fprintln(stderr, "usage: entrypoint --mcp-stdio")
		return 2
	}
	env, err := sserun.ReadEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, "entrypoint:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	srv, err := ssemcp.NewServer(sctx, ssemcp.SocketCaller(env.AgentSocket, "mcp-stdio"))
	cancel()
	if err != nil {
		fmt.Fprintln(stderr, "entrypoint:", err)
		return 1
	}
	if err := srv.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
		fmt.Fprintln(stderr, "entrypoint:", err)
		return 1
	}
	return 0
}
