package remote

// Fetch reads an image or an index from its registry without the store,
// for Mirror and for package archive's Save; PickPlatform picks one image
// out of an index.

import (
	"bytes"
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Fetch returns the image or index ref names in its registry (with
// WithIndexPlatform, an index's image for that platform), without the
// store, and the descriptor of its manifest.
func Fetch(ctx context.Context, ref string, opts ...Option) (remote.Taggable, v1.Descriptor, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	r, err := o.parseReference(ref)
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	content, err := o.fetch(ctx, r)
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	raw, err := content.RawManifest()
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	mt, err := mediaTypeOf(content, raw)
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	h, _, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	desc := v1.Descriptor{MediaType: mt, Digest: h, Size: int64(len(raw))}
	if o.move.indexPlatform != nil && mt.IsImage() {
		p := *o.move.indexPlatform
		desc.Platform = &p
	}
	return content, desc, nil
}

// fetch returns the image or index ref names in its registry; with
// WithIndexPlatform, an index's image for that platform.
func (o *options) fetch(ctx context.Context, ref name.Reference) (remote.Taggable, error) {
	d, err := remote.Get(ref, o.remoteOptions(ctx)...)
	if err != nil {
		return nil, notFoundOr("fetching", ref, err)
	}
	switch {
	case d.MediaType.IsIndex():
		idx, err := d.ImageIndex()
		if err != nil {
			return nil, fmt.Errorf("fetching %s: %w", ref.Name(), err)
		}
		if o.move.indexPlatform == nil {
			return idx, nil
		}
		child, err := pickPlatform(idx, *o.move.indexPlatform, ref.Name())
		if err != nil {
			return nil, err
		}
		return idx.Image(child.Digest)
	case d.MediaType.IsImage():
		return d.Image()
	default:
		return nil, fmt.Errorf("%s has media type %q, which is neither an image nor an image index", ref.Name(), d.MediaType)
	}
}

// PickPlatform returns the child of idx for platform p, or an error that
// names what (the index's reference) and lists the platforms idx has.
func PickPlatform(idx v1.ImageIndex, p v1.Platform, what string) (v1.Descriptor, error) {
	return pickPlatform(idx, p, what)
}
