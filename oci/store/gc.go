package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
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
	for _, d := range im.Manifests {
		if err := s.mark(d, EntryName(d), keep); err != nil {
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
func (s *Store) mark(d v1.Descriptor, image string, keep map[string]bool) error {
	if d.Digest.Algorithm != "sha256" {
		return nil
	}
	keep[d.Digest.Hex] = true
	switch {
	case d.MediaType.IsIndex():
		b, err := s.ReadBlob(d.Digest, d.Size, image)
		if errors.Is(err, ErrCorruptBlob) && !s.HasBlob(d.Digest) {
			return nil
		}
		if err != nil {
			return err
		}
		im, err := v1.ParseIndexManifest(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("parsing index %s of %s: %w", d.Digest, image, err)
		}
		for _, c := range im.Manifests {
			if err := s.mark(c, image, keep); err != nil {
				return err
			}
		}
	case d.MediaType.IsImage():
		b, err := s.ReadBlob(d.Digest, d.Size, image)
		if errors.Is(err, ErrCorruptBlob) && !s.HasBlob(d.Digest) {
			return nil
		}
		if err != nil {
			return err
		}
		m, err := v1.ParseManifest(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("parsing manifest %s of %s: %w", d.Digest, image, err)
		}
		keep[m.Config.Digest.Hex] = true
		for _, l := range m.Layers {
			keep[l.Digest.Hex] = true
		}
		if m.Subject != nil {
			keep[m.Subject.Digest.Hex] = true
		}
	}
	return nil
}
