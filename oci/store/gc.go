package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/oci"
)

// GCResult says what GC removed.
type GCResult struct {
	// Blobs is the number of blobs removed.
	Blobs int
	// Bytes is their total size.
	Bytes int64
}

// GC removes every blob no index.json entry reaches, and temporary files
// abandoned by writers that died. It waits until no Write is in progress.
func (s *Store) GC(ctx context.Context) (GCResult, error) {
	if err := s.writable(); err != nil {
		return GCResult{}, err
	}
	var res GCResult
	unlockGC, err := s.lock(ctx, gcLock, true)
	if err != nil {
		return res, err
	}
	defer unlockGC()
	unlock, err := s.lock(ctx, indexLock, true)
	if err != nil {
		return res, err
	}
	defer unlock()
	im, err := s.readIndexFile()
	if err != nil {
		return res, err
	}
	keep := map[string]bool{}
	seen, budget := map[string]bool{}, oci.NewBudget(oci.MaxStoreNodes)
	for _, d := range im.Manifests {
		if err := s.mark(ctx, d, EntryName(d), keep, seen, budget); err != nil {
			return res, fmt.Errorf("collecting garbage: %w", err)
		}
	}
	ents, err := os.ReadDir(s.blobDir())
	if err != nil {
		return res, err
	}
	for _, e := range ents {
		if keep[e.Name()] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if err := os.Remove(filepath.Join(s.blobDir(), e.Name())); err != nil {
			return res, fmt.Errorf("collecting garbage: %w", err)
		}
		res.Blobs++
		res.Bytes += fi.Size()
	}
	s.sweepTemp()
	return res, nil
}

// mark adds d and everything it references to keep. Content that is
// absent is skipped (another tool may have written a partial index), but
// a manifest that cannot be parsed stops GC: we cannot know what it needs.
// seen is the walks' shared memory: a manifest marked through one entry is
// not read again through another, and budget caps them all together.
func (s *Store) mark(ctx context.Context, d v1.Descriptor, image string, keep, seen map[string]bool, budget *oci.Budget) error {
	read := func(d v1.Descriptor) ([]byte, bool, error) {
		b, err := s.ReadBlob(d.Digest, d.Size, image)
		if errors.Is(err, ErrCorruptBlob) && !s.HasBlob(d.Digest) {
			return nil, false, nil
		}
		return b, err == nil, err
	}
	children := func(d v1.Descriptor) ([]v1.Descriptor, error) {
		switch {
		case d.MediaType.IsIndex():
			b, ok, err := read(d)
			if !ok {
				return nil, err
			}
			im, err := v1.ParseIndexManifest(bytes.NewReader(b))
			if err != nil {
				return nil, fmt.Errorf("parsing index %s of %s: %w", d.Digest, image, err)
			}
			return im.Manifests, nil
		case d.MediaType.IsImage():
			b, ok, err := read(d)
			if !ok {
				return nil, err
			}
			m, err := v1.ParseManifest(bytes.NewReader(b))
			if err != nil {
				return nil, fmt.Errorf("parsing manifest %s of %s: %w", d.Digest, image, err)
			}
			// Leaves: a config, a layer or a subject is kept, not read.
			leaf := func(h v1.Hash) v1.Descriptor { return v1.Descriptor{MediaType: "application/octet-stream", Digest: h} }
			out := []v1.Descriptor{leaf(m.Config.Digest)}
			for _, l := range m.Layers {
				out = append(out, leaf(l.Digest))
			}
			if m.Subject != nil {
				out = append(out, leaf(m.Subject.Digest))
			}
			return out, nil
		}
		return nil, nil
	}
	visit := func(d v1.Descriptor) error {
		if d.Digest.Algorithm == "sha256" {
			keep[d.Digest.Hex] = true
		}
		return nil
	}
	err := oci.Walk(ctx, d, oci.DescriptorKey, func(d v1.Descriptor) ([]v1.Descriptor, error) {
		if d.Digest.Algorithm != "sha256" {
			return nil, nil
		}
		return children(d)
	}, visit, oci.WithSeen(seen), oci.WithBudget(budget))
	if errors.Is(err, oci.ErrGraphTooLarge) {
		return fmt.Errorf("%s: %w", image, err)
	}
	return err
}
