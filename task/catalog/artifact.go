package catalog

import (
	"context"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// Repository is the repository under a registry prefix that holds the
// catalog artifacts: REGISTRY/catalog/<dataset>:<version>.
const Repository = "catalog"

// Media types of a catalog artifact: an OCI image manifest whose layers
// are the dataset's manifest.json and images.lock.json, as they are.
const (
	ConfigType   = types.MediaType("application/vnd.ssebench.catalog.config.v1+json")
	ManifestType = types.MediaType("application/vnd.ssebench.catalog.manifest.v1+json")
	LockType     = types.MediaType("application/vnd.ssebench.catalog.lock.v1+json")
)

// titleAnnotation names a layer's file, as ORAS does, so that `oras pull`
// writes the two files under their names.
const titleAnnotation = "org.opencontainers.image.title"

// Artifact returns the catalog artifact holding manifest (manifest.json's
// bytes) and lock (images.lock.json's; nil for none). The same bytes give
// the same digest.
func Artifact(manifest, lock []byte) (v1.Image, error) {
	adds := []mutate.Addendum{{
		Layer:       static.NewLayer(manifest, ManifestType),
		Annotations: map[string]string{titleAnnotation: task.ManifestFile},
		MediaType:   ManifestType,
	}}
	if lock != nil {
		adds = append(adds, mutate.Addendum{
			Layer:       static.NewLayer(lock, LockType),
			Annotations: map[string]string{titleAnnotation: task.LockFile},
			MediaType:   LockType,
		})
	}
	img, err := mutate.Append(empty.Image, adds...)
	if err != nil {
		return nil, err
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, ConfigType)
	return img, nil
}

// Fetch reads the catalog artifact ref (REGISTRY/catalog/<dataset>:
// <version>) and returns the manifest's bytes and the lock's (nil when the
// artifact has none). What is not a catalog artifact is refused.
func Fetch(ctx context.Context, ref string, opts ...remote.Option) (manifest, lock []byte, err error) {
	content, _, err := remote.Fetch(ctx, ref, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("fetching the catalog %s: %w", ref, err)
	}
	img, ok := content.(v1.Image)
	if !ok {
		return nil, nil, fmt.Errorf("%s is an image index, not a catalog artifact (pushed by `ssebench dataset publish`)", ref)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, nil, fmt.Errorf("reading the catalog %s: %w", ref, err)
	}
	if m.Config.MediaType != ConfigType {
		return nil, nil, fmt.Errorf("%s is not a catalog artifact (its config is %q, want %q): name the REGISTRY/catalog/<dataset>:<version> that `ssebench dataset publish` pushed", ref, m.Config.MediaType, ConfigType)
	}
	for _, d := range m.Layers {
		var dst *[]byte
		switch d.MediaType {
		case ManifestType:
			dst = &manifest
		case LockType:
			dst = &lock
		default:
			continue
		}
		if d.Size > maxDocument {
			return nil, nil, fmt.Errorf("the catalog %s: its %s is larger than %d MiB", ref, d.MediaType, maxDocument>>20)
		}
		l, err := img.LayerByDigest(d.Digest)
		if err != nil {
			return nil, nil, fmt.Errorf("reading the catalog %s: %w", ref, err)
		}
		// Compressed is the blob as stored: these layers are not
		// compressed, and ggcr checks the digest as it reads.
		rc, err := l.Compressed()
		if err != nil {
			return nil, nil, fmt.Errorf("reading the catalog %s: %w", ref, err)
		}
		b, err := io.ReadAll(io.LimitReader(rc, maxDocument+1))
		rc.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("reading the catalog %s: %w", ref, err)
		}
		*dst = b
	}
	if manifest == nil {
		return nil, nil, fmt.Errorf("the catalog %s has no %s layer", ref, ManifestType)
	}
	return manifest, lock, nil
}
