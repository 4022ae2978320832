package store

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

// TestRemove: a name goes, said as the store holds it; a name the store
// lacks, or no reference at all, is an error that says so.
func TestRemove(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	img, _ := random.Image(64, 1)
	ref, _ := name.ParseReference("localhost:5000/x/tool/a-1:1")
	if err := s.Write(ctx, ref, img); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Remove(ctx, "localhost:5000/x/tool/a-1:1"); err != nil || got != ref.Name() {
		t.Errorf("Remove = %q, %v; want %q", got, err, ref.Name())
	}
	if _, err := s.Descriptor(ref); err == nil {
		t.Error("the name is still in the store")
	}
	if _, err := s.Remove(ctx, "localhost:5000/x/tool/a-1:1"); err == nil || !strings.Contains(err.Error(), "is not a name in the image store") {
		t.Errorf("Remove of a name the store lacks = %v", err)
	}
	if _, err := s.Remove(ctx, "Not A Ref"); err == nil || !strings.Contains(err.Error(), "is not an image reference") {
		t.Errorf("Remove of no reference = %v", err)
	}
}
