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
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/42-b3yond-6ug/ssebench/sserun"
	"github.com/42-b3yond-6ug/ssebench/sserun/ssemcp"
)

// startTimeout bounds the wait for the daemon, which the entrypoint
// started first.
const startTimeout = 30 * time.Second

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
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := sserun.WaitReady(sctx, env.AgentSocket); err != nil {
		return err
	}
	srv, err := ssemcp.NewServer(sctx, ssemcp.SocketCaller(env.AgentSocket, "mcp"))
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", env.MCPAddr)
	if err != nil {
		return fmt.Errorf("listening for MCP clients: %w", err)
	}
	hs := &http.Server{Handler: ssemcp.Handler(srv), ReadHeaderTimeout: 30 * time.Second}
	fmt.Fprintf(os.Stderr, "ssebench-mcp: serving http://%s%s for the daemon on %s\n", l.Addr(), ssemcp.Path, env.AgentSocket)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// A tool call in progress may wait for a long build: do not wait for it.
	sctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
