package remote

// Copy and Retag: one image or index to another name, digest unchanged,
// as crane's copy and tag do. The blobs travel with the pusher of push.go,
// so the manifest goes last and an interrupted copy leaves the target as
// it was.

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// Copied says what Copy did.
type Copied struct {
	// Source and Target are full references.
	Source, Target string
	// Digest is the manifest's digest, the same on both sides.
	Digest v1.Hash
	// FromStore is true when the source was read from the local store.
	FromStore bool
	// Push says what was uploaded, mounted and skipped.
	Push PushReport
}

// Copy copies the image or index src names to dst, keeping its digest:
// every platform of an index unless WithIndexPlatform picks one. The
// source is the store's entry when WithStore has it (unless the policy is
// PullAlways), else its registry's, read as it is sent (nothing is held in
// memory or written to disk). Each blob is skipped when dst's repository
// has it, else mounted from the source repository (or another one known to
// hold it) when both are in one registry, else uploaded. The manifest goes
// last, so dst names the new image only once all of it is there.
func Copy(ctx context.Context, src, dst string, opts ...Option) (*Copied, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	p := newPusher(o)
	defer p.close()
	s, err := o.parseReference(src)
	if err != nil {
		return nil, err
	}
	d, err := o.parseReference(dst)
	if err != nil {
		return nil, err
	}
	content, fromStore, err := o.source(ctx, s)
	if err != nil {
		return nil, err
	}
	origin := s.Context()
	p.addScopes(origin)
	if err := p.push(ctx, d, content, &origin); err != nil {
		return &Copied{Source: s.Name(), Target: d.Name(), FromStore: fromStore, Push: *p.report()}, fmt.Errorf("copying %s to %s: %w", s.Name(), d.Name(), err)
	}
	h, err := digestOfTaggable(content)
	if err != nil {
		return nil, err
	}
	return &Copied{Source: s.Name(), Target: d.Name(), Digest: h, FromStore: fromStore, Push: *p.report()}, nil
}

// Retag makes dst name the image or index src names in src's registry,
// without reading a layer: within one repository only the manifest is put
// again under the new tag; into another repository of the registry every
// blob is mounted (see Copy).
func Retag(ctx context.Context, src, dst string, opts ...Option) (*Copied, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	s, err := o.parseReference(src)
	if err != nil {
		return nil, err
	}
	d, err := o.parseReference(dst)
	if err != nil {
		return nil, err
	}
	if s.Context().RegistryStr() != d.Context().RegistryStr() {
		return nil, fmt.Errorf("cannot tag %s as %s: a tag stays in its registry; copy it there with `ssebench copy %s %s`", s.Name(), d.Name(), s.Name(), d.Name())
	}
	if s.Context().Name() != d.Context().Name() {
		return Copy(ctx, src, dst, opts...)
	}
	desc, err := remote.Get(s, o.remoteOptions(ctx)...)
	if err != nil {
		return nil, notFoundOr("reading", s, err)
	}
	if err := remote.Put(d, desc, o.remoteOptions(ctx)...); err != nil {
		return nil, fmt.Errorf("tagging %s as %s: %w", s.Name(), d.Name(), err)
	}
	return &Copied{Source: s.Name(), Target: d.Name(), Digest: desc.Digest}, nil
}

// source returns what ref names: the store's entry when the store has it
// and the policy allows, else the registry's (with WithIndexPlatform, one
// image out of an index), and whether it came from the store.
func (o *options) source(ctx context.Context, ref name.Reference) (remote.Taggable, bool, error) {
	if o.store != nil && o.policy != PullAlways {
		desc, err := o.store.Descriptor(ref)
		switch {
		case err == nil:
			c, err := o.storeContent(ref, desc)
			return c, true, err
		case !errors.Is(err, store.ErrNotFound):
			return nil, false, err
		case o.policy == PullNever:
			return nil, false, fmt.Errorf("%w; --pull=never forbids asking its registry", err)
		}
	}
	c, err := o.fetch(ctx, ref)
	return c, false, err
}

// storeContent opens the store's entry desc of ref as an image or index.
func (o *options) storeContent(ref name.Reference, desc v1.Descriptor) (remote.Taggable, error) {
	if !desc.MediaType.IsIndex() {
		return o.store.Image(ref)
	}
	idx, err := o.store.Index(ref)
	if err != nil || o.move.indexPlatform == nil {
		return idx, err
	}
	child, err := pickPlatform(idx, *o.move.indexPlatform, ref.Name())
	if err != nil {
		return nil, err
	}
	return idx.Image(child.Digest)
}

// IsNotFound reports whether err says an image does not exist in its
// registry.
func IsNotFound(err error) bool { return isNotFound(err) }

// NotFoundError is the error of reading an image or index that its
// registry does not have (the manifest or the repository is unknown), as
// Fetch, Copy and Retag return it: Ref names it, so that a command can
// say which of its images is missing. Match it with errors.As.
type NotFoundError struct {
	// Ref is the image's reference (name.Reference.Name).
	Ref string
	// Err is the registry's answer.
	Err error
	op  string
}

// Error is "fetching REF: " and the registry's answer.
func (e *NotFoundError) Error() string { return e.op + " " + e.Ref + ": " + e.Err.Error() }

// Unwrap returns the registry's answer.
func (e *NotFoundError) Unwrap() error { return e.Err }

// notFoundOr wraps err of doing op (a gerund) on ref: as a *NotFoundError
// when the registry does not have ref, else as "op ref: err".
func notFoundOr(op string, ref name.Reference, err error) error {
	if isNotFound(err) {
		return &NotFoundError{Ref: ref.Name(), Err: err, op: op}
	}
	return fmt.Errorf("%s %s: %w", op, ref.Name(), err)
}
