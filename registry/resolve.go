package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Source says where Resolve found an image.
type Source string

const (
	// SourceStore is the local image store.
	SourceStore Source = "store"
	// SourceRegistry is the image's registry.
	SourceRegistry Source = "registry"
)

// Resolved is what a reference resolved to.
type Resolved struct {
	// Ref is the parsed reference.
	Ref name.Reference
	// Source says where the manifest came from.
	Source Source
	// Descriptor describes Image's manifest; when Image was picked from
	// an index it carries the platform.
	Descriptor v1.Descriptor
	// Image is the image the reference names, or the one Index has for
	// the platform (see WithPlatform).
	Image v1.Image
	// Index is the image index the reference names, nil when it names
	// an image.
	Index v1.ImageIndex
}

// Resolver turns image references into images, from the local store or the
// registry according to its pull policy.
type Resolver struct {
	o *options
}

// NewResolver returns a Resolver. PullNever needs WithStore.
func NewResolver(opts ...Option) (*Resolver, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	if o.policy == PullNever && o.store == nil {
		return nil, errors.New("pull policy never needs a local image store: see WithStore")
	}
	return &Resolver{o: o}, nil
}

// Image resolves ref (see Resolve) and returns its image.
func (r *Resolver) Image(ctx context.Context, ref string) (v1.Image, error) {
	res, err := r.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	return res.Image, nil
}

// Resolve finds ref. With PullMissing it looks in the store first; with
// PullAlways it asks the registry; with PullNever it uses the store only
// and fails with an error matching ErrNotFound when the store lacks it.
//
// An image from the registry is recorded in the store (when there is one)
// lazily: its manifest and config blobs are stored now, each layer as it is
// first read (streamed from the registry and verified), and the store
// entry for ref is added once the last layer is there. Store.Write forces
// the whole image in. For an index, the entry names the platform's image.
//
// ctx is kept for those later layer reads; cancel it only when the image
// is no longer used.
func (r *Resolver) Resolve(ctx context.Context, ref string) (*Resolved, error) {
	parsed, err := r.o.parseReference(ref)
	if err != nil {
		return nil, err
	}
	if r.o.store != nil && r.o.policy != PullAlways {
		res, err := r.fromStore(parsed)
		if err == nil || !errors.Is(err, ErrNotFound) {
			return res, err
		}
		if r.o.policy == PullNever {
			// storeMiss matches ErrNotFound without repeating its text.
			return nil, &storeMiss{msg: fmt.Sprintf("image %s is not in the local store (%s); pull it with --pull=missing or build it first", parsed.Name(), missDetail(err, r.o.store))}
		}
	}
	return r.fromRegistry(ctx, parsed)
}

// storeMiss is a store entry that exists but cannot serve the platform.
type storeMiss struct{ msg string }

func (e *storeMiss) Error() string        { return e.msg }
func (e *storeMiss) Is(target error) bool { return target == ErrNotFound }

func missDetail(err error, s *Store) string {
	var m *storeMiss
	if errors.As(err, &m) {
		return m.msg
	}
	return s.Dir()
}

func (r *Resolver) fromStore(ref name.Reference) (*Resolved, error) {
	s := r.o.store
	desc, err := s.Descriptor(ref)
	if err != nil {
		return nil, err
	}
	res := &Resolved{Ref: ref, Source: SourceStore}
	if desc.MediaType.IsIndex() {
		idx, err := s.index(desc, ref.Name())
		if err != nil {
			return nil, err
		}
		child, err := pickPlatform(idx, r.o.platform, ref.Name())
		if err != nil {
			return nil, &storeMiss{msg: err.Error()}
		}
		img, err := idx.Image(child.Digest)
		if err != nil {
			return nil, err
		}
		res.Index, res.Image, res.Descriptor = idx, img, child
		return res, nil
	}
	if desc.Platform != nil && !desc.Platform.Satisfies(r.o.platform) {
		return nil, &storeMiss{msg: fmt.Sprintf("the store has it only for %s, not %s", desc.Platform, r.o.platform.String())}
	}
	img, err := s.image(desc, ref.Name())
	if err != nil {
		return nil, err
	}
	desc.Annotations = nil
	res.Image, res.Descriptor = img, desc
	return res, nil
}

// pickPlatform returns the child of idx for platform p, or an error that
// lists the platforms idx has.
func pickPlatform(idx v1.ImageIndex, p v1.Platform, what string) (v1.Descriptor, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	var have []string
	for _, d := range im.Manifests {
		if !d.MediaType.IsImage() {
			continue
		}
		if d.Platform == nil {
			have = append(have, "(no platform)")
			continue
		}
		if d.Platform.Satisfies(p) {
			return d, nil
		}
		have = append(have, d.Platform.String())
	}
	if len(have) == 0 {
		have = []string{"no images"}
	}
	return v1.Descriptor{}, fmt.Errorf("image index %s has no image for platform %s; it has %s", what, p.String(), strings.Join(have, ", "))
}

func (r *Resolver) fromRegistry(ctx context.Context, ref name.Reference) (*Resolved, error) {
	rd, err := remote.Get(ref, r.o.remoteOptions(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("fetching %s from its registry: %w", ref.Name(), err)
	}
	res := &Resolved{Ref: ref, Source: SourceRegistry}
	switch mt := rd.MediaType; {
	case mt.IsIndex():
		idx, err := rd.ImageIndex()
		if err != nil {
			return nil, err
		}
		child, err := pickPlatform(idx, r.o.platform, ref.Name())
		if err != nil {
			return nil, err
		}
		img, err := idx.Image(child.Digest)
		if err != nil {
			return nil, fmt.Errorf("fetching %s for %s: %w", ref.Name(), r.o.platform.String(), err)
		}
		res.Index, res.Image, res.Descriptor = idx, img, child
	case mt.IsImage():
		img, err := rd.Image()
		if err != nil {
			return nil, fmt.Errorf("fetching %s: %w", ref.Name(), err)
		}
		res.Image, res.Descriptor = img, rd.Descriptor
	case mt.IsSchema1():
		return nil, fmt.Errorf("%s is a Docker schema 1 image, which ssebench cannot use: push it again with a current tool", ref.Name())
	default:
		return nil, fmt.Errorf("%s has media type %q, which is neither an image nor an image index", ref.Name(), mt)
	}
	if r.o.store == nil {
		return res, nil
	}
	img, err := r.o.store.lazy(ctx, ref, res)
	if err != nil {
		return nil, fmt.Errorf("recording %s in the local store: %w", ref.Name(), err)
	}
	res.Image = img
	return res, nil
}

// lazy stores the manifests and config of res now and returns res.Image
// wrapped so that its layers are stored as they are read.
func (s *Store) lazy(ctx context.Context, ref name.Reference, res *Resolved) (v1.Image, error) {
	if res.Index != nil {
		raw, err := res.Index.RawManifest()
		if err != nil {
			return nil, err
		}
		d, err := res.Index.Digest()
		if err != nil {
			return nil, err
		}
		if err := s.putBytes(ctx, raw, d); err != nil {
			return nil, err
		}
	}
	img := res.Image
	cfg, err := img.RawConfigFile()
	if err != nil {
		return nil, err
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return nil, err
	}
	if err := s.putBytes(ctx, cfg, cfgName); err != nil {
		return nil, err
	}
	if _, err := s.putManifest(ctx, img); err != nil {
		return nil, err
	}
	li := &lazyImage{Image: img, ctx: ctx, store: s, ref: ref}
	// Everything may be here already (a layer shared with another image,
	// or PullAlways on an unchanged image): then record it right away.
	if err := li.layerStored(); err != nil {
		return nil, err
	}
	return li, nil
}

// lazyImage is a registry image whose layers are teed into the store as
// they are read.
type lazyImage struct {
	v1.Image
	// ctx is used for recording the entry when the last layer lands,
	// which happens inside a later Read; it is Resolve's context.
	ctx   context.Context
	store *Store
	ref   name.Reference

	// recording guards against a second Write while one runs: that Write
	// may itself read a layer (if GC removed it meanwhile) and so call
	// layerStored again from inside.
	recording atomic.Bool
	recorded  atomic.Bool
}

var _ v1.Image = (*lazyImage)(nil)

// Layers implements v1.Image.
func (i *lazyImage) Layers() ([]v1.Layer, error) {
	ls, err := i.Image.Layers()
	if err != nil {
		return nil, err
	}
	out := make([]v1.Layer, len(ls))
	for n, l := range ls {
		out[n] = i.wrap(l)
	}
	return out, nil
}

// LayerByDigest implements v1.Image.
func (i *lazyImage) LayerByDigest(h v1.Hash) (v1.Layer, error) {
	l, err := i.Image.LayerByDigest(h)
	if err != nil {
		return nil, err
	}
	if cfg, err := i.Image.ConfigName(); err == nil && cfg == h {
		return l, nil
	}
	return i.wrap(l), nil
}

// LayerByDiffID implements v1.Image.
func (i *lazyImage) LayerByDiffID(h v1.Hash) (v1.Layer, error) {
	l, err := i.Image.LayerByDiffID(h)
	if err != nil {
		return nil, err
	}
	return i.wrap(l), nil
}

// Descriptor keeps the descriptor the registry gave (with the platform of
// an index child). See partial.Descriptor.
func (i *lazyImage) Descriptor() (*v1.Descriptor, error) {
	return partial.Descriptor(i.Image)
}

// wrap returns l as a lazy layer that keeps the registry reference, so
// remote.Write can still mount it from its repository.
func (i *lazyImage) wrap(l v1.Layer) v1.Layer {
	if ml, ok := l.(*remote.MountableLayer); ok {
		l = ml.Layer
	}
	return &remote.MountableLayer{Layer: &lazyLayer{Layer: l, img: i, store: i.store}, Reference: i.ref}
}

// layerStored records the image in the store once every layer is there.
func (i *lazyImage) layerStored() error {
	if i.recorded.Load() {
		return nil
	}
	m, err := i.Image.Manifest()
	if err != nil {
		return err
	}
	for _, l := range m.Layers {
		if !i.store.HasBlob(l.Digest) {
			return nil
		}
	}
	if !i.recording.CompareAndSwap(false, true) {
		return nil
	}
	defer i.recording.Store(false)
	if err := i.store.Write(i.ctx, i.ref, i); err != nil {
		return err
	}
	i.recorded.Store(true)
	return nil
}

// lazyLayer reads a layer from the store when it is there, else from the
// registry while writing it into the store.
type lazyLayer struct {
	v1.Layer
	img   *lazyImage
	store *Store
}

var _ v1.Layer = (*lazyLayer)(nil)

// Descriptor keeps the manifest's layer descriptor. See partial.Descriptor.
func (l *lazyLayer) Descriptor() (*v1.Descriptor, error) {
	return partial.Descriptor(l.Layer)
}

// Compressed implements v1.Layer.
func (l *lazyLayer) Compressed() (io.ReadCloser, error) {
	d, err := l.Layer.Digest()
	if err != nil {
		return nil, err
	}
	size, err := l.Layer.Size()
	if err != nil {
		return nil, err
	}
	if l.store.HasBlob(d) {
		return l.store.openBlob(d, size, l.img.ref.Name())
	}
	rc, err := l.Layer.Compressed()
	if err != nil {
		return nil, err
	}
	w, err := l.store.newIngest()
	if err != nil {
		rc.Close()
		return nil, err
	}
	return &teeReader{rc: rc, w: w, digest: d, size: size, done: l.img.layerStored}, nil
}

// Uncompressed implements v1.Layer, from Compressed, so that it too goes
// through the store.
func (l *lazyLayer) Uncompressed() (io.ReadCloser, error) {
	ext, err := partial.CompressedToLayer(compressedOnly{l})
	if err != nil {
		return nil, err
	}
	return ext.Uncompressed()
}

// MediaType implements v1.Layer.
func (l *lazyLayer) MediaType() (types.MediaType, error) { return l.Layer.MediaType() }

// fetch reads the whole layer, which stores it.
func (l *lazyLayer) fetch(ctx context.Context) error {
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, &ctxReader{ctx: ctx, r: rc})
	return err
}

// teeReader passes a registry blob through while writing it to an ingest;
// at the end it commits the blob (verified) and calls done.
type teeReader struct {
	rc     io.ReadCloser
	w      *ingest
	digest v1.Hash
	size   int64
	done   func() error
}

func (t *teeReader) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if t.w == nil {
		return n, err
	}
	if n > 0 {
		if _, werr := t.w.Write(p[:n]); werr != nil {
			t.w.abort()
			t.w = nil
			return n, fmt.Errorf("storing layer %s: %w", t.digest, werr)
		}
	}
	if err == io.EOF {
		w := t.w
		t.w = nil
		if _, _, cerr := w.commit(t.digest, t.size); cerr != nil {
			return n, fmt.Errorf("storing layer %s: %w", t.digest, cerr)
		}
		if derr := t.done(); derr != nil {
			return n, derr
		}
	}
	return n, err
}

// Close discards an unfinished blob: the store never sees part of a layer.
func (t *teeReader) Close() error {
	if t.w != nil {
		t.w.abort()
		t.w = nil
	}
	return t.rc.Close()
}
