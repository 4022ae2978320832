package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func (s *Store) blobDir() string { return filepath.Join(s.dir, "blobs", "sha256") }

// BlobPath returns where the blob h lives (or would live) in the store.
func (s *Store) BlobPath(h v1.Hash) string {
	return filepath.Join(s.dir, "blobs", h.Algorithm, h.Hex)
}

// HasBlob reports whether the blob pool holds h. It does not verify it.
func (s *Store) HasBlob(h v1.Hash) bool {
	if h.Algorithm != "sha256" {
		return false
	}
	fi, err := os.Stat(s.BlobPath(h))
	return err == nil && fi.Mode().IsRegular()
}

// Blob opens the blob h for reading. The reader verifies the content as it
// goes: a read that reaches the end of a blob that does not match h (or
// size, when size ≥ 0) fails with ErrCorruptBlob. The caller closes it.
// A blob recorded without its bytes is fetched under the store's context
// (see WithContext).
func (s *Store) Blob(h v1.Hash, size int64) (io.ReadCloser, error) {
	return s.openBlob(s.ctx, h, size, "")
}

// openBlob opens h, fetching it under ctx when it was recorded without its
// bytes (see remoteBlob); image names the image in errors.
func (s *Store) openBlob(ctx context.Context, h v1.Hash, size int64, image string) (io.ReadCloser, error) {
	if h.Algorithm != "sha256" {
		return nil, fmt.Errorf("blob %s: unsupported digest algorithm %q", h, h.Algorithm)
	}
	f, err := openRegular(s.BlobPath(h))
	if errors.Is(err, fs.ErrNotExist) {
		return s.remoteBlob(ctx, h, size, image)
	}
	if errors.Is(err, errNotRegular) {
		return nil, fmt.Errorf("blob %s in the image store is %w: remove it with `rm %s` and pull or build the image again", h, err, s.BlobPath(h))
	}
	if err != nil {
		return nil, err
	}
	return &verifyingReader{f: f, h: sha256.New(), want: h, size: size, store: s, image: image}, nil
}

// ReadBlob reads and verifies a small blob (manifest or config). A blob
// recorded without its bytes is fetched under the store's context (see
// WithContext).
func (s *Store) ReadBlob(h v1.Hash, size int64, image string) ([]byte, error) {
	return s.readBlob(s.ctx, h, size, image)
}

// readBlob is ReadBlob with the context of a fetch.
func (s *Store) readBlob(ctx context.Context, h v1.Hash, size int64, image string) ([]byte, error) {
	if size > MaxManifestSize {
		return nil, fmt.Errorf("blob %s of image %s is %d bytes, too large for a manifest or config", h, image, size)
	}
	rc, err := s.openBlob(ctx, h, size, image)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, MaxManifestSize+1))
}

// blobError is the one-line message for a missing or corrupt blob: which
// blob, which image, which store, and what to do about it.
type blobError struct {
	store     *Store
	digest    v1.Hash
	image     string
	missing   bool
	got       string
	gotSize   int64
	wantSize  int64
	sizeError bool
	// sources are the repositories a missing blob was recorded from;
	// fetchErr is why fetching it from them failed.
	sources  []string
	fetchErr error
}

func (e *blobError) Error() string {
	of := ""
	if e.image != "" {
		of = " of image " + e.image
	}
	if e.missing {
		if e.fetchErr != nil {
			return fmt.Sprintf("blob %s%s is not in the image store %s and could not be fetched%s: %v", e.digest, of, e.store.dir, sourcesLine(e.sources), e.fetchErr)
		}
		if len(e.sources) > 0 {
			return fmt.Sprintf("blob %s%s is not in the image store %s%s: run the command with --pull=missing so that it can be fetched", e.digest, of, e.store.dir, sourcesLine(e.sources))
		}
		return fmt.Sprintf("blob %s%s is missing from the image store %s: pull or build the image again", e.digest, of, e.store.dir)
	}
	what := fmt.Sprintf("has digest %s", e.got)
	if e.sizeError {
		what = fmt.Sprintf("has %d bytes, expected %d", e.gotSize, e.wantSize)
	}
	return fmt.Sprintf("blob %s%s in the image store is corrupt (it %s): remove it with `rm %s` and pull or build the image again", e.digest, of, what, e.store.BlobPath(e.digest))
}

// Is makes errors.Is(err, ErrCorruptBlob) match.
func (e *blobError) Is(target error) bool { return target == ErrCorruptBlob }

// verifyingReader hashes a blob as it is read and turns the end of a blob
// that does not match into an error instead of io.EOF.
type verifyingReader struct {
	f     *os.File
	h     hash.Hash
	n     int64
	want  v1.Hash
	size  int64
	store *Store
	image string
}

func (r *verifyingReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	r.h.Write(p[:n])
	r.n += int64(n)
	if r.size >= 0 && r.n > r.size {
		return n, &blobError{store: r.store, digest: r.want, image: r.image, sizeError: true, gotSize: r.n, wantSize: r.size}
	}
	if err == io.EOF {
		if r.size >= 0 && r.n != r.size {
			return n, &blobError{store: r.store, digest: r.want, image: r.image, sizeError: true, gotSize: r.n, wantSize: r.size}
		}
		if got := hex.EncodeToString(r.h.Sum(nil)); got != r.want.Hex {
			return n, &blobError{store: r.store, digest: r.want, image: r.image, got: "sha256:" + got}
		}
	}
	return n, err
}

func (r *verifyingReader) Close() error { return r.f.Close() }

// VerifiedDigest implements oci.VerifiedBlob: the read of the blob's end
// fails when it does not match its digest or size.
func (r *verifyingReader) VerifiedDigest() v1.Hash { return r.want }

// ReadAt reads the blob's file at off, unverified: a chunked upload sends a
// chunk again from it after a broken connection, while Read, which the
// upload reads to the end, verifies the whole blob, and the registry checks
// the digest of what it was sent.
func (r *verifyingReader) ReadAt(p []byte, off int64) (int, error) { return r.f.ReadAt(p, off) }
