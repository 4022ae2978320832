package runner

import (
	"context"
	"io"
	"testing"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

func TestStoreProvider(t *testing.T) {
	ctx := context.Background()
	store, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref := name.MustParseReference("localhost:5000/test/random:1")
	if err := store.Write(ctx, ref, img); err != nil {
		t.Fatal(err)
	}
	desc, err := store.Descriptor(ref)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := img.RawManifest()
	if err != nil {
		t.Fatal(err)
	}
	p := &storeProvider{s: store}
	got, err := content.ReadBlob(ctx, p, ociDescriptor(desc))
	if err != nil {
		t.Fatalf("ReadBlob(manifest): %v", err)
	}
	if string(got) != string(raw) {
		t.Errorf("ReadBlob(manifest) = %q, want %q", got, raw)
	}

	missing := ocispec.Descriptor{Digest: "sha256:" + "00000000000000000000000000000000000000000000000000000000000000ff", Size: 1}
	if _, err := p.ReaderAt(ctx, missing); !errdefs.IsNotFound(err) {
		t.Errorf("ReaderAt(missing) error = %v, want not found", err)
	}
	ra, err := p.ReaderAt(ctx, ociDescriptor(desc))
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	if ra.Size() != desc.Size {
		t.Errorf("Size() = %d, want %d", ra.Size(), desc.Size)
	}
	b, err := io.ReadAll(content.NewReader(ra))
	if err != nil || len(b) != int(desc.Size) {
		t.Errorf("reading the blob: %d bytes, %v; want %d bytes", len(b), err, desc.Size)
	}
}
