package remote

// The retry rules of every request this package sends itself (pushes,
// blob fetches): which errors are temporary, how long to wait between
// attempts (a doubling backoff, or longer when the registry's Retry-After
// asks for it) and when to give up. How long one attempt may take is
// deadline.go's job; what is sent is upload.go's and manifest.go's.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
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
		pause := wait
		var ra *retryAfter
		if errors.As(err, &ra) {
			// The registry said how long: at least that long.
			pause = max(pause, ra.wait)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, maxBackoff)
	}
	if attempts > 1 {
		return fmt.Errorf("%w (gave up after %d attempts)", err, attempts)
	}
	return err
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
	if errors.Is(err, errStalled) {
		return true
	}
	var pe permanentError
	if errors.As(err, &pe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
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
	wait time.Duration
}

func (e *retryAfter) Unwrap() error { return e.error }

// withRetryAfter wraps err with the wait resp's Retry-After asks for (in
// seconds or as an HTTP date), when it has one.
func withRetryAfter(err error, resp *http.Response) error {
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return err
	}
	var d time.Duration
	if s, perr := strconv.Atoi(v); perr == nil && s >= 0 {
		d = time.Duration(s) * time.Second
	} else if t, perr := http.ParseTime(v); perr == nil {
		d = time.Until(t)
	} else {
		return err
	}
	return &retryAfter{error: err, wait: min(max(d, 0), maxRetryAfter)}
}
