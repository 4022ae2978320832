package remote

// The blobs a push must make present, each once: an image's or an index's
// layers and configs, found through the module's one manifest-graph walk
// (oci.WalkContent).

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/stream"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/42-b3yond-6ug/ssebench/oci"
)

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
