package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// A large blob has its disk writes started as it is written, not all at
// the sync of its commit, and arrives whole.
func TestIngestStartsWriteback(t *testing.T) {
	s := openStore(t)
	b := bytes.Repeat([]byte("layer bytes "), (3*writebackChunk)/12)
	sum := sha256.Sum256(b)
	h := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
	before := writebacks.Load()
	if _, _, err := s.PutBlob(context.Background(), bytes.NewReader(b), h, int64(len(b))); err != nil {
		t.Fatal(err)
	}
	if got := writebacks.Load() - before; got < 2 {
		t.Errorf("a blob of %d bytes started %d writebacks, want one every %d bytes", len(b), got, writebackChunk)
	}
	rc, err := s.openBlob(context.Background(), h, int64(len(b)), "")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, err := io.ReadAll(rc); err != nil || !bytes.Equal(got, b) {
		t.Errorf("reading the blob back: %v (same bytes: %v)", err, bytes.Equal(got, b))
	}
}
