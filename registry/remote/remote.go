package remote

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// pull fetches ref from its registry, whatever the pull policy, and, with
// WithStore, writes the whole image (every layer of the platform's image)
// into the store under ref before returning, and records which blobs ref's
// repository holds (so that a later push to that registry can mount them).
// For an index the store keeps the index; the image returned is the
// platform's (see WithPlatform).
func pull(ctx context.Context, ref string, opts ...Option) (*Resolved, error) {
	r, err := NewResolver(append(opts, WithPullPolicy(PullAlways))...)
	if err != nil {
		return nil, err
	}
	res, err := r.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	if s := r.o.store; s != nil {
		if err := s.Complete(ctx, res.Descriptor); err != nil {
			return nil, fmt.Errorf("pulling %s: %w", res.Ref.Name(), err)
		}
	}
	return res, nil
}

// recordHolders notes that ref's repository holds img's blobs.
func recordHolders(s *store.Store, ref name.Reference, img v1.Image) {
	m, err := img.Manifest()
	if err != nil {
		return
	}
	ds := []v1.Hash{m.Config.Digest}
	for _, l := range m.Layers {
		ds = append(ds, l.Digest)
	}
	s.Holders(ref.Context().RegistryStr()).Add(ref.Context().RepositoryStr(), ds...)
}

// Access is how this process reaches registries, built once from the
// flags (see New): credentials, which hosts may use plain HTTP (or skip
// certificate checks), retries, the platform and the store. Every client
// of a registry takes its policy from here: the resolver and pusher of
// this package (with the same options), BuildKit's pushes and containerd's pulls
// (with PlainHTTP), the layer facts (Repository), and the store, which fetches through it the layers it
// recorded without their bytes (FetchBlob).
type Access struct {
	o *options
}

// New returns the Access of opts.
func New(opts ...Option) (*Access, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	return &Access{o: o}, nil
}

// PlainHTTP reports whether host (host or host:port) is reached over plain
// HTTP: a loopback host, or one named with WithInsecureRegistries.
func (a *Access) PlainHTTP(host string) bool { return a.o.allowHTTP(host) }

// FetchBlob implements store.Fetcher: it opens blob d of repo. A
// connection broken mid-body is picked up where it stopped with a Range
// request (the bytes already read are kept), a few times; the store
// verifies the whole blob against d's digest at the end.
func (a *Access) FetchBlob(ctx context.Context, repo string, d v1.Descriptor) (io.ReadCloser, error) {
	r, err := a.o.parseRepository(repo)
	if err != nil {
		return nil, err
	}
	auth, err := authn.Resolve(ctx, a.o.keychain, r)
	if err != nil {
		return nil, fmt.Errorf("finding credentials for %s: %w", r.RegistryStr(), err)
	}
	// The ping and the token are retried by the transport (see
	// retryTransport).
	rt, err := transport.NewWithContext(ctx, r.Registry, auth, transport.NewUserAgent(plainLoopback{logRequests(a.o.guardedTransport())}, a.o.userAgent), []string{r.Scope(transport.PullScope)})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", r.RegistryStr(), err)
	}
	b := &rangeReader{ctx: ctx, c: &http.Client{Transport: rt}, url: blobsURL(r, d.Digest.String()), size: d.Size, what: fmt.Sprintf("blob %s from %s", d.Digest, repo), o: a.o}
	if err := b.open(); err != nil {
		return nil, err
	}
	return b, nil
}

// maxResumes bounds how often one blob's download is picked up again.
const maxResumes = 5

// rangeReader reads a blob over HTTP and, when the connection breaks
// mid-body, asks for the rest (Range: bytes=N-) instead of starting over;
// a registry that ignores Range sends the whole blob again, and the bytes
// already read are skipped.
type rangeReader struct {
	ctx     context.Context
	c       *http.Client
	url     string
	size    int64 // -1 or 0 when unknown
	what    string
	o       *options
	body    io.ReadCloser
	n       int64 // bytes handed out so far
	resumes int
}

func (b *rangeReader) open() error {
	return retry(b.ctx, b.o.move.attempts, b.o.move.backoff, func() error {
		req, err := http.NewRequestWithContext(b.ctx, http.MethodGet, b.url, nil)
		if err != nil {
			return permanent(err)
		}
		// This loop retries and resumes the blob itself.
		req = req.WithContext(callerRetries(b.ctx, req.URL))
		want := []int{http.StatusOK}
		if b.n > 0 {
			// Both ends: some registries read no open range.
			rng := fmt.Sprintf("bytes=%d-", b.n)
			if b.size > b.n {
				rng += fmt.Sprint(b.size - 1)
			}
			req.Header.Set("Range", rng)
			want = []int{http.StatusPartialContent}
		}
		resp, err := b.c.Do(req)
		if err != nil {
			return err
		}
		if b.n > 0 && resp.StatusCode == http.StatusOK {
			// No Range support: the whole blob again. Skip what was
			// read, as resumeBody does for the other reads; the store
			// checks the whole blob against its digest at the end.
			if resp.ContentLength >= 0 && b.size > 0 && resp.ContentLength != b.size {
				resp.Body.Close()
				return permanent(fmt.Errorf("fetching %s: the registry sent %d bytes when asked again, not the blob's %d", b.what, resp.ContentLength, b.size))
			}
			if _, err := io.CopyN(io.Discard, oci.ContextReader(b.ctx, resp.Body), b.n); err != nil {
				resp.Body.Close()
				return fmt.Errorf("fetching %s again from its start: %w", b.what, err)
			}
			b.body = resp.Body
			return nil
		}
		if err := transport.CheckError(resp, want...); err != nil {
			resp.Body.Close()
			return withRetryAfter(fmt.Errorf("fetching %s: %w", b.what, err), resp)
		}
		b.body = resp.Body
		return nil
	})
}

func (b *rangeReader) Read(p []byte) (int, error) {
	for {
		n, err := b.body.Read(p)
		b.n += int64(n)
		if err == nil || err == io.EOF {
			return n, err
		}
		if n > 0 {
			return n, nil // the next Read meets the error again
		}
		if !retryable(err) || b.resumes >= maxResumes || b.ctx.Err() != nil {
			return 0, fmt.Errorf("fetching %s: %w", b.what, err)
		}
		b.resumes++
		b.body.Close()
		if oerr := b.open(); oerr != nil {
			return 0, oerr
		}
	}
}

func (b *rangeReader) Close() error { return b.body.Close() }

var _ store.Fetcher = (*Access)(nil)
