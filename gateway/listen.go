package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// server is the HTTP server of Listen.
type server struct {
	srv  *http.Server
	l    net.Listener
	done chan error
}

// readHeaderTimeout bounds a client's request headers; the client is the
// entrypoint's forwarder, on this machine.
const readHeaderTimeout = 30 * time.Second

// Listen serves the gateway on a Unix socket at path (removed first when
// a stale one is there), in the background, until Close. The socket is
// mode 0600: only root reaches it, and in the container only through the
// entrypoint's forwarder.
func (g *Gateway) Listen(path string) error {
	if g.srv != nil {
		return errors.New("the gateway is already listening")
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
		_ = os.Remove(path)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listening on the gateway socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return fmt.Errorf("listening on the gateway socket: %w", err)
	}
	return g.Serve(l)
}

// Serve serves the gateway on l in the background, until Close.
func (g *Gateway) Serve(l net.Listener) error {
	if g.srv != nil {
		return errors.New("the gateway is already listening")
	}
	s := &server{srv: &http.Server{Handler: g, ReadHeaderTimeout: readHeaderTimeout}, l: l, done: make(chan error, 1)}
	g.srv = s
	go func() { s.done <- s.srv.Serve(l) }()
	return nil
}

// closeTimeout is how long Close lets requests in flight finish: the
// container is gone by then, so they are abandoned quickly.
const closeTimeout = 2 * time.Second

// Close stops serving; requests still in flight get closeTimeout to end.
// Their records are written before Close returns.
func (g *Gateway) Close() error {
	if g.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	err := g.srv.srv.Shutdown(ctx)
	if err != nil {
		err = g.srv.srv.Close()
	}
	<-g.srv.done
	if ua, ok := g.srv.l.Addr().(*net.UnixAddr); ok {
		_ = os.Remove(ua.Name)
	}
	g.srv = nil
	return err
}
