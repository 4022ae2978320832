package ssemcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/42-b3yond-6ug/ssebench/sserun"
)

// startTimeout bounds the wait for the daemon, which starts first.
const startTimeout = 30 * time.Second

// Serve is the agent's MCP server over streamable HTTP: it waits for the
// daemon's agent socket, asks it which tools this run has, listens on
// addr (127.0.0.1:3000) and serves Handler there until ctx ends. A tool
// call in progress when ctx ends is not waited for: it may be a long
// build. Its log lines go to log. Two programs serve it: ssebench-mcp in
// a tool image, and the entrypoint itself (`entrypoint --mcp-http`) in an
// agent container, where nothing of /ssebench is; each drops to an
// unprivileged account (sserun.DropPrivileges) before it calls Serve.
func Serve(ctx context.Context, socket, addr, client string, log io.Writer) error {
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := sserun.WaitReady(sctx, socket); err != nil {
		return err
	}
	srv, err := NewServer(sctx, SocketCaller(socket, client))
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening for MCP clients: %w", err)
	}
	hs := &http.Server{Handler: Handler(srv), ReadHeaderTimeout: 30 * time.Second}
	fmt.Fprintf(log, "ssebench-mcp: serving http://%s%s for the daemon on %s\n", l.Addr(), Path, socket)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer dcancel()
	if err := hs.Shutdown(dctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
