package store_test

import (
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// TestReports: ls tells an index from an image, gc's line counts what it
// freed, and verify says ok for a store without problems, FAIL per
// problem otherwise.
func TestReports(t *testing.T) {
	rows := store.Listing([]store.Entry{
		{Name: "r/a:1", Descriptor: v1.Descriptor{MediaType: types.OCIImageIndex}},
		{Name: "r/b:1", Descriptor: v1.Descriptor{MediaType: types.OCIManifestSchema1}},
	})
	if len(rows) != 2 || rows[0].Kind != "index" || rows[1].Kind != "image" {
		t.Errorf("Listing = %+v", rows)
	}
	if got := (store.GCResult{Blobs: 2, Bytes: 2048}).String(); got != "freed 2.0 KiB (2 blobs)" {
		t.Errorf("GCResult = %q", got)
	}
	var b strings.Builder
	if err := store.WriteProblems(&b, "/s", nil); err != nil || b.String() != "ok /s\n" {
		t.Errorf("no problems: %q, %v", b.String(), err)
	}
	b.Reset()
	if err := store.WriteProblems(&b, "/s", []store.Problem{{Image: "r/a:1", Digest: "sha256:ab", What: "missing"}}); err != nil || b.String() != "FAIL r/a:1: blob sha256:ab: missing\n" {
		t.Errorf("a problem: %q, %v", b.String(), err)
	}
}
