package remote

// The HTTP client of a push: one authenticated client per repository, with
// push access to it and pull access to the repositories blobs may be
// mounted from, and do, which sends one request under its own deadline and
// turns a bad status into a *transport.Error. The requests themselves are
// upload.go's and manifest.go's.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// client returns an authenticated client for dst with push access to it and
// pull access to the repositories blobs may be mounted from.
func (p *pusher) client(ctx context.Context, dst name.Repository) (*http.Client, error) {
	p.mu.Lock()
	c := p.clients[dst.Name()]
	p.mu.Unlock()
	if c != nil {
		return c, nil
	}
	scopes := []string{dst.Scope(transport.PushScope)}
	seen := map[string]bool{dst.Name(): true}
	addScope := func(r name.Repository) {
		if r.RegistryStr() == dst.RegistryStr() && !seen[r.Name()] && len(scopes) < maxScopes {
			seen[r.Name()] = true
			scopes = append(scopes, r.Scope(transport.PullScope))
		}
	}
	p.mu.Lock()
	for _, r := range p.scopes {
		addScope(r)
	}
	p.mu.Unlock()
	for _, s := range p.o.move.mountFrom {
		if r, err := p.o.parseRepository(s); err == nil {
			addScope(r)
		}
	}
	auth, err := authn.Resolve(ctx, p.o.keychain, dst)
	if err != nil {
		return nil, fmt.Errorf("finding credentials for %s: %w", dst.RegistryStr(), err)
	}
	// The ping and the token are retried by the transport (see
	// retryTransport), as the registry's Retry-After asks.
	rt, err := transport.NewWithContext(ctx, dst.Registry, auth, transport.NewUserAgent(plainLoopback{logRequests(p.o.guardedTransport())}, p.o.userAgent), scopes)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", dst.RegistryStr(), err)
	}
	c = &http.Client{Transport: rt}
	p.mu.Lock()
	p.clients[dst.Name()] = c
	p.mu.Unlock()
	return c, nil
}

func blobsURL(r name.Repository, rest string) string {
	return fmt.Sprintf("%s://%s/v2/%s/blobs/%s", r.Scheme(), r.RegistryStr(), r.RepositoryStr(), rest)
}

// do sends one request under a deadline of its own (the stall limit plus
// the time the body takes at the slowest rate we wait for): a registry
// that stops answering fails the request, which is then retried.
func (p *pusher) do(ctx context.Context, c *http.Client, method, u string, body io.Reader, size int64, hdr http.Header, ok ...int) (*http.Response, error) {
	rctx, cancel := p.o.requestContext(ctx, size)
	resp, err := do(rctx, c, method, u, body, size, hdr, ok...)
	if err != nil {
		var ne net.Error
		if ctx.Err() == nil && (errors.Is(rctx.Err(), context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()) {
			err = fmt.Errorf("%w: %s %s", errStalled, method, redactURL(u))
		}
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose ends a request's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// redactURL drops the query of u: registries sign upload state into it.
func redactURL(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i]
	}
	return u
}

// do sends one request with c and turns a status not in ok into a
// *transport.Error, carrying the wait a Retry-After asked for.
func do(ctx context.Context, c *http.Client, method, u string, body io.Reader, size int64, hdr http.Header, ok ...int) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	// Our callers retry this request (see retry.go); the transport only
	// retries what it needs, such as a token.
	req = req.WithContext(callerRetries(ctx, req.URL))
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body != nil {
		req.ContentLength = size
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	if err := transport.CheckError(resp, ok...); err != nil {
		resp.Body.Close()
		return nil, withRetryAfter(err, resp)
	}
	return resp, nil
}
