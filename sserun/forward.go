package sserun

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// gatewayDialTimeout bounds a connect to the gateway's socket: the
// gateway is on this machine and accepts at once when it is up.
const gatewayDialTimeout = 10 * time.Second

// Forwarder accepts TCP connections on a loopback address and relays each
// to a Unix socket (or a TCP address), bytes both ways, until one side
// ends. It runs as root, so the agent reaches the socket only through it.
type Forwarder struct {
	l       net.Listener
	network string // of the target: "unix" or "tcp"
	socket  string

	// token is the run's token at the gateway, revoked on Close (see
	// revoke); note says why a revoke failed.
	token string
	note  func(string, ...any)

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// Forward listens on addr (host:port) and relays every connection to the
// Unix socket at socket. Close stops it.
func Forward(addr, socket string) (*Forwarder, error) {
	return forward(addr, "unix", socket)
}

// ForwardTCP listens on addr and relays every connection to the TCP
// address target. Close stops it.
func ForwardTCP(addr, target string) (*Forwarder, error) {
	if _, _, err := net.SplitHostPort(target); err != nil {
		return nil, fmt.Errorf("the model gateway's address %q: %w", target, err)
	}
	return forward(addr, "tcp", target)
}

func forward(addr, network, target string) (*Forwarder, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("forwarding %s to the model gateway: %w", addr, err)
	}
	f := &Forwarder{l: l, network: network, socket: target, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

// ForwardGateway starts the model gateway's forwarder when the run set
// SSE_GATEWAY_SOCKET or SSE_GATEWAY_ADDR (read with getenv); it returns
// nil, whose Close does nothing, when the run has no gateway or the
// forwarder cannot start (said through note). Its Close, at the phase
// end, also revokes the run's token (SSE_API_KEY) at the gateway.
func ForwardGateway(getenv func(string) string, note func(string, ...any)) *Forwarder {
	f := forwardGateway(getenv, note)
	if f != nil {
		f.token, f.note = getenv(contract.EnvAPIKey), note
	}
	return f
}

func forwardGateway(getenv func(string) string, note func(string, ...any)) *Forwarder {
	if addr := getenv(contract.EnvGatewayAddr); addr != "" {
		f, err := ForwardTCP(contract.GatewayAddr, addr)
		if err != nil {
			note("%v: the agent has no model access", err)
			return nil
		}
		return f
	}
	socket := getenv(contract.EnvGatewaySocket)
	if socket == "" {
		return nil
	}
	if fi, err := os.Stat(socket); err != nil || fi.Mode()&os.ModeSocket == 0 {
		note("no model gateway at %s=%s: the agent has no model access", contract.EnvGatewaySocket, socket)
		return nil
	}
	f, err := Forward(contract.GatewayAddr, socket)
	if err != nil {
		note("%v: the agent has no model access", err)
		return nil
	}
	return f
}

// Addr returns the address the forwarder listens on.
func (f *Forwarder) Addr() net.Addr { return f.l.Addr() }

func (f *Forwarder) serve() {
	defer f.wg.Done()
	for {
		c, err := f.l.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		if !f.track(c, true) {
			c.Close()
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer f.track(c, false)
			f.relay(c)
		}()
	}
}

func (f *Forwarder) track(c net.Conn, add bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if add {
		if f.closed {
			return false
		}
		f.conns[c] = struct{}{}
	} else {
		delete(f.conns, c)
	}
	return true
}

// relay copies between the client and the gateway. When the gateway's
// side ends (a reply done, or cut short by a broken upstream), both
// connections close, so the client sees the end at once; when the
// client's side ends, the gateway gets a half-close and may still answer.
func (f *Forwarder) relay(client net.Conn) {
	defer client.Close()
	up, err := net.DialTimeout(f.network, f.socket, gatewayDialTimeout)
	if err != nil {
		return
	}
	defer up.Close()
	go func() {
		_, err := io.Copy(up, client)
		if err == nil {
			if cw, ok := up.(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite()
				return
			}
		}
		up.Close()
	}()
	_, _ = io.Copy(client, up)
}

// Close stops accepting, closes every relayed connection and waits for
// the relays to end; the first Close of a gateway's forwarder revokes the
// run's token first. A nil Forwarder's Close does nothing.
func (f *Forwarder) Close() error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	first := !f.closed
	f.mu.Unlock()
	if first {
		f.revoke()
	}
	err := f.l.Close()
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
	return err
}
