package remote

// The retry rules of every registry request: which errors are temporary,
// how long to wait between attempts (a doubling backoff, or longer when the
// registry's Retry-After asks for it, up to a cap and never past the
// deadline) and when to give up. The requests this package sends itself
// (pushes, blob fetches) retry with retry; everything else is retried by
// retrytransport.go under every request. How long one attempt may take is
// deadline.go's job; what is sent is upload.go's and manifest.go's.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

const (
	// defaultAttempts and defaultBackoff: five tries, 0.5 s, 1 s, 2 s, 4 s
	// apart, ride out a registry restart without hanging for minutes.
	defaultAttempts = 5
	defaultBackoff  = 500 * time.Millisecond
	maxBackoff      = 10 * time.Second
	// maxRetryAfter caps how long a Retry-After answer makes us wait.
	maxRetryAfter = time.Minute
)

// retry runs f until it succeeds, fails for good, or the attempts run
// out, waiting longer each time.
func (p *pusher) retry(ctx context.Context, f func() error) error {
	return retry(ctx, p.o.move.attempts, p.o.move.backoff, f)
}

func retry(ctx context.Context, attempts int, backoff time.Duration, f func() error) error {
	wait := backoff
	var err error
	for i := 0; i < attempts; i++ {
		if err = f(); err == nil || !retryable(err) {
			return unwrapPermanent(err)
		}
		if i == attempts-1 {
			break
		}
		if perr := pause(ctx, err, wait); perr != nil {
			return perr
		}
		wait = min(2*wait, maxBackoff)
	}
	if attempts > 1 {
		return fmt.Errorf("%w (gave up after %d attempts)", err, attempts)
	}
	return err
}

// pause waits before the next attempt after err: backoff, or longer when
// err carries the registry's Retry-After. A wait that would pass ctx's
// deadline is not started: it could only end in a timeout that hides err.
func pause(ctx context.Context, err error, backoff time.Duration) error {
	d := backoff
	var ra *retryAfter
	if errors.As(err, &ra) {
		// The registry said how long: at least that long.
		d = max(d, ra.wait)
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		if ra != nil && ra.wait >= d {
			return fmt.Errorf("%w; %s asks to wait %s (Retry-After), past this command's deadline (in %s): try again later or allow more time", err, ra.host, ra.wait, time.Until(dl).Round(time.Millisecond))
		}
		return fmt.Errorf("%w (no time left to try again before this command's deadline)", err)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("%w (stopped waiting to try again: %w)", err, ctx.Err())
	case <-t.C:
		return nil
	}
}

type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

// permanent marks err as one that retrying cannot fix.
func permanent(err error) error { return permanentError{err} }

func unwrapPermanent(err error) error {
	var pe permanentError
	if errors.As(err, &pe) {
		return pe.error
	}
	return err
}

// retryable reports whether err is worth another attempt: 5xx, 429 and
// 408 answers, a registry that got our bytes damaged (digest, size or
// upload invalid), a stalled request and broken connections are;
// everything else is not.
func retryable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, errStalled) || errors.Is(err, errTooSlow) {
		return true
	}
	var pe permanentError
	var gu *gaveUp
	if errors.As(err, &pe) || errors.As(err, &gu) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var te *transport.Error
	if errors.As(err, &te) {
		for _, d := range te.Errors {
			// Our bytes match their digest (we computed it from them):
			// a registry that got other bytes got them damaged or cut
			// on the way.
			switch d.Code {
			case transport.DigestInvalidErrorCode, transport.SizeInvalidErrorCode, transport.BlobUploadInvalidErrorCode:
				return true
			}
		}
		return te.StatusCode >= 500 || te.StatusCode == http.StatusTooManyRequests || te.StatusCode == http.StatusRequestTimeout
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// retryAfter is an answer (429, 503) that said how long to wait.
type retryAfter struct {
	error
	host string
	wait time.Duration
}

func (e *retryAfter) Unwrap() error { return e.error }

// gaveUp is a request the transport already tried attempts times (see
// retryTransport): no caller tries it again.
type gaveUp struct {
	error
	attempts int
}

func (e *gaveUp) Error() string {
	return fmt.Sprintf("%s (gave up after %d attempts)", e.error, e.attempts)
}

func (e *gaveUp) Unwrap() error { return e.error }

// withRetryAfter wraps err with the wait resp's Retry-After asks for (in
// seconds or as an HTTP date), when it has one. A wait longer than
// maxRetryAfter fails at once: a registry that asks for an hour is down
// for longer than a command should hang, and the user should know.
func withRetryAfter(err error, resp *http.Response) error {
	d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	if !ok {
		return err
	}
	host := "the registry"
	if resp.Request != nil && resp.Request.URL != nil {
		host = resp.Request.URL.Host
	}
	if d > maxRetryAfter {
		return permanent(fmt.Errorf("%w; %s asks to wait %s (Retry-After) before trying again, more than the %s ssebench waits: try again later", err, host, (d + time.Second - 1).Truncate(time.Second), maxRetryAfter))
	}
	return &retryAfter{error: err, host: host, wait: d}
}

// parseRetryAfter reads a Retry-After value: seconds, or an HTTP date
// (RFC 9110 section 10.2.3). A date in the past means no wait.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		// Past any sane cap; keeps the multiplication from overflowing.
		return time.Duration(min(s, 1<<31)) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
