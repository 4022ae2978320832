package remote

// The retries under every registry request: retryTransport sits at the
// bottom of guardedTransport, so that go-containerregistry's requests (the
// ping, the token, manifest HEAD and GET, config and layer GETs) and the
// token and ping requests of our own clients wait out a 429 or 503 as the
// registry's Retry-After asks, and a body cut short (a reset, a clean close
// before Content-Length) is picked up where it stopped, whatever the size of
// the blob. The requests this package sends and retries itself (client.go's
// do, remote.go's rangeReader) pass through: one retry loop per request,
// never one inside another.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// retryTransport retries a request that can be sent again (no body, or one
// it can rewind) when the registry answers 408, 429 or 5xx or the
// connection breaks, and wraps a GET's body so that a broken read resumes.
type retryTransport struct {
	base     http.RoundTripper
	attempts int
	backoff  time.Duration
}

type callerRetriesKey struct{}

// callerRetries marks ctx: its caller retries the request to u itself, so
// the transport sends that request once; the requests made on its behalf
// (a token it needs) are still retried here.
func callerRetries(ctx context.Context, u *url.URL) context.Context {
	return context.WithValue(ctx, callerRetriesKey{}, u.Host+u.Path)
}

// RoundTrip implements http.RoundTripper.
func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if k, _ := req.Context().Value(callerRetriesKey{}).(string); k == req.URL.Host+req.URL.Path || !rewindable(req) {
		return t.base.RoundTrip(req)
	}
	ctx := req.Context()
	wait := t.backoff
	for i := 1; ; i++ {
		r, err := rewind(req, i)
		if err != nil {
			return nil, err
		}
		resp, err := t.base.RoundTrip(r)
		var failed error
		switch {
		case err != nil:
			if !retryable(err) || refusedLoopback(r, err) {
				return nil, err
			}
			failed = err
		case retryStatus(resp.StatusCode):
			failed = statusError(resp)
		default:
			return withResume(t, r, resp), nil
		}
		var pe permanentError
		if errors.As(failed, &pe) {
			return nil, pe.error
		}
		if i >= t.attempts {
			return nil, &gaveUp{error: failed, attempts: i}
		}
		if err := pause(ctx, failed, wait); err != nil {
			return nil, err
		}
		wait = min(2*wait, maxBackoff)
	}
}

// rewindable says whether req can be sent again: it has no body, or
// net/http can make its body anew (bytes and strings readers can).
func rewindable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// rewind returns req for attempt i: req itself the first time, a copy with
// a fresh body after.
func rewind(req *http.Request, i int) (*http.Request, error) {
	if i == 1 {
		return req, nil
	}
	r := req.Clone(req.Context())
	if req.Body != nil && req.Body != http.NoBody {
		b, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("sending %s %s again: %w", req.Method, redactURL(req.URL.String()), err)
		}
		r.Body = b
	}
	return r, nil
}

// retryStatus says whether an answer with code is worth another attempt,
// as retryable does for errors.
func retryStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// statusError reads and closes resp, an error answer, into a
// *transport.Error carrying its Retry-After.
func statusError(resp *http.Response) error {
	err := transport.CheckError(resp)
	resp.Body.Close()
	return withRetryAfter(err, resp)
}

// maxCheckedBody bounds the bodies resumeBody hashes itself: configs,
// manifests and small layers. A larger blob is a layer, which its reader
// verifies anyway (go-containerregistry, the store).
const maxCheckedBody = 16 << 20

// digestPath finds the digest a blob or manifest request names.
var digestPath = regexp.MustCompile(`/(blobs|manifests)/(sha256:[0-9a-f]{64})$`)

// withResume makes the body of a whole-body GET resume where it broke.
func withResume(t *retryTransport, req *http.Request, resp *http.Response) *http.Response {
	if req.Method != http.MethodGet || resp.StatusCode != http.StatusOK || resp.ContentLength <= 0 || req.Header.Get("Range") != "" {
		return resp
	}
	b := &resumeBody{t: t, req: req, rc: resp.Body, size: resp.ContentLength, digest: resp.Header.Get("Docker-Content-Digest")}
	b.want = wantDigest(req, b.digest)
	if b.want == "" && manifestPath.MatchString(req.URL.Path) {
		// A manifest by tag with no digest to check: two halves of
		// two versions of the tag must not be stitched together.
		return resp
	}
	if b.want != "" && b.size <= maxCheckedBody {
		b.h = sha256.New()
	}
	resp.Body = b
	return resp
}

// wantDigest is the digest the body of req must have: the one its path
// names (or the path of the request that redirected to it), else the one
// the registry announced.
func wantDigest(req *http.Request, announced string) string {
	paths := []string{req.URL.Path}
	if req.Response != nil && req.Response.Request != nil {
		paths = append(paths, req.Response.Request.URL.Path)
	}
	for _, p := range paths {
		if m := digestPath.FindStringSubmatch(p); m != nil {
			return m[2]
		}
	}
	if strings.HasPrefix(announced, "sha256:") {
		return announced
	}
	return ""
}

// resumeBody is a GET's body that, when the connection breaks or closes
// before the announced length, asks for the rest (Range: bytes=N-) and goes
// on; a registry without Range support sends the whole blob again and the
// bytes already read are skipped. What it hands out is checked against
// the blob's digest by the reader (go-containerregistry for configs and
// layers, the store for what it keeps, manifestCheck for manifests): a
// resumed body that differs fails there.
type resumeBody struct {
	t       *retryTransport
	req     *http.Request
	rc      io.ReadCloser
	size    int64
	digest  string // Docker-Content-Digest of the first answer
	want    string // the digest the body must have, "" when unknown
	h       hash.Hash
	n       int64 // bytes handed out
	pending error // the error met after the last bytes handed out
	resumes int
}

func (b *resumeBody) Read(p []byte) (int, error) {
	for {
		err := b.pending
		b.pending = nil
		if err == nil {
			var n int
			n, err = b.rc.Read(p)
			b.n += int64(n)
			if b.h != nil {
				b.h.Write(p[:n])
			}
			if err == io.EOF && b.n < b.size {
				err = io.ErrUnexpectedEOF
			}
			if err == io.EOF || err == nil && b.n >= b.size {
				// The whole body: it must be the right one.
				if cerr := b.check(); cerr != nil {
					return n, cerr
				}
				return n, err
			}
			if err == nil {
				return n, nil
			}
			if n > 0 {
				b.pending = err
				return n, nil
			}
		}
		if rerr := b.resume(err); rerr != nil {
			return 0, rerr
		}
	}
}

// check compares what was read with the digest the body must have, once,
// when the body was hashed and resumed.
func (b *resumeBody) check() error {
	if b.h == nil || b.resumes == 0 {
		return nil
	}
	got := "sha256:" + hex.EncodeToString(b.h.Sum(nil))
	b.h = nil
	if got != b.want {
		return fmt.Errorf("%s from %s has digest %s after a resumed read, not %s: it was damaged on the way; try again", redactURL(b.req.URL.Path), b.req.URL.Host, got, b.want)
	}
	return nil
}

// resume opens the rest of the body after cause broke it.
func (b *resumeBody) resume(cause error) error {
	ctx := b.req.Context()
	what := fmt.Sprintf("reading %s after %d of %d bytes", redactURL(b.req.URL.String()), b.n, b.size)
	if !retryable(cause) || ctx.Err() != nil || b.want == "" {
		// Without a digest a stitched body could not be checked.
		return fmt.Errorf("%s: %w", what, cause)
	}
	if b.resumes >= maxResumes {
		return fmt.Errorf("%s: %w (gave up after %d resumed reads)", what, cause, b.resumes)
	}
	b.resumes++
	b.rc.Close()
	wait := b.t.backoff
	failed := cause
	for i := 1; ; i++ {
		if err := pause(ctx, failed, wait); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		wait = min(2*wait, maxBackoff)
		r := b.req.Clone(ctx)
		r.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", b.n, b.size-1))
		resp, err := b.t.base.RoundTrip(r)
		switch {
		case err != nil:
			if !retryable(err) {
				return fmt.Errorf("%s: %w", what, err)
			}
			failed = err
		case resp.StatusCode == http.StatusPartialContent:
			if start, ok := rangeStart(resp.Header.Get("Content-Range")); !ok || start != b.n {
				resp.Body.Close()
				return fmt.Errorf("%s: the registry resumed at %q, not at byte %d", what, resp.Header.Get("Content-Range"), b.n)
			}
			b.rc = resp.Body
			return nil
		case resp.StatusCode == http.StatusOK:
			// No Range support: the whole body again, if it is the
			// same one; skip what was read.
			if resp.ContentLength != b.size || resp.Header.Get("Docker-Content-Digest") != b.digest {
				resp.Body.Close()
				return fmt.Errorf("%s: the registry sent another body (%d bytes) when asked again", what, resp.ContentLength)
			}
			if _, err = io.CopyN(io.Discard, resp.Body, b.n); err == nil {
				b.rc = resp.Body
				return nil
			}
			resp.Body.Close()
			failed = err
		case retryStatus(resp.StatusCode):
			failed = statusError(resp)
			var pe permanentError
			if errors.As(failed, &pe) {
				return fmt.Errorf("%s: %w", what, pe.error)
			}
		default:
			err := transport.CheckError(resp)
			resp.Body.Close()
			return fmt.Errorf("%s: %w", what, err)
		}
		if i >= b.t.attempts {
			return fmt.Errorf("%s: %w", what, &gaveUp{error: failed, attempts: i})
		}
	}
}

func (b *resumeBody) Close() error { return b.rc.Close() }

// rangeStart reads the first byte of a Content-Range: "bytes N-M/size".
func rangeStart(s string) (int64, bool) {
	s, ok := strings.CutPrefix(s, "bytes ")
	if !ok {
		return 0, false
	}
	lo, _, ok := strings.Cut(s, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(lo, 10, 64)
	return n, err == nil && n >= 0
}
