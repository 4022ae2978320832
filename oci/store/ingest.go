package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/oci"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ingest is a blob being written: a temporary file in the store and a
// running hash. commit verifies and renames it into the pool; abort removes
// it. Exactly one of them must be called.
type ingest struct {
	s *Store
	f *os.File
	h hash.Hash
	n int64
	// flushed is how far the disk writes have been started (see
	// writebackChunk).
	flushed int64
}

// writebackChunk is how much an ingest writes before it asks the kernel to
// start writing it to disk. commit syncs the blob, and a sync of a whole
// 200 MB layer stalled the reader that fetched it for 0.3-0.7 s (its
// index waited for the disk); started as the bytes come, the writes
// overlap the reading and the sync finds little left to do.
const writebackChunk = 8 << 20

// writebacks counts startWriteback's calls, for tests.
var writebacks atomic.Int64

func (s *Store) newIngest() (*ingest, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(s.TempDir(), ingestPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("creating a temporary blob: %w", err)
	}
	return &ingest{s: s, f: f, h: sha256.New()}, nil
}

func (w *ingest) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	if w.n-w.flushed >= writebackChunk {
		startWriteback(w.f, w.flushed, w.n-w.flushed)
		w.flushed = w.n
	}
	return n, err
}

func (w *ingest) abort() {
	w.f.Close()
	os.Remove(w.f.Name())
}

// commit checks the content against want (when want.Hex is set) and size
// (when ≥ 0), then syncs and renames it into the pool. It returns the
// digest and size written.
func (w *ingest) commit(want v1.Hash, size int64) (v1.Hash, int64, error) {
	got := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(w.h.Sum(nil))}
	if size >= 0 && w.n != size {
		w.abort()
		return v1.Hash{}, 0, fmt.Errorf("writing blob %s: expected %d bytes, but got %d: %w", want, size, w.n, ErrCorruptBlob)
	}
	if want.Hex != "" && got != want {
		w.abort()
		return v1.Hash{}, 0, fmt.Errorf("writing blob %s: content has digest %s: %w", want, got, ErrCorruptBlob)
	}
	if err := w.s.installBlob(w.f, got); err != nil {
		w.abort()
		return v1.Hash{}, 0, fmt.Errorf("writing blob %s: %w", got, err)
	}
	// The blob is synced and in place: closing cannot lose it.
	w.f.Close()
	return got, w.n, nil
}

// PutBlob streams r into the pool, verified. want may be zero when the
// digest is not known in advance (a stream.Layer); size may be -1.
func (s *Store) PutBlob(ctx context.Context, r io.Reader, want v1.Hash, size int64) (v1.Hash, int64, error) {
	if err := s.writable(); err != nil {
		return v1.Hash{}, 0, err
	}
	w, err := s.newIngest()
	if err != nil {
		return v1.Hash{}, 0, err
	}
	buf := make([]byte, 1<<20)
	if _, err := io.CopyBuffer(w, oci.ContextReader(ctx, r), buf); err != nil {
		w.abort()
		return v1.Hash{}, 0, err
	}
	return w.commit(want, size)
}

func (s *Store) putBytes(ctx context.Context, b []byte, want v1.Hash) error {
	if s.HasBlob(want) {
		return nil
	}
	_, _, err := s.PutBlob(ctx, bytes.NewReader(b), want, int64(len(b)))
	return err
}

// AdoptBlob moves the file at path (which must be in TempDir, so the rename
// is atomic) into the blob pool as h, after verifying it against h and size
// (when ≥ 0). On success the file is gone from path; on failure it is left
// for the caller to remove.
func (s *Store) AdoptBlob(ctx context.Context, path string, h v1.Hash, size int64) error {
	if err := s.writable(); err != nil {
		return err
	}
	if s.HasBlob(h) {
		return os.Remove(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("adopting blob %s: %w", h, err)
	}
	defer f.Close()
	d := sha256.New()
	n, err := io.Copy(d, oci.ContextReader(ctx, f))
	if err != nil {
		return fmt.Errorf("adopting blob %s: %w", h, err)
	}
	if got := hex.EncodeToString(d.Sum(nil)); got != h.Hex || h.Algorithm != "sha256" || (size >= 0 && n != size) {
		return fmt.Errorf("adopting blob %s from %s: content has digest sha256:%s and %d bytes", h, path, got, n)
	}
	if err := s.installBlob(f, h); err != nil {
		return fmt.Errorf("adopting blob %s: %w", h, err)
	}
	return nil
}

// adoptSpool moves a layer that was spooled to a file in the store's
// temporary directory (as the assembler's layers are) into the pool by a
// hard link and a rename: the bytes are neither copied nor read again. It
// reports false when the layer is not such a file.
func (s *Store) adoptSpool(ctx context.Context, l v1.Layer, h v1.Hash, size int64) (bool, error) {
	sp, ok := l.(interface{ Path() string })
	if !ok {
		return false, nil
	}
	p := sp.Path()
	if filepath.Dir(p) != s.TempDir() {
		return false, nil
	}
	// A name of this call's own: two assemblies of one task adopt the
	// same digest at once.
	link := filepath.Join(s.TempDir(), fmt.Sprintf("adopt-%s-%d-%d", h.Hex[:16], os.Getpid(), adoptSeq.Add(1)))
	if err := os.Link(p, link); err != nil {
		return false, nil // another filesystem or no links: copy instead
	}
	// The digest was computed from these very bytes as they were written,
	// in this process, and every read of the store verifies them again:
	// hashing them here too would only read them a second time.
	if err := s.renameBlob(link, h); err != nil {
		os.Remove(link)
		return true, err
	}
	return true, nil
}

// renameBlob moves a complete file of TempDir into the pool as h.
func (s *Store) renameBlob(path string, h v1.Hash) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("adopting blob %s: %w", h, err)
	}
	defer f.Close()
	if err := s.installBlob(f, h); err != nil {
		return fmt.Errorf("adopting blob %s: %w", h, err)
	}
	return nil
}

// installBlob is the one way a blob enters the pool: f, a complete file of
// TempDir whose content the caller has checked to be h, is synced, made
// readable by all and renamed to BlobPath(h), and the pool's directory is
// synced. Synced before the rename: after a crash a blob path holds either
// nothing or the whole blob, never a file whose data never reached the
// disk. The caller still closes f; on failure the file is left at its
// temporary path for the caller to remove.
func (s *Store) installBlob(f *os.File, h v1.Hash) error {
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), s.BlobPath(h)); err != nil {
		return err
	}
	return safefile.SyncDir(s.blobDir())
}

// adoptSeq numbers adoptSpool's links within this process.
var adoptSeq atomic.Int64
