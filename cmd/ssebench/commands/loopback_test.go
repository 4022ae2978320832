package commands_test

import (
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"
)

// tlsCounter is a listener that counts connections opened with a TLS
// handshake (first byte 0x16) before handing them to a plain-HTTP server.
type tlsCounter struct {
	net.Listener
	handshakes atomic.Int32
}

func (l *tlsCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &peekConn{Conn: c, l: l}, nil
}

type peekConn struct {
	net.Conn
	l    *tlsCounter
	seen bool
}

func (c *peekConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if !c.seen && n > 0 {
		c.seen = true
		if b[0] == 0x16 {
			c.l.handshakes.Add(1)
		}
	}
	return n, err
}

// TestVerboseLoopbackIsPlainHTTP: with a registry on 127.0.0.1, `-v`
// shows no failed HTTPS attempt, and no TLS handshake reaches the
// registry: loopback registries always use plain HTTP.
func TestVerboseLoopbackIsPlainHTTP(t *testing.T) {
	c := newCLI(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tl := &tlsCounter{Listener: ln}
	srv := &http.Server{Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}
	go srv.Serve(tl)
	t.Cleanup(func() { srv.Close() })
	ref := ln.Addr().String() + "/cli28/loopback:v1"
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := ggremote.Write(r, img); err != nil {
		t.Fatal(err)
	}
	tl.handshakes.Store(0)

	_, stderr := c.mustRun(t, "-v", "--pull", "always", "inspect", "--platform", "linux/amd64", ref)
	// No HTTPS attempt is made, none fails, and none is even named: the
	// log shows each request as it is sent.
	for _, bad := range []string{"tls:", "HTTP response to HTTPS client", "lost race", "https://"} {
		if strings.Contains(stderr, bad) {
			t.Errorf("-v shows an HTTPS attempt (%q):\n%s", bad, stderr)
		}
	}
	if n := tl.handshakes.Load(); n > 0 {
		t.Errorf("the loopback registry got %d TLS handshakes; want none (plain HTTP only)", n)
	}
	if !strings.Contains(stderr, "<-- 200 GET http://"+ln.Addr().String()+"/v2/ ") {
		t.Errorf("-v does not show the plain-HTTP request:\n%s", stderr)
	}
}
