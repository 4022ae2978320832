package remote

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/imagetest"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

func compressedBytes(t *testing.T, l v1.Layer) []byte {
	t.Helper()
	rc, err := l.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestIntegrationDockerRegistry pushes to and pulls from the real
// distribution registry that Debian ships, on a loopback port over plain
// HTTP, as `--registry localhost:5000/ssebench` would.
func TestIntegrationDockerRegistry(t *testing.T) {
	host := testenv.StartRegistry(t)
	ctx := context.Background()
	keys := WithKeychain(authn.NewMultiKeychain())
	img := imagetest.RandomImage(t, 1<<20, 3)
	ref := host + "/ssebench/tool/gjson-196-bf4efcb:1.0.0"
	if _, err := Push(ctx, ref, img, keys); err != nil {
		t.Fatalf("Push: %v", err)
	}

	s := imagetest.Store(t)
	res, err := newResolver(t, WithStore(s)).Resolve(ctx, ref)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	got := res.Image
	for _, tc := range []struct {
		what      string
		want, got func(v1.Image) ([]byte, error)
	}{
		{what: "manifest", want: v1.Image.RawManifest, got: v1.Image.RawManifest},
		{what: "config", want: v1.Image.RawConfigFile, got: v1.Image.RawConfigFile},
	} {
		w, err := tc.want(img)
		if err != nil {
			t.Fatal(err)
		}
		g, err := tc.got(got)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w, g) {
			t.Errorf("pulled %s differs from the pushed one", tc.what)
		}
	}

	wantLayers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	gotLayers, err := got.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(gotLayers) != len(wantLayers) {
		t.Fatalf("pulled %d layers, want %d", len(gotLayers), len(wantLayers))
	}
	for i := range wantLayers {
		h := imagetest.Digest(t, wantLayers[i])
		if s.HasBlob(h) {
			t.Errorf("layer %d is in the store before anything read it", i)
		}
		if !bytes.Equal(compressedBytes(t, wantLayers[i]), compressedBytes(t, gotLayers[i])) {
			t.Errorf("layer %d: pulled bytes differ from the pushed ones", i)
		}
		if !s.HasBlob(h) {
			t.Errorf("layer %d is not in the store after it was read", i)
		}
	}

	stored, err := newResolver(t, WithStore(s), WithPullPolicy(PullNever)).Image(ctx, ref)
	if err != nil {
		t.Fatalf("the store has no complete entry after every layer was read: %v", err)
	}
	if err := validate.Image(stored); err != nil {
		t.Errorf("validate.Image of the stored copy: %v", err)
	}
	imagetest.Verified(t, s.Dir())

	// An index round-trips too, and Pull picks the platform.
	idx, imgs := platformIndex(t)
	idxRef := host + "/ssebench/runtime:1.0.0"
	if _, err := Push(ctx, idxRef, idx, keys); err != nil {
		t.Fatalf("Push index: %v", err)
	}
	pulled, err := pull(ctx, idxRef, WithStore(imagetest.Store(t)), keys, WithPlatform(&v1.Platform{OS: "linux", Architecture: "arm64"}))
	if err != nil {
		t.Fatalf("Pull index: %v", err)
	}
	if imagetest.Digest(t, pulled.Image) != imagetest.Digest(t, imgs["arm64"]) {
		t.Error("Pull of the index did not give the arm64 image")
	}
}
