package store

import (
	"bytes"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Index returns the image index stored under ref.
func (s *Store) Index(ref name.Reference) (v1.ImageIndex, error) {
	desc, err := s.Descriptor(ref)
	if err != nil {
		return nil, err
	}
	if !desc.MediaType.IsIndex() {
		return nil, fmt.Errorf("%s in the image store is an image, not an image index", ref.Name())
	}
	return s.IndexAt(desc, ref.Name())
}

// IndexAt returns a store-backed image index for desc.
func (s *Store) IndexAt(desc v1.Descriptor, image string) (v1.ImageIndex, error) {
	raw, err := s.ReadBlob(desc.Digest, desc.Size, image)
	if err != nil {
		return nil, err
	}
	im, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing index %s of %s: %w", desc.Digest, image, err)
	}
	return &storeIndex{s: s, name: image, desc: desc, raw: raw, manifest: im}, nil
}

// storeIndex is an image index whose manifests live in the store.
type storeIndex struct {
	s        *Store
	name     string
	desc     v1.Descriptor
	raw      []byte
	manifest *v1.IndexManifest
}

var _ v1.ImageIndex = (*storeIndex)(nil)

// MediaType implements v1.ImageIndex.
func (x *storeIndex) MediaType() (types.MediaType, error) {
	if x.manifest.MediaType != "" {
		return x.manifest.MediaType, nil
	}
	return x.desc.MediaType, nil
}

// Digest implements v1.ImageIndex.
func (x *storeIndex) Digest() (v1.Hash, error) { return x.desc.Digest, nil }

// Size implements v1.ImageIndex.
func (x *storeIndex) Size() (int64, error) { return int64(len(x.raw)), nil }

// IndexManifest implements v1.ImageIndex.
func (x *storeIndex) IndexManifest() (*v1.IndexManifest, error) { return x.manifest.DeepCopy(), nil }

// RawManifest implements v1.ImageIndex.
func (x *storeIndex) RawManifest() ([]byte, error) { return x.raw, nil }

// Descriptor keeps the entry's descriptor. See partial.Descriptor.
func (x *storeIndex) Descriptor() (*v1.Descriptor, error) {
	d := x.desc
	d.Annotations = nil
	return &d, nil
}

func (x *storeIndex) child(h v1.Hash) (v1.Descriptor, error) {
	for _, d := range x.manifest.Manifests {
		if d.Digest == h {
			return d, nil
		}
	}
	return v1.Descriptor{}, fmt.Errorf("image index %s of %s has no manifest %s", x.desc.Digest, x.name, h)
}

// Image implements v1.ImageIndex.
func (x *storeIndex) Image(h v1.Hash) (v1.Image, error) {
	d, err := x.child(h)
	if err != nil {
		return nil, err
	}
	return x.s.ImageAt(d, x.name)
}

// ImageIndex implements v1.ImageIndex.
func (x *storeIndex) ImageIndex(h v1.Hash) (v1.ImageIndex, error) {
	d, err := x.child(h)
	if err != nil {
		return nil, err
	}
	return x.s.IndexAt(d, x.name)
}

// Content returns the image or image index ref names, whichever it is:
// what a push of ref sends.
func (s *Store) Content(ref name.Reference) (remote.Taggable, error) {
	desc, err := s.Descriptor(ref)
	if err != nil {
		return nil, err
	}
	if desc.MediaType.IsIndex() {
		return s.Index(ref)
	}
	return s.Image(ref)
}
