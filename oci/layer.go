package oci

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// SpooledLayer is a layer written by LayerWriter (or WriteLayer), stored
// compressed in a spool file. Its digest, diffID, size and media type were
// computed while it was written; Compressed reopens the file and
// Uncompressed decompresses it.
//
// The caller owns the spool file: it stays on disk until Remove is called
// (or its directory is deleted). The layer must not be read after Remove.
type SpooledLayer struct {
	path        string
	compression Compression
	digest      v1.Hash
	diffID      v1.Hash
	size        int64
}

var _ v1.Layer = (*SpooledLayer)(nil)

// Digest implements v1.Layer.
func (l *SpooledLayer) Digest() (v1.Hash, error) { return l.digest, nil }

// DiffID implements v1.Layer.
func (l *SpooledLayer) DiffID() (v1.Hash, error) { return l.diffID, nil }

// Size implements v1.Layer.
func (l *SpooledLayer) Size() (int64, error) { return l.size, nil }

// MediaType implements v1.Layer.
func (l *SpooledLayer) MediaType() (types.MediaType, error) {
	return l.compression.MediaType(), nil
}

// Compressed implements v1.Layer. Each call opens the spool file anew.
func (l *SpooledLayer) Compressed() (io.ReadCloser, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return nil, fmt.Errorf("opening layer %s: %w", l.digest, err)
	}
	return f, nil
}

// Uncompressed implements v1.Layer: it returns the tar stream.
func (l *SpooledLayer) Uncompressed() (io.ReadCloser, error) {
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	u, err := decompress(rc)
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("decompressing layer %s: %w", l.digest, err)
	}
	return u, nil
}

// Path returns the spool file's path.
func (l *SpooledLayer) Path() string { return l.path }

// Remove deletes the spool file. Removing a file that is already gone is
// not an error.
func (l *SpooledLayer) Remove() error {
	if err := os.Remove(l.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing layer spool file: %w", err)
	}
	return nil
}

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// decompress returns the tar stream inside rc, recognising gzip and zstd by
// their magic bytes and passing anything else through as an uncompressed
// tar. Closing the result closes rc.
//
// The magic bytes rather than the media type decide, because media types
// lie more often than bytes do (Docker media types, uncompressed layers
// labelled gzip by old tools).
func decompress(rc io.ReadCloser) (io.ReadCloser, error) {
	br := bufio.NewReaderSize(rc, 64<<10)
	magic, err := br.Peek(4)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	switch {
	case bytes.HasPrefix(magic, gzipMagic):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		return &readCloser{Reader: zr, close: func() error {
			zr.Close()
			return rc.Close()
		}}, nil
	case bytes.HasPrefix(magic, zstdMagic):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		return &readCloser{Reader: zr, close: func() error {
			zr.Close()
			return rc.Close()
		}}, nil
	}
	return &readCloser{Reader: br, close: rc.Close}, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r *readCloser) Close() error { return r.close() }
