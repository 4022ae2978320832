package store

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/42-b3yond-6ug/ssebench/oci"
)

// Indexing a layer whose stored bytes were changed (a tar of the same
// length, so that only the digest tells) fails, now that oci leaves the
// digest check to the store's reader.
func TestIndexStoredLayerChecksDigest(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := []byte("hello, layer\n")
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "etc/motd", Mode: 0o644, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	tw.Write(body)
	tw.Close()
	blob := buf.Bytes()
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(blob, types.OCIUncompressedLayer))
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t)
	ref := mustRef(t, "localhost:5000/ssebench/case/x:1")
	if err := s.Write(ctx, ref, img); err != nil {
		t.Fatal(err)
	}
	stored, err := s.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := stored.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oci.IndexLayer(ctx, ls[0]); err != nil {
		t.Fatalf("indexing the intact layer: %v", err)
	}
	h := firstLayer(img)
	damaged := bytes.Replace(blob, []byte("hello"), []byte("jello"), 1)
	if err := os.WriteFile(s.BlobPath(h), damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := oci.IndexLayer(ctx, ls[0]); !errors.Is(err, ErrCorruptBlob) {
		t.Fatalf("indexing a layer whose stored bytes changed = %v, want ErrCorruptBlob", err)
	}
}
