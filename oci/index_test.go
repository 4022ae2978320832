package oci

import (
	"bytes"
	"context"
	"io"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// verifiedReader serves a blob and claims to check it against digest.
type verifiedReader struct {
	io.Reader
	digest v1.Hash
}

func (r verifiedReader) Close() error            { return nil }
func (r verifiedReader) VerifiedDigest() v1.Hash { return r.digest }

// verifiedLayer's blob reader checks the digest itself (VerifiedBlob), as
// the store's do.
type verifiedLayer struct {
	v1.Layer
	blob []byte
}

func (l *verifiedLayer) Compressed() (io.ReadCloser, error) {
	d, _ := l.Layer.Digest()
	return verifiedReader{bytes.NewReader(l.blob), d}, nil
}

// A blob whose reader checks its digest itself is not hashed again: the
// check is the reader's (here a reader that lets other bytes through, so
// that the second hash would show), which saves a sha256 of every layer a
// cold assembly reads.
func TestIndexLayerLeavesDigestToVerifiedBlob(t *testing.T) {
	l := gzipLayer(t, file("a", "one"))
	other := gzipLayer(t, file("a", "two"))
	blob, err := other.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(blob)
	if _, err := IndexLayer(context.Background(), &verifiedLayer{Layer: l, blob: b}); err != nil {
		t.Errorf("IndexLayer of a blob its reader verifies = %v, want the reader's word taken", err)
	}
	// A reader that does not say it verifies is checked as before.
	if _, err := IndexLayer(context.Background(), &lyingLayer{Layer: l, blob: b}); err == nil {
		t.Errorf("IndexLayer of a blob that does not match its digest succeeded")
	}
}
