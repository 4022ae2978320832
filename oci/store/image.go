package store

import (
	"bytes"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Image returns the image stored under ref. Its manifest and config are
// read and verified now; each layer is verified as it is read.
func (s *Store) Image(ref name.Reference) (v1.Image, error) {
	desc, err := s.Descriptor(ref)
	if err != nil {
		return nil, err
	}
	if desc.MediaType.IsIndex() {
		return nil, fmt.Errorf("%s in the image store is an image index, not an image: open it with Index and pick a platform (as remote.Resolver does)", ref.Name())
	}
	return s.ImageAt(desc, ref.Name())
}

// ImageAt returns a store-backed image for the manifest desc; image is
// the name errors give it.
func (s *Store) ImageAt(desc v1.Descriptor, image string) (v1.Image, error) {
	raw, err := s.ReadBlob(desc.Digest, desc.Size, image)
	if err != nil {
		return nil, err
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing manifest %s of image %s: %w", desc.Digest, image, err)
	}
	cfg, err := s.ReadBlob(m.Config.Digest, m.Config.Size, image)
	if err != nil {
		return nil, err
	}
	core := &storeImage{s: s, name: image, desc: desc, raw: raw, manifest: m, config: cfg}
	if cf, err := v1.ParseConfigFile(bytes.NewReader(cfg)); err == nil && len(cf.RootFS.DiffIDs) == len(m.Layers) {
		core.diffIDs = cf.RootFS.DiffIDs
	}
	return partial.CompressedToImage(core)
}

// storeImage is an image whose blobs live in the store.
type storeImage struct {
	s        *Store
	name     string
	desc     v1.Descriptor
	raw      []byte
	manifest *v1.Manifest
	config   []byte
	diffIDs  []v1.Hash
}

var _ partial.CompressedImageCore = (*storeImage)(nil)

// RawConfigFile implements partial.CompressedImageCore.
func (i *storeImage) RawConfigFile() ([]byte, error) { return i.config, nil }

// MediaType implements partial.CompressedImageCore.
func (i *storeImage) MediaType() (types.MediaType, error) {
	if i.manifest.MediaType != "" {
		return i.manifest.MediaType, nil
	}
	return i.desc.MediaType, nil
}

// RawManifest implements partial.CompressedImageCore.
func (i *storeImage) RawManifest() ([]byte, error) { return i.raw, nil }

// Descriptor keeps the entry's descriptor (and its platform). See
// partial.Descriptor.
func (i *storeImage) Descriptor() (*v1.Descriptor, error) {
	d := i.desc
	d.Annotations = nil
	return &d, nil
}

// LayerByDigest implements partial.CompressedImageCore.
func (i *storeImage) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if h == i.manifest.Config.Digest {
		return &storeLayer{s: i.s, image: i.name, desc: i.manifest.Config}, nil
	}
	for n, l := range i.manifest.Layers {
		if l.Digest == h {
			sl := &storeLayer{s: i.s, image: i.name, desc: l}
			if i.diffIDs != nil {
				sl.diffID = &i.diffIDs[n]
			}
			return sl, nil
		}
	}
	return nil, fmt.Errorf("image %s has no layer %s", i.name, h)
}

// storeLayer is a blob in the store, verified as it is read.
type storeLayer struct {
	s      *Store
	image  string
	desc   v1.Descriptor
	diffID *v1.Hash
}

var _ partial.CompressedLayer = (*storeLayer)(nil)

// Digest implements partial.CompressedLayer.
func (l *storeLayer) Digest() (v1.Hash, error) { return l.desc.Digest, nil }

// Size implements partial.CompressedLayer.
func (l *storeLayer) Size() (int64, error) { return l.desc.Size, nil }

// MediaType implements partial.CompressedLayer.
func (l *storeLayer) MediaType() (types.MediaType, error) { return l.desc.MediaType, nil }

// Compressed implements partial.CompressedLayer.
func (l *storeLayer) Compressed() (io.ReadCloser, error) {
	return l.s.openBlob(l.s.ctx, l.desc.Digest, l.desc.Size, l.image)
}

// Descriptor keeps the manifest's layer descriptor (annotations, URLs).
func (l *storeLayer) Descriptor() (*v1.Descriptor, error) {
	d := l.desc
	return &d, nil
}

// DiffID implements partial.WithDiffID, from the config, so that asking
// for it does not decompress the layer.
func (l *storeLayer) DiffID() (v1.Hash, error) {
	if l.diffID != nil {
		return *l.diffID, nil
	}
	ext, err := partial.CompressedToLayer(&compressedOnly{l})
	if err != nil {
		return v1.Hash{}, err
	}
	return ext.DiffID()
}

// compressedOnly hides DiffID so partial computes it from the content.
type compressedOnly struct{ partial.CompressedLayer }
