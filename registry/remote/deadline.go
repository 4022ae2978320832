package remote

// The stall deadlines: how long a registry may stay silent before a request
// fails (and is retried, see retry.go), for the requests this package sends
// and, through the transport, for go-containerregistry's.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

const (
	// defaultStall is how long a registry may stay silent: no response
	// header after a request was sent, or no byte of a body being read.
	// A stalled request then fails (and is retried) instead of holding a
	// push or a pull forever.
	defaultStall = 2 * time.Minute
	// minRate is the slowest upload a request deadline allows for: a
	// request of n bytes may take defaultStall plus n at this rate.
	minRate = 64 << 10
)

// requestContext bounds one request of size bytes (its body) in time.
func (o *options) requestContext(ctx context.Context, size int64) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, o.stall+time.Duration(max(size, 0)/minRate)*time.Second)
}

// stallTransport sets a response-header timeout and wraps every response
// body so that a read waiting longer than stall for a byte fails.
func stallTransport(base http.RoundTripper, stall time.Duration) http.RoundTripper {
	if t, ok := base.(*http.Transport); ok {
		c := t.Clone()
		c.ResponseHeaderTimeout = stall
		base = c
	}
	return &stallGuard{base: base, stall: stall}
}

type stallGuard struct {
	base  http.RoundTripper
	stall time.Duration
}

// RoundTrip implements http.RoundTripper.
func (g *stallGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.base.RoundTrip(req)
	if err != nil || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	resp.Body = newIdleBody(resp.Body, g.stall)
	return resp, nil
}

// errStalled says a registry sent no byte for longer than the stall limit.
var errStalled = errors.New("the registry stopped sending (no byte within the stall limit)")

// idleBody closes the body when no Read returned data for stall: the
// blocked Read then fails with errStalled, which is retried.
type idleBody struct {
	rc    io.ReadCloser
	timer *time.Timer
	stall time.Duration

	mu      sync.Mutex
	stalled bool
}

func newIdleBody(rc io.ReadCloser, stall time.Duration) *idleBody {
	b := &idleBody{rc: rc, stall: stall}
	b.timer = time.AfterFunc(stall, func() {
		b.mu.Lock()
		b.stalled = true
		b.mu.Unlock()
		rc.Close()
	})
	return b
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.timer.Reset(b.stall)
	if err != nil && err != io.EOF {
		b.mu.Lock()
		stalled := b.stalled
		b.mu.Unlock()
		if stalled {
			return n, errStalled
		}
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	return b.rc.Close()
}
