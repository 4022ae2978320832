package commands_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

// testPrefix is a registry prefix of the test registry no other test uses.
func testPrefix(t *testing.T) string {
	t.Helper()
	reg := testenv.RequireRegistry(t)
	b := make([]byte, 6)
	rand.Read(b)
	return reg + "/cli28-" + hex.EncodeToString(b)
}

func insecureRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// digestAt is the digest ref names in its registry, or "" when it names
// nothing.
func digestAt(t *testing.T, ref string) string {
	t.Helper()
	d, err := ggremote.Head(insecureRef(t, ref))
	if err != nil {
		return ""
	}
	return d.Digest.String()
}

func pushIndex(t *testing.T, ref string) v1.ImageIndex {
	t.Helper()
	idx, err := random.Index(2048, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := ggremote.WriteIndex(insecureRef(t, ref), idx); err != nil {
		t.Fatal(err)
	}
	return idx
}

func pushImage(t *testing.T, ref string) v1.Image {
	t.Helper()
	img, err := random.Image(2048, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := ggremote.Write(insecureRef(t, ref), img); err != nil {
		t.Fatal(err)
	}
	return img
}

type copyJSON struct {
	Target    string `json:"target"`
	Digest    string `json:"digest"`
	FromStore bool   `json:"from_store"`
	Push      struct {
		Uploaded      int64 `json:"uploaded_bytes"`
		MountedBlobs  int   `json:"mounted_blobs"`
		SkippedBlobs  int   `json:"skipped_blobs"`
		UploadedBlobs int   `json:"uploaded_blobs"`
	} `json:"push"`
}

// TestCopy: copy keeps an index's digest and every platform, mounts the
// blobs within one registry (no layer bytes move), skips what the target
// has, copies from the store, and an interrupted copy leaves the target
// as it was.
func TestCopy(t *testing.T) {
	c := newCLI(t)
	p := testPrefix(t)
	idx := pushIndex(t, p+"/src/multi:v1")
	want, _ := idx.Digest()

	out, _ := c.mustRun(t, "copy", "--json", p+"/src/multi:v1", p+"/dst/multi:v1")
	var got copyJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("copy --json: %v\n%s", err, out)
	}
	if got.Digest != want.String() || digestAt(t, p+"/dst/multi:v1") != want.String() {
		t.Errorf("copy gave digest %s (registry: %s), want %s", got.Digest, digestAt(t, p+"/dst/multi:v1"), want)
	}
	if got.Push.Uploaded != 0 || got.Push.MountedBlobs == 0 {
		t.Errorf("copy within one registry uploaded %d bytes and mounted %d blobs; want 0 and every blob mounted", got.Push.Uploaded, got.Push.MountedBlobs)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range im.Manifests {
		if digestAt(t, p+"/dst/multi@"+m.Digest.String()) == "" {
			t.Errorf("platform image %s was not copied", m.Digest)
		}
	}

	// Again: every blob is there already.
	out, _ = c.mustRun(t, "copy", "--json", p+"/src/multi:v1", p+"/dst/multi:v1")
	got = copyJSON{}
	json.Unmarshal([]byte(out), &got)
	if got.Push.UploadedBlobs != 0 || got.Push.MountedBlobs != 0 || got.Push.SkippedBlobs == 0 {
		t.Errorf("second copy: uploaded %d, mounted %d, skipped %d blobs; want only skips", got.Push.UploadedBlobs, got.Push.MountedBlobs, got.Push.SkippedBlobs)
	}

	// From the store.
	img := caseImage(t)
	c.storeImage(t, p+"/local/case:v1", img)
	d, _ := img.Digest()
	out, _ = c.mustRun(t, "copy", "--json", p+"/local/case:v1", p+"/dst/case:v1")
	got = copyJSON{}
	json.Unmarshal([]byte(out), &got)
	if !got.FromStore || digestAt(t, p+"/dst/case:v1") != d.String() {
		t.Errorf("copy from the store: from_store %v, registry has %q, want %s", got.FromStore, digestAt(t, p+"/dst/case:v1"), d)
	}

	// Interrupted: a blob of the source cannot be read, so the copy stops;
	// the target still names what it named.
	before := digestAt(t, p+"/dst/multi:v1")
	other := toolImage(t)
	c.storeImage(t, p+"/local/broken:v1", other)
	ls, _ := other.Layers()
	ld, _ := ls[len(ls)-1].Digest()
	if err := os.Remove(filepath.Join(c.store, "blobs", "sha256", ld.Hex)); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.run(t, "copy", p+"/local/broken:v1", p+"/dst/multi:v1")
	oneLine(t, err)
	if after := digestAt(t, p+"/dst/multi:v1"); after != before {
		t.Errorf("an interrupted copy moved the target from %s to %s", before, after)
	}

	// A source that does not exist, for copy and for save: one line
	// naming it, not the registry's MANIFEST_UNKNOWN.
	_, _, err = c.run(t, "copy", p+"/src/nothing:v1", p+"/dst/nothing:v1")
	wantMissing(t, err, p+"/src/nothing:v1", "in the local store or its registry")
	archive := filepath.Join(c.root, "out.tar")
	_, _, err = c.run(t, "save", "-o", archive, p+"/src/multi:v1", p+"/src/nothing:v1")
	wantMissing(t, err, p+"/src/nothing:v1", "in the local store or its registry")
	if _, serr := os.Stat(archive); !os.IsNotExist(serr) {
		t.Errorf("a failed save left %s (%v)", archive, serr)
	}
}

// TestTag: tag adds a name to an image of the registry (no layer pulled)
// or of the store, and refuses one that does not exist.
func TestTag(t *testing.T) {
	c := newCLI(t)
	p := testPrefix(t)
	img := pushImage(t, p+"/app:v1")
	d, _ := img.Digest()

	out, _ := c.mustRun(t, "tag", p+"/app:v1", "v2")
	if digestAt(t, p+"/app:v2") != d.String() || !strings.Contains(out, p+"/app:v2@"+d.String()) {
		t.Errorf("tag in the registry: %s names %q, printed %q; want %s", p+"/app:v2", digestAt(t, p+"/app:v2"), out, d)
	}
	c.mustRun(t, "tag", p+"/app:v1", p+"/other:v1")
	if digestAt(t, p+"/other:v1") != d.String() {
		t.Errorf("tag into another repository: %q, want %s", digestAt(t, p+"/other:v1"), d)
	}
	if blobs, _ := os.ReadDir(filepath.Join(c.store, "blobs", "sha256")); len(blobs) > 0 {
		t.Errorf("tag pulled %d blobs into the store; want none", len(blobs))
	}

	local := caseImage(t)
	ld, _ := local.Digest()
	c.storeImage(t, p+"/local:v1", local)
	c.mustRun(t, "tag", p+"/local:v1", "stable")
	s := c.storedImage(t, p+"/local:stable")
	if sd, _ := s.Digest(); sd != ld {
		t.Errorf("tag in the store: %s, want %s", sd, ld)
	}
	if digestAt(t, p+"/local:stable") != "" {
		t.Error("tag of a store image wrote to the registry")
	}

	// An image that does not exist: one line naming it and what to do,
	// not the registry's MANIFEST_UNKNOWN.
	_, _, err := c.run(t, "tag", p+"/nothing:v1", "v2")
	wantMissing(t, err, p+"/nothing:v1", "in the local store or its registry")
	_, _, err = c.run(t, "tag", "--pull=always", p+"/nothing:v1", p+"/else:v2")
	wantMissing(t, err, p+"/nothing:v1", "in its registry")
}

// wantMissing checks that err is the one line of an image ref that does
// not exist where: it names the image and the commands that list names.
func wantMissing(t *testing.T, err error, ref, where string) {
	t.Helper()
	oneLine(t, err)
	if want := "image " + ref + " does not exist " + where + ": check the name (`ssebench store ls` lists the store's images, `ssebench names --task ID` a task's)"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}
