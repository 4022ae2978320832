// Command ssebench-mcp is the agent's MCP server in a tool image,
// /ssebench/mcp/ssebench-mcp (SPEC.md section 13). The entrypoint starts it
// as root before the agent, and it drops at once to the account in
// $SSE_MCP_USER (nobody): it needs no privilege. It listens on $SSE_MCP_ADDR (default
// 127.0.0.1:3000) with the streamable HTTP transport at /mcp, and answers
// each tool call by asking the daemon on its agent socket
// ($SSE_DAEMON_SOCKET). It reads nothing under /ssebench: the daemon alone
// decides what the agent is told. It stops on SIGTERM or SIGINT.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/42-b3yond-6ug/ssebench/sserun"
	"github.com/42-b3yond-6ug/ssebench/sserun/ssemcp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ssebench-mcp:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	if spec := os.Getenv(sserun.MCPUserEnv); spec != "" {
		if err := sserun.DropPrivileges(spec); err != nil {
			return fmt.Errorf("%w: the MCP server does not run as root", err)
		}
	}
	env, err := sserun.ReadEnv(os.Getenv)
	if err != nil {
		return err
	}
	return ssemcp.Serve(ctx, env.AgentSocket, env.MCPAddr, "mcp", os.Stderr)
}
