package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/stream"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"
)

const (
	// defaultChunkSize is the size of one PATCH of a chunked upload. A
	// blob up to this size goes in one PUT. Every job holds one chunk in
	// memory, so that a chunk whose connection broke can be sent again
	// without reading the source again.
	defaultChunkSize = 8 << 20
	// defaultAttempts and defaultBackoff: five tries, 0.5 s, 1 s, 2 s, 4 s
	// apart, ride out a registry restart without hanging for minutes.
	defaultAttempts = 5
	defaultBackoff  = 500 * time.Millisecond
	maxBackoff      = 10 * time.Second
	// maxMountTries bounds the mount attempts per blob: each failed one
	// costs a round trip, and stale records should not cost many.
	maxMountTries = 4
)

// moveOptions are the options of push, mirror, save and load.
type moveOptions struct {
	mountFrom     []string
	reporter      Progress
	chunkSize     int64
	attempts      int
	backoff       time.Duration
	indexPlatform *v1.Platform
	since         []string
	prefix        string
}

func defaultMoveOptions() moveOptions {
	return moveOptions{chunkSize: defaultChunkSize, attempts: defaultAttempts, backoff: defaultBackoff}
}

// BlobAction says what Push did with a blob.
type BlobAction string

const (
	// BlobPushed means the blob's bytes were uploaded.
	BlobPushed BlobAction = "pushed"
	// BlobMounted means the registry copied the blob from another of its
	// repositories: no bytes were uploaded.
	BlobMounted BlobAction = "mounted"
	// BlobExists means the repository had the blob already.
	BlobExists BlobAction = "exists"
)

// BlobEvent is one blob settled by a push.
type BlobEvent struct {
	// Repository is the full name of the repository the blob went to.
	Repository string
	Digest     v1.Hash
	Size       int64
	Action     BlobAction
	// From is the repository a mounted blob came from.
	From string
	// Resumed is how many bytes of an upload an earlier, interrupted
	// push had already sent (they were not sent again).
	Resumed int64
}

// PushReport says what a push (or a mirror or load) moved. Sizes are in
// bytes.
type PushReport struct {
	// Uploaded is the bytes sent to registries; Mounted the bytes that
	// registries copied between their repositories; Skipped the bytes
	// the target repositories already had.
	Uploaded, Mounted, Skipped int64
	// UploadedBlobs, MountedBlobs and SkippedBlobs count the blobs.
	UploadedBlobs, MountedBlobs, SkippedBlobs int
	// Manifests counts the manifests and indexes written.
	Manifests int
	// Blobs lists every blob settled, in the order they were.
	Blobs []BlobEvent
}

func (r *PushReport) add(e BlobEvent) {
	switch e.Action {
	case BlobPushed:
		r.Uploaded += e.Size - e.Resumed
		r.UploadedBlobs++
	case BlobMounted:
		r.Mounted += e.Size
		r.MountedBlobs++
	case BlobExists:
		r.Skipped += e.Size
		r.SkippedBlobs++
	}
	r.Blobs = append(r.Blobs, e)
}

// Merge adds o's counts and blobs to r.
func (r *PushReport) Merge(o *PushReport) {
	if o == nil {
		return
	}
	r.Uploaded += o.Uploaded
	r.Mounted += o.Mounted
	r.Skipped += o.Skipped
	r.UploadedBlobs += o.UploadedBlobs
	r.MountedBlobs += o.MountedBlobs
	r.SkippedBlobs += o.SkippedBlobs
	r.Manifests += o.Manifests
	r.Blobs = append(r.Blobs, o.Blobs...)
}

// String is the summary line, e.g. "uploaded 12.3 MiB (2 blobs), mounted
// 40.0 MiB (3 blobs), skipped 1.2 GiB already there (10 blobs)".
func (r *PushReport) String() string {
	return fmt.Sprintf("uploaded %s (%s), mounted %s (%s), skipped %s already there (%s)",
		units.Bytes(r.Uploaded), units.Plural(r.UploadedBlobs, "blob"),
		units.Bytes(r.Mounted), units.Plural(r.MountedBlobs, "blob"),
		units.Bytes(r.Skipped), units.Plural(r.SkippedBlobs, "blob"))
}

// Push uploads an image or an image index to ref and says what it
// moved. Each blob is checked first (HEAD) and skipped when the repository
// has it; else mounted from another repository of the same registry that
// has it (the repository a registry layer came from, WithMountFrom, and the
// store's record of earlier pushes and pulls); else uploaded, in one request
// when small and in chunks otherwise, so that an interrupted upload resumes
// where it stopped, within this push and, with WithStore, in the next one.
// Blobs go WithJobs at a time; a request that fails with 5xx, 429 or a
// broken connection is retried with a growing wait (WithRetries). Manifests
// go last, so ref never names an incomplete image.
//
// Loopback hosts and WithInsecureRegistries may use plain HTTP; credentials
// come from WithKeychain. WithProgress receives byte counts and is closed
// when PushImage returns; WithBlobProgress receives each blob.
func Push(ctx context.Context, ref string, content remote.Taggable, opts ...Option) (*PushReport, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		if ch := progressOf(opts); ch != nil {
			close(ch)
		}
		return nil, err
	}
	p := newPusher(o)
	defer p.close()
	r, err := o.parseReference(ref)
	if err != nil {
		return nil, err
	}
	if err := p.push(ctx, r, content, nil); err != nil {
		return p.report(), err
	}
	return p.report(), nil
}

// progressOf finds the channel of WithProgress when the options fail to
// apply, so that it is closed as promised.
func progressOf(opts []Option) chan<- v1.Update {
	o := &options{}
	for _, opt := range opts {
		_ = opt(o)
	}
	return o.progress
}

// blob is one blob to put into a repository.
type blob struct {
	digest    v1.Hash
	size      int64
	mediaType types.MediaType
	// open reads the blob; it may be called again for a retry.
	open func() (io.ReadCloser, error)
	// layer is set for a layer whose digest is known only once read
	// (a stream.Layer).
	layer v1.Layer
	// origins are repositories known to hold the blob.
	origins []name.Repository
}

// pusher moves blobs and manifests for one command. It remembers which
// repository got which blob, so that an image sharing blobs with one pushed
// before mounts them instead of uploading them again.
type pusher struct {
	o *options

	mu      sync.Mutex
	clients map[string]*http.Client
	keys    map[string]*sync.Mutex
	holders map[string][]name.Repository // registry|digest → repositories that have it
	records map[string]*store.Holders    // registry → record in the store
	scopes  []name.Repository            // extra repositories to ask pull access for
	rep     PushReport
	total   int64
	sent    int64
	closed  bool
}

func newPusher(o *options) *pusher {
	return &pusher{
		o:       o,
		clients: map[string]*http.Client{},
		keys:    map[string]*sync.Mutex{},
		holders: map[string][]name.Repository{},
		records: map[string]*store.Holders{},
	}
}

func (p *pusher) report() *PushReport {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.rep
	r.Blobs = append([]BlobEvent(nil), p.rep.Blobs...)
	return &r
}

// close closes the WithProgress channel once.
func (p *pusher) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed && p.o.progress != nil {
		close(p.o.progress)
	}
	p.closed = true
}

func (p *pusher) settle(e BlobEvent) {
	p.mu.Lock()
	p.rep.add(e)
	if e.Action != BlobPushed {
		p.sent += e.Size
	}
	p.sendUpdateLocked()
	p.mu.Unlock()
	if r := p.o.move.reporter; r != nil {
		r.Done(e)
	}
}

func (p *pusher) advance(d v1.Hash, n int64) {
	p.mu.Lock()
	p.sent += n
	p.sendUpdateLocked()
	p.mu.Unlock()
	if r := p.o.move.reporter; r != nil {
		r.Advance(d, n)
	}
}

func (p *pusher) sendUpdateLocked() {
	if p.o.progress == nil || p.closed {
		return
	}
	u := v1.Update{Total: p.total, Complete: min(p.sent, p.total)}
	select {
	case p.o.progress <- u:
	default:
		// A slow reader loses intermediate updates, never the push.
	}
}

// push writes content to ref: its blobs, then child manifests, then its
// own manifest. origin, when set, is the repository content came from.
func (p *pusher) push(ctx context.Context, ref name.Reference, content remote.Taggable, origin *name.Repository) error {
	dst := ref.Context()
	blobs, err := collectBlobs(ctx, content, origin)
	if err != nil {
		return fmt.Errorf("pushing %s: %w", ref.Name(), err)
	}
	// Stream layers know their digest only once read: they go first,
	// alone, so that the config and manifest can name them.
	streamed := false
	for _, b := range blobs {
		if b.layer != nil {
			streamed = true
			if err := p.pushStream(ctx, dst, b); err != nil {
				return fmt.Errorf("pushing %s: %w", ref.Name(), err)
			}
		}
	}
	if streamed {
		if blobs, err = collectBlobs(ctx, content, origin); err != nil {
			return fmt.Errorf("pushing %s: %w", ref.Name(), err)
		}
	}
	if err := p.pushBlobs(ctx, dst, blobs, false); err != nil {
		return fmt.Errorf("pushing %s: %w", ref.Name(), err)
	}
	err = p.pushManifests(ctx, ref, content)
	if blobUnknown(err) {
		// A registry (or a proxy in front of it) that answered a HEAD
		// with 200 for a blob it does not hold refuses the manifest:
		// upload every blob without asking, then try once more.
		if err = p.pushBlobs(ctx, dst, blobs, true); err == nil {
			err = p.pushManifests(ctx, ref, content)
		}
	}
	if err != nil {
		return fmt.Errorf("pushing %s: %w", ref.Name(), err)
	}
	p.remember(dst, blobs)
	return nil
}

// collectBlobs lists the unique blobs of an image or index, configs
// included, sorted by digest.
func collectBlobs(ctx context.Context, content remote.Taggable, origin *name.Repository) ([]blob, error) {
	seen := map[v1.Hash]bool{}
	var out []blob
	var addImage func(img v1.Image) error
	addImage = func(img v1.Image) error {
		ls, err := img.Layers()
		if err != nil {
			return err
		}
		for _, l := range ls {
			b, err := layerBlob(l, origin)
			if err != nil {
				return err
			}
			if b.layer == nil {
				if seen[b.digest] || !b.mediaType.IsDistributable() {
					continue
				}
				seen[b.digest] = true
			}
			out = append(out, b)
		}
		for _, b := range out {
			if b.layer != nil {
				// The config names the stream layer's diff ID, known
				// only after the upload: it comes in the second pass.
				return nil
			}
		}
		raw, err := img.RawConfigFile()
		if err != nil {
			return err
		}
		h, err := img.ConfigName()
		if err != nil {
			return err
		}
		if !seen[h] {
			seen[h] = true
			b := blob{digest: h, size: int64(len(raw)), open: func() (io.ReadCloser, error) {
				return io.NopCloser(bytes.NewReader(raw)), nil
			}}
			if origin != nil {
				b.origins = []name.Repository{*origin}
			}
			out = append(out, b)
		}
		return nil
	}
	// The module's one manifest walk descends indexes (see oci.Walk).
	err := oci.WalkContent(ctx, content, func(c oci.Content) error {
		if img, ok := c.(v1.Image); ok {
			return addImage(img)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].digest.String() < out[j].digest.String() })
	return out, nil
}

func layerBlob(l v1.Layer, origin *name.Repository) (blob, error) {
	b := blob{open: l.Compressed}
	if ml, ok := l.(*remote.MountableLayer); ok {
		o := ml.Reference.Context()
		b.origins = append(b.origins, o)
	}
	if origin != nil {
		b.origins = append(b.origins, *origin)
	}
	d, err := l.Digest()
	if errors.Is(err, stream.ErrNotComputed) {
		b.layer = l
		return b, nil
	}
	if err != nil {
		return b, err
	}
	if b.size, err = l.Size(); err != nil {
		return b, err
	}
	if b.mediaType, err = l.MediaType(); err != nil {
		return b, err
	}
	b.digest = d
	return b, nil
}

func (p *pusher) pushBlobs(ctx context.Context, dst name.Repository, blobs []blob, force bool) error {
	if !force {
		p.mu.Lock()
		for _, b := range blobs {
			p.total += b.size
		}
		p.mu.Unlock()
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.o.jobs)
	for _, b := range blobs {
		g.Go(func() error { return p.pushBlob(gctx, dst, b, force) })
	}
	return g.Wait()
}

func (p *pusher) key(reg string, d v1.Hash) string { return reg + "|" + d.String() }

// lockBlob serialises the work on one blob of one registry, so that the
// second image needing it mounts what the first uploaded.
func (p *pusher) lockBlob(k string) func() {
	p.mu.Lock()
	m := p.keys[k]
	if m == nil {
		m = &sync.Mutex{}
		p.keys[k] = m
	}
	p.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// pushBlob makes b present in dst: it checks first (HEAD), then mounts,
// then uploads; force skips the check.
func (p *pusher) pushBlob(ctx context.Context, dst name.Repository, b blob, force bool) error {
	k := p.key(dst.RegistryStr(), b.digest)
	unlock := p.lockBlob(k)
	defer unlock()
	c, err := p.client(ctx, dst)
	if err != nil {
		return err
	}
	if force {
		// The registry said it had the blob and then did not: upload.
	} else if ok, err := p.exists(ctx, c, dst, b); err != nil {
		return err
	} else if ok {
		p.addHolder(k, dst)
		p.settle(BlobEvent{Repository: dst.Name(), Digest: b.digest, Size: b.size, Action: BlobExists})
		return nil
	}
	var location string
	for _, from := range p.mountCandidates(dst, b) {
		ok, loc, err := p.mount(ctx, c, dst, from, b.digest)
		if err != nil {
			// A refused mount (no access to from, an old registry) is
			// no reason to fail: the upload below still works.
			continue
		}
		if ok {
			p.addHolder(k, dst)
			p.settle(BlobEvent{Repository: dst.Name(), Digest: b.digest, Size: b.size, Action: BlobMounted, From: from.Name()})
			return nil
		}
		if location == "" {
			location = loc
		}
	}
	resumed, err := p.upload(ctx, c, dst, b, location)
	if err != nil {
		return fmt.Errorf("uploading blob %s: %w", b.digest, err)
	}
	p.addHolder(k, dst)
	p.settle(BlobEvent{Repository: dst.Name(), Digest: b.digest, Size: b.size, Action: BlobPushed, Resumed: resumed})
	return nil
}

func (p *pusher) addHolder(k string, r name.Repository) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range p.holders[k] {
		if h.Name() == r.Name() {
			return
		}
	}
	p.holders[k] = append([]name.Repository{r}, p.holders[k]...)
}

// mountCandidates lists repositories of dst's registry that may hold b,
// surest first: those that got it during this command, where it came
// from, the caller's hints, then the store's record.
func (p *pusher) mountCandidates(dst name.Repository, b blob) []name.Repository {
	var out []name.Repository
	seen := map[string]bool{dst.Name(): true}
	add := func(r name.Repository) {
		if r.RegistryStr() != dst.RegistryStr() || seen[r.Name()] {
			return
		}
		seen[r.Name()] = true
		out = append(out, r)
	}
	p.mu.Lock()
	for _, r := range p.holders[p.key(dst.RegistryStr(), b.digest)] {
		add(r)
	}
	p.mu.Unlock()
	for _, r := range b.origins {
		add(r)
	}
	for _, s := range p.o.move.mountFrom {
		if r, err := p.o.parseRepository(s); err == nil {
			add(r)
		}
	}
	if rec := p.record(dst.Registry); rec != nil {
		for _, s := range rec.Repositories(b.digest) {
			if r, err := p.o.parseRepository(dst.RegistryStr() + "/" + s); err == nil {
				add(r)
			}
		}
	}
	if len(out) > maxMountTries {
		out = out[:maxMountTries]
	}
	return out
}

// parseRepository parses a repository name, allowing plain HTTP as
// parseReference does.
func (o *options) parseRepository(s string) (name.Repository, error) {
	r, err := name.NewRepository(s)
	if err != nil {
		return r, fmt.Errorf("parsing repository name %q: %w", s, err)
	}
	if o.allowHTTP(r.RegistryStr()) {
		return name.NewRepository(s, name.Insecure)
	}
	return r, nil
}

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
		if r.RegistryStr() == dst.RegistryStr() && !seen[r.Name()] && len(scopes) < 32 {
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
	var rt http.RoundTripper
	err = p.retry(ctx, func() error {
		var err error
		rt, err = transport.NewWithContext(ctx, dst.Registry, auth, transport.NewUserAgent(logRequests(p.o.guardedTransport()), p.o.userAgent), scopes)
		return err
	})
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

// do sends a request and checks its status; body, when not nil, is
// called for each attempt.
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

func do(ctx context.Context, c *http.Client, method, u string, body io.Reader, size int64, hdr http.Header, ok ...int) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
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

// exists says whether dst holds b. A 200 is believed only when what it
// describes is b: a Content-Length or Docker-Content-Digest of another
// blob means no (the blob is uploaded), as a registry that answers HEAD
// with a cached or wrong answer must not make a push skip a blob.
func (p *pusher) exists(ctx context.Context, c *http.Client, dst name.Repository, b blob) (bool, error) {
	var found bool
	err := p.retry(ctx, func() error {
		resp, err := p.do(ctx, c, http.MethodHead, blobsURL(dst, b.digest.String()), nil, 0, nil, http.StatusOK, http.StatusNotFound)
		if err != nil {
			return err
		}
		resp.Body.Close()
		found = resp.StatusCode == http.StatusOK
		if found && b.size > 0 && resp.ContentLength >= 0 && resp.ContentLength != b.size {
			found = false
		}
		if dcd := resp.Header.Get("Docker-Content-Digest"); found && dcd != "" && dcd != b.digest.String() {
			found = false
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("checking for blob %s in %s: %w", b.digest, dst.Name(), err)
	}
	return found, nil
}

// blobUnknown says whether err is a registry refusing a manifest because
// a blob it names is missing.
func blobUnknown(err error) bool {
	var te *transport.Error
	if !errors.As(err, &te) {
		return false
	}
	for _, d := range te.Errors {
		if d.Code == transport.ManifestBlobUnknownErrorCode || d.Code == transport.BlobUnknownErrorCode {
			return true
		}
	}
	return false
}

// mount asks the registry to copy d from the repository from into dst. It
// reports whether it did; when it did not, the registry may have started
// an upload instead, whose location it returns.
func (p *pusher) mount(ctx context.Context, c *http.Client, dst, from name.Repository, d v1.Hash) (bool, string, error) {
	q := url.Values{"mount": {d.String()}, "from": {from.RepositoryStr()}}
	var mounted bool
	var loc string
	err := p.retry(ctx, func() error {
		resp, err := p.do(ctx, c, http.MethodPost, blobsURL(dst, "uploads/")+"?"+q.Encode(), nil, 0, nil, http.StatusCreated, http.StatusAccepted)
		if err != nil {
			return err
		}
		resp.Body.Close()
		mounted = resp.StatusCode == http.StatusCreated
		if !mounted {
			loc, err = location(resp)
		}
		return err
	})
	return mounted, loc, err
}

func location(resp *http.Response) (string, error) {
	loc := resp.Header.Get("Location")
	if loc == "" {
		return "", fmt.Errorf("the registry answered %s without a Location", resp.Status)
	}
	u, err := resp.Request.URL.Parse(loc)
	if err != nil {
		return "", fmt.Errorf("the registry answered an invalid Location %q: %w", loc, err)
	}
	return u.String(), nil
}

func (p *pusher) startUpload(ctx context.Context, c *http.Client, dst name.Repository) (string, error) {
	var loc string
	err := p.retry(ctx, func() error {
		resp, err := p.do(ctx, c, http.MethodPost, blobsURL(dst, "uploads/"), nil, 0, nil, http.StatusAccepted)
		if err != nil {
			return err
		}
		resp.Body.Close()
		loc, err = location(resp)
		return err
	})
	return loc, err
}

// upload sends b to dst: in one PUT when it fits a chunk, else in PATCH
// chunks, resuming an upload an earlier push left unfinished. loc is an
// upload the registry has already started, or "". It returns how many bytes
// a resumed upload did not send again.
func (p *pusher) upload(ctx context.Context, c *http.Client, dst name.Repository, b blob, loc string) (int64, error) {
	if r := p.o.move.reporter; r != nil {
		r.Start(BlobEvent{Repository: dst.Name(), Digest: b.digest, Size: b.size, Action: BlobPushed})
	}
	if b.size <= p.o.move.chunkSize {
		return 0, p.retry(ctx, func() error {
			l := loc
			loc = "" // an upload that failed is not used again
			if l == "" {
				var err error
				if l, err = p.startUpload(ctx, c, dst); err != nil {
					return err
				}
			}
			rc, err := b.open()
			if err != nil {
				return permanent(err)
			}
			defer rc.Close()
			body := &countingReader{r: rc, add: func(n int64) { p.advance(b.digest, n) }}
			resp, err := p.do(ctx, c, http.MethodPut, withDigest(l, b.digest), body, b.size, http.Header{"Content-Type": {"application/octet-stream"}}, http.StatusCreated)
			if err != nil {
				p.advance(b.digest, -body.n)
				return err
			}
			resp.Body.Close()
			return nil
		})
	}
	rec := p.record(dst.Registry)
	save := func(string) {}
	if rec != nil {
		// The location changes with every chunk (the distribution
		// registry signs the offset into it): keep the latest.
		save = func(l string) { rec.SetUpload(dst, b.digest, l) }
	}
	var offset int64
	if rec != nil {
		if old := rec.Upload(dst, b.digest); old != "" {
			if n, ok := p.uploadStatus(ctx, c, old); ok {
				loc, offset = old, n
			}
		}
	}
	if loc == "" {
		var err error
		if loc, err = p.startUpload(ctx, c, dst); err != nil {
			return 0, err
		}
	}
	save(loc)
	resumed, err := p.uploadChunks(ctx, c, b, loc, offset, save)
	if err != nil && ctx.Err() == nil {
		// The old upload was gone or out of step (a chunk cut short
		// may leave the registry at an offset it will not resume
		// from): start over once.
		if loc, err = p.startUpload(ctx, c, dst); err != nil {
			return 0, err
		}
		save(loc)
		resumed, err = p.uploadChunks(ctx, c, b, loc, 0, save)
	}
	if err != nil {
		if rec != nil {
			rec.Release(dst, b.digest)
		}
		return 0, err
	}
	if rec != nil {
		rec.SetUpload(dst, b.digest, "")
	}
	return resumed, nil
}

// uploadChunks sends b from offset on to the upload at loc and commits it.
func (p *pusher) uploadChunks(ctx context.Context, c *http.Client, b blob, loc string, offset int64, save func(string)) (int64, error) {
	rc, err := b.open()
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	if offset > 0 {
		if _, err := io.CopyN(io.Discard, rc, offset); err != nil {
			return 0, fmt.Errorf("skipping the %d bytes uploaded before: %w", offset, err)
		}
		p.advance(b.digest, offset)
	}
	buf := make([]byte, p.o.move.chunkSize)
	start := offset
	for {
		n, rerr := io.ReadFull(rc, buf)
		if rerr != nil && rerr != io.ErrUnexpectedEOF && rerr != io.EOF {
			return 0, rerr
		}
		if n > 0 {
			if loc, err = p.patch(ctx, c, b.digest, loc, buf[:n], start); err != nil {
				return 0, err
			}
			save(loc)
			start += int64(n)
		}
		if rerr != nil {
			break
		}
	}
	if start != b.size && b.size >= 0 {
		return 0, fmt.Errorf("the blob has %d bytes, expected %d", start, b.size)
	}
	err = p.retry(ctx, func() error {
		resp, err := p.do(ctx, c, http.MethodPut, withDigest(loc, b.digest), http.NoBody, 0, nil, http.StatusCreated)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	return offset, err
}

// patch sends chunk, which starts at byte start of the blob, and returns
// the upload's next location. A chunk whose connection broke is sent again
// from where the registry says it stopped.
func (p *pusher) patch(ctx context.Context, c *http.Client, d v1.Hash, loc string, chunk []byte, start int64) (string, error) {
	sent := int64(0) // bytes of chunk the registry has
	err := p.retry(ctx, func() error {
		rest := chunk[sent:]
		from := start + sent
		hdr := http.Header{
			"Content-Type":  {"application/octet-stream"},
			"Content-Range": {fmt.Sprintf("%d-%d", from, from+int64(len(rest))-1)},
		}
		body := &countingReader{r: bytes.NewReader(rest), add: func(n int64) { p.advance(d, n) }}
		resp, err := p.do(ctx, c, http.MethodPatch, loc, body, int64(len(rest)), hdr, http.StatusAccepted, http.StatusNoContent)
		if err != nil {
			p.advance(d, -body.n)
			// Ask how far the registry got before trying again.
			if n, ok := p.uploadStatus(ctx, c, loc); ok && n >= start && n <= start+int64(len(chunk)) {
				p.advance(d, n-from)
				sent = n - start
			}
			return err
		}
		resp.Body.Close()
		if l, lerr := location(resp); lerr == nil {
			loc = l
		}
		sent = int64(len(chunk))
		return nil
	})
	return loc, err
}

// uploadStatus asks how many bytes the upload at loc holds.
func (p *pusher) uploadStatus(ctx context.Context, c *http.Client, loc string) (int64, bool) {
	resp, err := p.do(ctx, c, http.MethodGet, loc, nil, 0, nil, http.StatusNoContent)
	if err != nil {
		return 0, false
	}
	resp.Body.Close()
	return parseRange(resp.Header.Get("Range"))
}

// parseRange reads the Range of an upload status, "0-<last byte>". The
// distribution registry answers "0-0" for an empty upload too; we take it
// as empty, and a wrong guess only costs a restart of that upload.
func parseRange(s string) (int64, bool) {
	lo, hi, ok := strings.Cut(strings.TrimPrefix(s, "bytes="), "-")
	if !ok || lo != "0" {
		return 0, false
	}
	n, err := strconv.ParseInt(hi, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	if n == 0 {
		return 0, true
	}
	return n + 1, true
}

func withDigest(loc string, d v1.Hash) string {
	u, err := url.Parse(loc)
	if err != nil {
		return loc
	}
	q := u.Query()
	q.Set("digest", d.String())
	u.RawQuery = q.Encode()
	return u.String()
}

// pushStream uploads a layer whose digest is known only once it is read.
func (p *pusher) pushStream(ctx context.Context, dst name.Repository, b blob) error {
	c, err := p.client(ctx, dst)
	if err != nil {
		return err
	}
	loc, err := p.startUpload(ctx, c, dst)
	if err != nil {
		return err
	}
	rc, err := b.layer.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	buf := make([]byte, p.o.move.chunkSize)
	var start int64
	for {
		n, rerr := io.ReadFull(rc, buf)
		if rerr != nil && rerr != io.ErrUnexpectedEOF && rerr != io.EOF {
			return rerr
		}
		if n > 0 {
			if loc, err = p.patch(ctx, c, v1.Hash{}, loc, buf[:n], start); err != nil {
				return err
			}
			start += int64(n)
		}
		if rerr != nil {
			break
		}
	}
	rc.Close()
	d, err := b.layer.Digest()
	if err != nil {
		return err
	}
	resp, err := p.do(ctx, c, http.MethodPut, withDigest(loc, d), http.NoBody, 0, nil, http.StatusCreated)
	if err != nil {
		return fmt.Errorf("uploading layer %s: %w", d, err)
	}
	resp.Body.Close()
	p.addHolder(p.key(dst.RegistryStr(), d), dst)
	p.settle(BlobEvent{Repository: dst.Name(), Digest: d, Size: start, Action: BlobPushed})
	return nil
}

// pushManifests writes the manifests of content: for an index its
// children first, by digest, then content itself at ref.
func (p *pusher) pushManifests(ctx context.Context, ref name.Reference, content remote.Taggable) error {
	if idx, ok := content.(v1.ImageIndex); ok {
		im, err := idx.IndexManifest()
		if err != nil {
			return err
		}
		for _, d := range im.Manifests {
			var child remote.Taggable
			var err error
			if d.MediaType.IsIndex() {
				child, err = idx.ImageIndex(d.Digest)
			} else {
				child, err = idx.Image(d.Digest)
			}
			if err != nil {
				return err
			}
			if err := p.pushManifests(ctx, ref.Context().Digest(d.Digest.String()), child); err != nil {
				return err
			}
		}
	}
	raw, err := content.RawManifest()
	if err != nil {
		return err
	}
	mt, err := mediaTypeOf(content, raw)
	if err != nil {
		return err
	}
	return p.putManifest(ctx, ref, raw, mt)
}

func mediaTypeOf(content remote.Taggable, raw []byte) (types.MediaType, error) {
	if w, ok := content.(interface {
		MediaType() (types.MediaType, error)
	}); ok {
		if mt, err := w.MediaType(); err == nil && mt != "" {
			return mt, nil
		}
	}
	if d, err := partial.Descriptor(content.(partial.Describable)); err == nil && d.MediaType != "" {
		return d.MediaType, nil
	}
	var m struct {
		MediaType types.MediaType `json:"mediaType"`
	}
	_ = json.Unmarshal(raw, &m)
	if m.MediaType == "" {
		return "", errors.New("the manifest names no media type")
	}
	return m.MediaType, nil
}

func (p *pusher) putManifest(ctx context.Context, ref name.Reference, raw []byte, mt types.MediaType) error {
	c, err := p.client(ctx, ref.Context())
	if err != nil {
		return err
	}
	r := ref.Context()
	u := fmt.Sprintf("%s://%s/v2/%s/manifests/%s", r.Scheme(), r.RegistryStr(), r.RepositoryStr(), ref.Identifier())
	err = p.retry(ctx, func() error {
		resp, err := p.do(ctx, c, http.MethodPut, u, bytes.NewReader(raw), int64(len(raw)), http.Header{"Content-Type": {string(mt)}}, http.StatusCreated, http.StatusOK, http.StatusAccepted)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	if err != nil {
		return fmt.Errorf("writing the manifest of %s: %w", ref.Name(), err)
	}
	p.mu.Lock()
	p.rep.Manifests++
	p.mu.Unlock()
	return nil
}

// remember records in the store which repository holds the blobs.
func (p *pusher) remember(dst name.Repository, blobs []blob) {
	rec := p.record(dst.Registry)
	if rec == nil {
		return
	}
	ds := make([]v1.Hash, 0, len(blobs))
	for _, b := range blobs {
		ds = append(ds, b.digest)
	}
	rec.Add(dst.RepositoryStr(), ds...)
}

func (p *pusher) record(reg name.Registry) *store.Holders {
	if p.o.store == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.records[reg.RegistryStr()]
	if r == nil {
		r = p.o.store.Holders(reg.RegistryStr())
		p.records[reg.RegistryStr()] = r
	}
	return r
}

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
// 408 answers and broken connections are; everything else is not.
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
	if errors.Is(err, errStalled) {
		return true
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// countingReader reports the bytes read through it.
type countingReader struct {
	r   io.Reader
	n   int64
	add func(int64)
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if n > 0 {
		c.n += int64(n)
		c.add(int64(n))
	}
	return n, err
}
