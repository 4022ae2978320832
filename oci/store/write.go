package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/stream"
	"golang.org/x/sync/errgroup"

	"github.com/42-b3yond-6ug/ssebench/oci"
)

// Write stores img under ref, replacing any entry ref had. It writes each
// blob the pool lacks (layers first, streamed, then config and manifest)
// and only then points index.json at the manifest.
func (s *Store) Write(ctx context.Context, ref name.Reference, img v1.Image) error {
	if err := s.writable(); err != nil {
		return err
	}
	unlock, err := s.lock(ctx, gcLock, false)
	if err != nil {
		return err
	}
	defer unlock()
	desc, err := s.writeImageBlobs(ctx, img)
	if err != nil {
		return fmt.Errorf("writing %s to the image store: %w", ref.Name(), err)
	}
	return s.setEntry(ctx, ref, desc, "")
}

// Record stores what a registry repository from holds under ref (an image
// or an index), as Write and WriteIndex do, and notes in the entry that it
// was pulled from there (AnnotationSource). Layers the store lacks are
// recorded without their bytes when it can fetch them later.
func (s *Store) Record(ctx context.Context, ref name.Reference, content partial.Describable, from name.Repository) error {
	if err := s.writable(); err != nil {
		return err
	}
	unlock, err := s.lock(ctx, gcLock, false)
	if err != nil {
		return err
	}
	defer unlock()
	var desc v1.Descriptor
	switch c := content.(type) {
	case v1.ImageIndex:
		desc, err = s.writeIndexBlobs(ctx, c)
	case v1.Image:
		desc, err = s.writeImageBlobs(ctx, c)
	default:
		err = fmt.Errorf("%T is neither an image nor an image index", content)
	}
	if err != nil {
		return fmt.Errorf("recording %s in the image store: %w", ref.Name(), err)
	}
	return s.setEntry(ctx, ref, desc, from.Name())
}

// WriteIndex stores idx, every child manifest and all their blobs under ref,
// replacing any entry ref had.
func (s *Store) WriteIndex(ctx context.Context, ref name.Reference, idx v1.ImageIndex) error {
	if err := s.writable(); err != nil {
		return err
	}
	unlock, err := s.lock(ctx, gcLock, false)
	if err != nil {
		return err
	}
	defer unlock()
	desc, err := s.writeIndexBlobs(ctx, idx)
	if err != nil {
		return fmt.Errorf("writing %s to the image store: %w", ref.Name(), err)
	}
	return s.setEntry(ctx, ref, desc, "")
}

func (s *Store) writeImageBlobs(ctx context.Context, img v1.Image) (v1.Descriptor, error) {
	layers, err := img.Layers()
	if err != nil {
		return v1.Descriptor{}, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(blobJobs)
	seen := map[v1.Hash]bool{}
	for _, l := range layers {
		if d, err := l.Digest(); err == nil {
			if seen[d] {
				continue
			}
			seen[d] = true
		}
		g.Go(func() error { return s.writeLayer(gctx, l) })
	}
	if err := g.Wait(); err != nil {
		return v1.Descriptor{}, err
	}
	// The config and manifest come after the layers: a stream.Layer only
	// knows its digest once read, and the manifest names it.
	cfg, err := img.RawConfigFile()
	if err != nil {
		return v1.Descriptor{}, err
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return v1.Descriptor{}, err
	}
	if err := s.putBytes(ctx, cfg, cfgName); err != nil {
		return v1.Descriptor{}, err
	}
	return s.putManifest(ctx, img)
}

// writeIndexBlobs writes idx and what it reaches, each image and index
// once however many indexes list it (see oci.WalkContentChildrenFirst).
func (s *Store) writeIndexBlobs(ctx context.Context, idx v1.ImageIndex) (v1.Descriptor, error) {
	var root v1.Descriptor
	err := oci.WalkContentChildrenFirst(ctx, idx, func(c oci.Content, listed *v1.Descriptor) error {
		var desc v1.Descriptor
		var err error
		switch c := c.(type) {
		case v1.ImageIndex:
			desc, err = s.putManifest(ctx, c)
		case v1.Image:
			desc, err = s.writeImageBlobs(ctx, c)
		}
		if err != nil {
			return err
		}
		if listed == nil {
			root = desc
		} else if desc.Digest != listed.Digest {
			return fmt.Errorf("index child %s has digest %s when read", listed.Digest, desc.Digest)
		}
		return nil
	})
	return root, err
}

type manifestBlob interface {
	partial.Describable
	RawManifest() ([]byte, error)
}

func (s *Store) putManifest(ctx context.Context, m manifestBlob) (v1.Descriptor, error) {
	raw, err := m.RawManifest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	desc, err := partial.Descriptor(m)
	if err != nil {
		return v1.Descriptor{}, err
	}
	if err := s.putBytes(ctx, raw, desc.Digest); err != nil {
		return v1.Descriptor{}, err
	}
	return *desc, nil
}

func (s *Store) writeLayer(ctx context.Context, l v1.Layer) error {
	want, err := l.Digest()
	switch {
	case errors.Is(err, stream.ErrNotComputed):
		want = v1.Hash{}
	case err != nil:
		return err
	case s.HasBlob(want):
		return nil
	}
	size := int64(-1)
	if want.Hex != "" {
		if size, err = l.Size(); err != nil {
			return err
		}
		if done, err := s.adoptSpool(ctx, l, want, size); done || err != nil {
			return err
		}
		// A layer a registry holds is recorded without its bytes:
		// they come when something reads it (see remoteBlob).
		if recordedRemote(s, l, want) {
			return nil
		}
	}
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	if _, _, err := s.PutBlob(ctx, rc, want, size); err != nil {
		return fmt.Errorf("writing layer %s: %w", want, err)
	}
	return nil
}
