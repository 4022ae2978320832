package runtimebin_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
)

// TestPublish: the runtime index goes to the store, and to its registry
// only when pushed; the registry's options are asked after the store has
// it; the digest is the index's.
func TestPublish(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/ssebench/runtime:1.0"
	s, err := store.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	idx, err := random.Index(64, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := idx.Digest()
	r, _ := name.ParseReference(ref, name.Insecure)

	d, err := runtimebin.Publish(ctx, s, ref, idx, nil)
	if err != nil || d != want {
		t.Fatalf("Publish = %s, %v; want %s", d, err, want)
	}
	if _, err := s.Descriptor(r); err != nil {
		t.Errorf("the store lacks %s: %v", ref, err)
	}
	if _, err := ggremote.Head(r); err == nil {
		t.Errorf("%s was pushed without push", ref)
	}

	refused := errors.New("no registry options")
	if _, err := runtimebin.Publish(ctx, s, ref, idx, func() ([]remote.Option, error) { return nil, refused }); !errors.Is(err, refused) {
		t.Errorf("Publish with failing registry options = %v, want %v", err, refused)
	}
	// A fresh store, to see it written before the push.
	s2, err := store.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	d, err = runtimebin.Publish(ctx, s2, ref, idx, func() ([]remote.Option, error) {
		if _, err := s2.Descriptor(r); err != nil {
			t.Errorf("the registry's options were asked before the store had the index: %v", err)
		}
		return []remote.Option{remote.WithInsecureRegistries(r.Context().RegistryStr())}, nil
	})
	if err != nil || d != want {
		t.Fatalf("Publish with push = %s, %v; want %s", d, err, want)
	}
	if got, err := ggremote.Head(r); err != nil || got.Digest != want {
		t.Errorf("the registry's %s = %v, %v; want %s", ref, got, err, want)
	}
	if _, err := runtimebin.Publish(ctx, s, "Bad Name", idx, nil); err == nil || !strings.Contains(err.Error(), `runtime image name "Bad Name"`) {
		t.Errorf("Publish of a bad name = %v", err)
	}
}
