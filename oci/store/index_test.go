package store

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStoreTagDeleteGC(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	a, b := mustRef(t, "localhost:5000/a:1"), mustRef(t, "localhost:5000/b:1")
	imgA, imgB := randomImage(t, 300, 2), randomImage(t, 300, 2)
	if err := s.Write(ctx, a, imgA); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, b, imgB); err != nil {
		t.Fatal(err)
	}
	alias := mustRef(t, "localhost:5000/a:latest")
	if err := s.Tag(ctx, a, alias); err != nil {
		t.Fatalf("Tag: %v", err)
	}
	if diff := cmp.Diff([]string{"localhost:5000/a:1", "localhost:5000/a:latest", "localhost:5000/b:1"}, entryNames(t, s)); diff != "" {
		t.Errorf("entries after Tag (-want +got):\n%s", diff)
	}
	if err := s.Delete(ctx, b); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := s.Delete(ctx, b); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete(%s) = %v, want ErrNotFound", b, err)
	}
	if _, err := s.Image(b); !errors.Is(err, ErrNotFound) {
		t.Errorf("Image(%s) after Delete = %v, want ErrNotFound", b, err)
	}
	layersB, err := imgB.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if !s.HasBlob(digestOf(t, layersB[0])) {
		t.Fatal("Delete removed a blob; blobs must stay until GC")
	}
	res, err := s.GC(ctx)
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	// b had a manifest, a config and two layers.
	if res.Blobs != 4 {
		t.Errorf("GC removed %d blobs, want 4 (manifest, config, 2 layers of b)", res.Blobs)
	}
	if s.HasBlob(digestOf(t, layersB[0])) || s.HasBlob(digestOf(t, imgB)) {
		t.Error("GC kept a blob of the deleted image")
	}
	checkStore(t, s.Dir())
	if got, err := s.Image(alias); err != nil || digestOf(t, got) != digestOf(t, imgA) {
		t.Errorf("Image(%s) after GC = %v, want image a", alias, err)
	}
}

func TestStoreNotFound(t *testing.T) {
	s := openStore(t)
	ref := mustRef(t, "localhost:5000/nope:1")
	if _, err := s.Image(ref); !errors.Is(err, ErrNotFound) {
		t.Errorf("Image(%s) = %v, want ErrNotFound", ref, err)
	}
	if _, err := s.Descriptor(ref); !errors.Is(err, ErrNotFound) {
		t.Errorf("Descriptor(%s) = %v, want ErrNotFound", ref, err)
	}
	if err := s.Tag(context.Background(), ref, mustRef(t, "localhost:5000/other:1")); !errors.Is(err, ErrNotFound) {
		t.Errorf("Tag(%s) = %v, want ErrNotFound", ref, err)
	}
}

func TestStoreDigestReference(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	img := randomImage(t, 100, 1)
	if err := s.Write(ctx, mustRef(t, "localhost:5000/x:1"), img); err != nil {
		t.Fatal(err)
	}
	byDigest := mustRef(t, "localhost:5000/x@"+digestOf(t, img).String())
	got, err := s.Image(byDigest)
	if err != nil {
		t.Fatalf("Image(%s): %v", byDigest, err)
	}
	if digestOf(t, got) != digestOf(t, img) {
		t.Errorf("Image(%s) has another digest", byDigest)
	}
}
