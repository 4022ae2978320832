package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/42-b3yond-6ug/ssebench/oci"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Problem is one thing Verify found wrong.
type Problem struct {
	// Image is the entry the problem is in ("" for a blob no entry needs).
	Image string `json:"image,omitempty"`
	// Digest is the blob.
	Digest string `json:"digest"`
	// What says what is wrong, e.g. "missing" or "has digest sha256:…".
	What string `json:"problem"`
}

func (p Problem) String() string {
	if p.Image == "" {
		return fmt.Sprintf("blob %s: %s", p.Digest, p.What)
	}
	return fmt.Sprintf("%s: blob %s: %s", p.Image, p.Digest, p.What)
}

// Usage is what the store holds, as `store du` reports it.
type Usage struct {
	// Blobs and Bytes count the blob pool.
	Blobs int   `json:"blobs"`
	Bytes int64 `json:"bytes"`
	// Images has one row per entry.
	Images []ImageUsage `json:"images"`
}

// ImageUsage is one entry's share of the store.
type ImageUsage struct {
	Name string `json:"name"`
	// Local is the size of the entry's blobs that are in the pool;
	// Remote the size of those recorded without their bytes (fetched
	// from their registry when read).
	Local  int64 `json:"local_bytes"`
	Remote int64 `json:"remote_bytes"`
	// Unique is the part of Local that no other entry shares: what
	// `store rm` and then `store gc` would free.
	Unique int64 `json:"unique_bytes"`
}

// Usage sums the pool and each entry's blobs.
func (s *Store) Usage() (*Usage, error) {
	u := &Usage{}
	ents, err := os.ReadDir(s.blobDir())
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			u.Blobs++
			u.Bytes += fi.Size()
		}
	}
	es, err := s.List()
	if err != nil {
		return nil, err
	}
	users := map[v1.Hash]int{}
	per := make([]map[v1.Hash]int64, len(es))
	budget := oci.NewBudget(oci.MaxStoreNodes)
	for i, e := range es {
		per[i] = map[v1.Hash]int64{}
		err := s.walk(s.ctx, e.Descriptor, e.Name, func(d v1.Descriptor) error {
			if _, ok := per[i][d.Digest]; !ok {
				per[i][d.Digest] = d.Size
				users[d.Digest]++
			}
			return nil
		}, oci.WithBudget(budget))
		if err != nil {
			return nil, err
		}
	}
	for i, e := range es {
		row := ImageUsage{Name: e.Name}
		for h, size := range per[i] {
			if !s.HasBlob(h) {
				row.Remote += size
				continue
			}
			row.Local += size
			if users[h] == 1 {
				row.Unique += size
			}
		}
		u.Images = append(u.Images, row)
	}
	return u, nil
}

// Verify checks every blob of the pool against its digest and every entry
// against the blobs it needs: a blob whose content does not match its name,
// a blob an entry needs that is neither in the pool nor recorded with a
// registry that holds it, a manifest that cannot be parsed. It reads every
// byte of the pool once. The problems come sorted; an error means Verify
// itself could not run.
func (s *Store) Verify(ctx context.Context) ([]Problem, error) {
	unlock, err := s.lock(ctx, gcLock, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var probs []Problem
	bad := map[v1.Hash]string{}
	ents, err := os.ReadDir(s.blobDir())
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h := v1.Hash{Algorithm: "sha256", Hex: e.Name()}
		if !e.Type().IsRegular() {
			// Never opened: a FIFO would block Verify, a symlink to
			// /dev/zero would hash for ever.
			bad[h] = "is " + kind(e.Type()) + ", not a regular file: remove it"
			continue
		}
		if got, err := hashFile(ctx, filepath.Join(s.blobDir(), e.Name())); err != nil {
			bad[h] = err.Error()
		} else if got != e.Name() {
			bad[h] = "has digest sha256:" + got
		}
	}
	named := map[v1.Hash]bool{}
	es, err := s.List()
	if err != nil {
		return nil, err
	}
	budget := oci.NewBudget(oci.MaxStoreNodes)
	for _, e := range es {
		image := e.Name // the entry a problem is in
		err := s.walk(ctx, e.Descriptor, image, func(d v1.Descriptor) error {
			switch {
			case bad[d.Digest] != "":
				probs = append(probs, Problem{Image: image, Digest: d.Digest.String(), What: bad[d.Digest]})
				named[d.Digest] = true
				return errSkip
			case s.HasBlob(d.Digest):
				if fi, err := os.Stat(s.BlobPath(d.Digest)); err == nil && d.Size >= 0 && fi.Size() != d.Size {
					probs = append(probs, Problem{Image: image, Digest: d.Digest.String(), What: fmt.Sprintf("has %d bytes, the manifest says %d", fi.Size(), d.Size)})
				}
			case d.MediaType.IsImage() || d.MediaType.IsIndex() || len(s.sources(d.Digest)) == 0:
				// Manifests and configs are always stored; a layer
				// may be missing only when a registry holds it.
				probs = append(probs, Problem{Image: image, Digest: d.Digest.String(), What: "missing"})
				return errSkip
			}
			return nil
		}, oci.WithBudget(budget))
		if err != nil && err != errSkip {
			probs = append(probs, Problem{Image: e.Name, Digest: e.Descriptor.Digest.String(), What: err.Error()})
		}
	}
	for h, what := range bad {
		if !named[h] {
			probs = append(probs, Problem{Digest: h.String(), What: what})
		}
	}
	sort.Slice(probs, func(i, j int) bool {
		if probs[i].Image != probs[j].Image {
			return probs[i].Image < probs[j].Image
		}
		return probs[i].Digest < probs[j].Digest
	})
	return probs, nil
}

// errSkip stops the walk of one entry after its first problem.
var errSkip = fmt.Errorf("skip")

func hashFile(ctx context.Context, p string) (string, error) {
	// The entry may have been swapped for a FIFO or a link since it
	// was listed.
	f, err := openRegular(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, oci.ContextReader(ctx, f)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
