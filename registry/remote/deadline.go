package remote

// The deadlines of registry reads: how long a registry may stay silent
// before a request fails (and is retried, see retry.go), how slowly it may
// send a body, and the deadline of the whole command (WithDeadline), for
// the requests this package sends and, through the transport, for
// go-containerregistry's.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
)

const (
	// defaultStall is how long a registry may stay silent: no response
	// header after a request was sent, or no byte of a body being read.
	// A stalled request then fails (and is retried) instead of holding a
	// push or a pull forever.
	defaultStall = 2 * time.Minute
	// minRate is the slowest transfer a deadline allows for: a request
	// or a body of n bytes may take the stall limit plus n at this rate.
	minRate = 64 << 10
)

// requestContext bounds one request of size bytes (its body) in time.
func (o *options) requestContext(ctx context.Context, size int64) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, o.stall+time.Duration(max(size, 0)/minRate)*time.Second)
}

// slowBy is the time a body of n bytes may take: the stall limit plus n at
// minRate.
func slowBy(stall time.Duration, n int64) time.Duration {
	return stall + time.Duration(max(n, 0)/minRate)*time.Second
}

// stallTransport sets a response-header timeout and wraps every response
// body so that a read waiting longer than stall for a byte fails, as does
// a body slower than minRate; with a deadline (see WithDeadline), no
// request runs past it.
func stallTransport(base http.RoundTripper, stall time.Duration, deadline time.Time) http.RoundTripper {
	if t, ok := base.(*http.Transport); ok {
		c := t.Clone()
		c.ResponseHeaderTimeout = stall
		base = c
	}
	return &stallGuard{base: base, stall: stall, deadline: deadline}
}

type stallGuard struct {
	base     http.RoundTripper
	stall    time.Duration
	deadline time.Time
}

// RoundTrip implements http.RoundTripper.
func (g *stallGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	cancel := context.CancelFunc(func() {})
	if !g.deadline.IsZero() {
		if time.Now().After(g.deadline) {
			return nil, g.pastDeadline(req)
		}
		var ctx context.Context
		ctx, cancel = context.WithDeadline(req.Context(), g.deadline)
		req = req.WithContext(ctx)
	}
	resp, err := g.base.RoundTrip(req)
	if err != nil {
		cancel()
		if g.commandDeadline(req) {
			return nil, g.pastDeadline(req)
		}
		return resp, err
	}
	if resp.Body == nil || resp.Body == http.NoBody {
		cancel()
		return resp, nil
	}
	resp.Body = newIdleBody(resp.Body, g.stall, cancel, func() error {
		if g.commandDeadline(req) {
			return g.pastDeadline(req)
		}
		return nil
	})
	return resp, nil
}

// commandDeadline reports whether req's context ended at the command's
// deadline rather than for a reason of its caller's.
func (g *stallGuard) commandDeadline(req *http.Request) bool {
	return !g.deadline.IsZero() && errors.Is(req.Context().Err(), context.DeadlineExceeded) && !time.Now().Before(g.deadline)
}

// errPastDeadline says the command's deadline for registry reads passed.
var errPastDeadline = errors.New("past this command's deadline for registry requests")

func (g *stallGuard) pastDeadline(req *http.Request) error {
	return fmt.Errorf("%w (%s): the registry is too slow, or set a longer --registry-timeout", errPastDeadline, g.deadline.Format(time.TimeOnly))
}

// errStalled says a registry sent no byte for longer than the stall limit.
var errStalled = errors.New("the registry stopped sending (no byte within the stall limit)")

// errTooSlow says a registry sends a body slower than any link is: a byte
// every few seconds keeps the stall limit at bay, not this. It is retried
// as a stall is.
var errTooSlow = fmt.Errorf("the registry sends slower than %s/s", units.Bytes(minRate))

// idleBody closes the body when no Read returned data for stall, or when
// what came of it took longer than the stall limit plus its size at
// minRate: a body of n bytes may take the stall limit plus n at minRate,
// and a registry that announces a large body cannot trickle it for the
// hours that would allow. The blocked Read then fails with errStalled or
// errTooSlow, which are retried.
type idleBody struct {
	rc    io.ReadCloser
	timer *time.Timer
	stall time.Duration
	// start dates the body; n counts what came.
	start time.Time
	n     atomic.Int64
	// cancel ends the request's context; why says whether the
	// command's deadline ended it.
	cancel context.CancelFunc
	why    func() error

	mu      sync.Mutex
	stalled error
}

func newIdleBody(rc io.ReadCloser, stall time.Duration, cancel context.CancelFunc, why func() error) *idleBody {
	b := &idleBody{rc: rc, stall: stall, start: time.Now(), cancel: cancel, why: why}
	b.timer = time.AfterFunc(b.wait(), b.fire)
	return b
}

// wait is how long the next byte may take: the stall limit, but no longer
// than the whole body may.
func (b *idleBody) wait() time.Duration {
	left := slowBy(b.stall, b.n.Load()) - time.Since(b.start)
	return max(min(b.stall, left), 0)
}

// fire closes the body, blocking a Read no more, and records why.
func (b *idleBody) fire() {
	err := errStalled
	if n, el := b.n.Load(), time.Since(b.start); el >= slowBy(b.stall, n) {
		err = fmt.Errorf("%w (%d bytes in %s)", errTooSlow, n, el.Round(time.Second))
	}
	b.mu.Lock()
	if b.stalled == nil {
		b.stalled = err
	}
	b.mu.Unlock()
	b.rc.Close()
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.n.Add(int64(n))
	switch w := b.wait(); {
	case err != nil:
		b.timer.Stop()
	case w > 0:
		b.timer.Reset(w)
	default:
		// Its time is up with bytes still to come.
		b.timer.Stop()
		b.fire()
		err = io.ErrUnexpectedEOF
	}
	if err != nil && err != io.EOF {
		if why := b.why(); why != nil {
			return n, why
		}
		b.mu.Lock()
		stalled := b.stalled
		b.mu.Unlock()
		if stalled != nil {
			return n, stalled
		}
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	err := b.rc.Close()
	b.cancel()
	return err
}
