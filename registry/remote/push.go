package remote

// The push logic: which blobs an image needs, in which order they go (stream
// layers first, then the rest WithJobs at a time, manifests last so a tag
// never names an incomplete image), whether a blob is skipped, mounted or
// uploaded, and what the pusher remembers between the images of one command.
// How each request is made is client.go's, upload.go's and manifest.go's job;
// when one is tried again is retry.go's.

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sync/errgroup"
)

// maxMountTries bounds the mount attempts per blob: each failed one
// costs a round trip, and stale records should not cost many.
const maxMountTries = 4

// Push uploads an image or an image index to ref and says what it
// moved. Each blob is checked first (HEAD) and skipped when the repository
// has it; else mounted from another repository of the same registry that
// has it (the repository a registry layer came from, WithMountFrom, and the
// store's record of earlier pushes and pulls); else uploaded, in one request
// when small and in chunks otherwise, so that an interrupted upload resumes
// where it stopped, within this push and, with WithStore, in the next one.
// Blobs go WithJobs at a time; a request that fails with 5xx, 429 or a
// broken connection is retried with a growing wait (five attempts, 0.5 s
// apart at first, or what the registry's Retry-After asks). Manifests go
// last, so ref never names an incomplete image.
//
// Loopback hosts and WithInsecureRegistries may use plain HTTP; credentials
// come from WithKeychain. WithBlobProgress receives each blob.
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

// progressOf finds the channel of withProgress when the options fail to
// apply, so that it is closed as promised.
func progressOf(opts []Option) chan<- v1.Update {
	o := &options{}
	for _, opt := range opts {
		_ = opt(o)
	}
	return o.progress
}

// Target is one image of PushAll: where it goes and what it is.
type Target struct {
	Ref     string
	Content remote.Taggable
}

// PushAll pushes each target in turn with one pusher, so that blobs shared
// between them are uploaded once and mounted for the others (see Push).
func PushAll(ctx context.Context, targets []Target, opts ...Option) (*PushReport, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	p := newPusher(o)
	defer p.close()
	for _, t := range targets {
		dst, err := o.parseReference(t.Ref)
		if err != nil {
			return p.report(), err
		}
		if err := p.push(ctx, dst, t.Content, nil); err != nil {
			return p.report(), err
		}
	}
	return p.report(), nil
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

// pushStream uploads a layer whose digest is known only once it is read.
func (p *pusher) pushStream(ctx context.Context, dst name.Repository, b blob) error {
	c, err := p.client(ctx, dst)
	if err != nil {
		return err
	}
	d, size, err := p.uploadStream(ctx, c, dst, b.layer)
	if err != nil {
		return err
	}
	p.addHolder(p.key(dst.RegistryStr(), d), dst)
	p.settle(BlobEvent{Repository: dst.Name(), Digest: d, Size: size, Action: BlobPushed})
	return nil
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

// addHolder notes that r got the blob of key k, newest first. Only the
// last maxMountTries are kept, all a mount tries: a base layer that
// 100,000 mirrored repositories share would otherwise cost a list of
// 100,000 and a scan of it per image.
func (p *pusher) addHolder(k string, r name.Repository) {
	p.mu.Lock()
	defer p.mu.Unlock()
	hs := p.holders[k]
	for _, h := range hs {
		if h.Name() == r.Name() {
			return
		}
	}
	hs = append([]name.Repository{r}, hs...)
	if len(hs) > maxMountTries {
		hs = hs[:maxMountTries]
	}
	p.holders[k] = hs
}

// maxScopes bounds the extra repositories a client asks pull access for
// (see client): a token request names them all.
const maxScopes = 32

// addScopes adds repositories to ask pull access for, the newest kept
// (see maxScopes): mount sources of the images pushed next.
func (p *pusher) addScopes(rs ...name.Repository) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range rs {
		p.scopes = slices.DeleteFunc(p.scopes, func(s name.Repository) bool { return s.Name() == r.Name() })
		p.scopes = append(p.scopes, r)
	}
	if n := len(p.scopes); n > maxScopes {
		p.scopes = append(p.scopes[:0], p.scopes[n-maxScopes:]...)
	}
}

// forget drops the client of repository r, done with: a mirror of
// 100,000 repositories would otherwise keep 100,000 clients.
func (p *pusher) forget(r name.Repository) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.clients, r.Name())
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

// pushManifests writes the manifests of content: for an index its
// children first, by digest, each once however many indexes list it, then
// content itself at ref.
func (p *pusher) pushManifests(ctx context.Context, ref name.Reference, content remote.Taggable) error {
	return oci.WalkContentChildrenFirst(ctx, content, func(c oci.Content, listed *v1.Descriptor) error {
		at := ref
		if listed != nil {
			at = ref.Context().Digest(listed.Digest.String())
		}
		raw, err := c.RawManifest()
		if err != nil {
			return err
		}
		mt, err := mediaTypeOf(c, raw)
		if err != nil {
			return err
		}
		if err := p.putManifest(ctx, at, raw, mt); err != nil {
			return err
		}
		p.mu.Lock()
		p.rep.Manifests++
		p.mu.Unlock()
		return nil
	})
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
