package remote

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Resolved is what a reference resolved to.
type Resolved struct {
	// Ref is the parsed reference.
	Ref name.Reference
	// FromRegistry is true when the manifest came from the registry
	// (and was recorded in the store, when there is one), false when it
	// came from the store.
	FromRegistry bool
	// PulledFrom is the repository the image was pulled from, now or
	// when the store recorded it; "" for an image this machine made.
	PulledFrom string
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
// and fails with an error matching store.ErrNotFound when the store lacks
// it.
//
// An image from the registry is recorded in the store (when there is one)
// under ref at once, as the registry has it (an index stays an index), with
// its manifests and configs; its layers are recorded without their bytes
// and fetched from the registry, verified and kept, when first read (see
// store.WithFetcher).
func (r *Resolver) Resolve(ctx context.Context, ref string) (*Resolved, error) {
	parsed, err := r.o.parseReference(ref)
	if err != nil {
		return nil, err
	}
	if r.o.localOnly(parsed) {
		if r.o.store == nil {
			return nil, &storeMiss{msg: fmt.Sprintf("image %s is not here (no local store yet), and %s", parsed.Name(), r.o.localWhy)}
		}
		res, err := r.fromStore(parsed)
		if err == nil || !errors.Is(err, store.ErrNotFound) {
			return res, err
		}
		return nil, &storeMiss{msg: fmt.Sprintf("image %s is not in the local store (%s), and %s", parsed.Name(), missDetail(err, r.o.store), r.o.localWhy)}
	}
	if r.o.store != nil && r.o.policy != PullAlways {
		res, err := r.fromStore(parsed)
		if err == nil || !errors.Is(err, store.ErrNotFound) {
			return res, err
		}
		miss := fmt.Sprintf("image %s is not in the local store (%s)", parsed.Name(), missDetail(err, r.o.store))
		if r.o.policy == PullNever {
			// storeMiss matches store.ErrNotFound without repeating its text.
			return nil, &storeMiss{msg: miss + "; pull it with --pull=missing or build it first"}
		}
		if r.o.notice != nil {
			r.o.notice(fmt.Sprintf("%s; pulling it from %s", miss, parsed.Context().RegistryStr()))
		}
		res, err = r.fromRegistry(ctx, parsed)
		if err != nil {
			return nil, fmt.Errorf("%s, and %w", miss, err)
		}
		return res, nil
	}
	if r.o.store == nil && r.o.policy != PullAlways && r.o.notice != nil {
		r.o.notice(fmt.Sprintf("no local store yet; pulling %s from %s", parsed.Name(), parsed.Context().RegistryStr()))
	}
	return r.fromRegistry(ctx, parsed)
}

// localOnly says whether ref is under the WithLocalOnly prefix and the
// policy lets the store alone answer.
func (o *options) localOnly(ref name.Reference) bool {
	if o.localPrefix == "" || o.policy == PullAlways {
		return false
	}
	n := ref.Context().Name()
	return n == o.localPrefix || strings.HasPrefix(n, o.localPrefix+"/")
}

// storeMiss is a store entry that exists but cannot serve the platform.
type storeMiss struct{ msg string }

func (e *storeMiss) Error() string        { return e.msg }
func (e *storeMiss) Is(target error) bool { return target == store.ErrNotFound }

func missDetail(err error, s *store.Store) string {
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
	res := &Resolved{Ref: ref, PulledFrom: desc.Annotations[store.AnnotationSource]}
	if desc.MediaType.IsIndex() {
		idx, err := s.IndexAt(desc, ref.Name())
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
	img, err := s.ImageAt(desc, ref.Name())
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
	res := &Resolved{Ref: ref, FromRegistry: true, PulledFrom: ref.Context().Name()}
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
	// The store records what ref names, whole: an index stays an index
	// (with every platform's manifest and config), so that a later push
	// or mirror of ref from the store gives the registry back what it
	// had. Layers are recorded without their bytes; the store fetches
	// one from ref's repository when it is first read.
	s := r.o.store
	var content partial.Describable = res.Image
	if res.Index != nil {
		content = res.Index
	}
	if err := s.Record(ctx, ref, content, ref.Context()); errors.Is(err, store.ErrReadOnly) {
		// A command that only looks: the registry's image, unrecorded.
		return res, nil
	} else if err != nil {
		return nil, fmt.Errorf("recording %s in the local store: %w", ref.Name(), err)
	}
	stored, err := r.fromStore(ref)
	if err != nil {
		return nil, fmt.Errorf("reading %s back from the local store: %w", ref.Name(), err)
	}
	stored.FromRegistry = true
	recordHolders(s, ref, res.Image)
	return stored, nil
}
