// Package imagetest holds what the tests of the image packages (remote,
// archive, pipeline) share: a fresh store, random images, references.
package imagetest

import (
	"context"
	"path/filepath"
	"testing"

	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// Ref parses s or fails the test.
func Ref(t testing.TB, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Store opens a new store in a temporary directory.
func Store(t testing.TB, opts ...store.Option) *store.Store {
	t.Helper()
	s, err := store.Open(filepath.Join(t.TempDir(), "store"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// RandomImage is an image of layers random layers of size bytes each.
func RandomImage(t testing.TB, size, layers int64) v1.Image {
	t.Helper()
	img, err := random.Image(size, layers)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// Digest returns d's digest or fails the test.
func Digest(t testing.TB, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Names lists the store's entries.
func Names(t testing.TB, s *store.Store) []string {
	t.Helper()
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name)
	}
	return names
}

// Layer is a random OCI layer of size bytes.
func Layer(t testing.TB, size int64) v1.Layer {
	t.Helper()
	l, err := random.Layer(size, types.OCILayer)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// ImageOf stacks layers into an image.
func ImageOf(t testing.TB, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// Verified asserts what must hold after any command, failed or not: the
// store at dir opens and `store verify` finds nothing wrong.
func Verified(t testing.TB, dir string) {
	t.Helper()
	s, err := store.Open(dir)
	if err != nil {
		t.Fatalf("opening the store: %v", err)
	}
	probs, err := s.Verify(context.Background())
	if err != nil {
		t.Fatalf("verifying the store: %v", err)
	}
	for _, p := range probs {
		t.Errorf("store verify: %s", p)
	}
}

// Pulled pulls ref whole, validates it and returns its digest.
func Pulled(t testing.TB, ref string) v1.Hash {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ggremote.Get(r)
	if err != nil {
		t.Fatalf("ggremote.Get(%s): %v", ref, err)
	}
	if d.MediaType.IsIndex() {
		idx, err := d.ImageIndex()
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range im.Manifests {
			Pulled(t, r.Context().Digest(c.Digest.String()).String())
		}
		return d.Digest
	}
	img, err := d.Image()
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(img); err != nil {
		t.Fatalf("%s is not a complete image: %v", ref, err)
	}
	return d.Digest
}
