package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

func mustRef(t testing.TB, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func openStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func randomImage(t testing.TB, size, layers int64) v1.Image {
	t.Helper()
	img, err := random.Image(size, layers)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func digestOf(t testing.TB, d interface{ Digest() (v1.Hash, error) }) v1.Hash {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// checkStore asserts what must hold after any failure: the store opens,
// index.json is valid JSON, every blob file has the content its name says,
// and every entry is complete and verifies.
func checkStore(t *testing.T, dir string) {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("OpenStore after failure: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatalf("index.json is not valid JSON: %q", b)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		f, err := os.Open(filepath.Join(dir, "blobs", "sha256", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != e.Name() {
			t.Errorf("blob file %s has content sha256:%s", e.Name(), got)
		}
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		ref := mustRef(t, e.Name)
		if e.Descriptor.MediaType.IsIndex() {
			idx, err := s.Index(ref)
			if err != nil {
				t.Fatalf("Index(%s): %v", e.Name, err)
			}
			if err := validate.Index(idx); err != nil {
				t.Errorf("validate.Index(%s): %v", e.Name, err)
			}
			continue
		}
		img, err := s.Image(ref)
		if err != nil {
			t.Fatalf("Image(%s): %v", e.Name, err)
		}
		if err := validate.Image(img); err != nil {
			t.Errorf("validate.Image(%s): %v", e.Name, err)
		}
	}
}

func entryNames(t *testing.T, s *Store) []string {
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

// Other tools read the store through the OCI layout: go-containerregistry's
// layout package stands in for skopeo and crane here.
func TestStoreIsAnOCILayout(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	img := randomImage(t, 256, 2)
	if err := s.Write(ctx, mustRef(t, "example.com/a/b:1"), img); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(s.Dir())
	if err != nil {
		t.Fatalf("layout.FromPath: %v", err)
	}
	ii, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := ii.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations[AnnotationRefName] != "example.com/a/b:1" {
		t.Fatalf("index.json manifests = %+v, want one entry named example.com/a/b:1", im.Manifests)
	}
	got, err := ii.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(got); err != nil {
		t.Errorf("validate.Image through layout: %v", err)
	}
}

func TestStoreRemovesTheTempOfDeadCommands(t *testing.T) {
	s := openStore(t)
	root := filepath.Join(s.Dir(), ".tmp")
	// A command that died: its directory and lock file, the lock free.
	dead := filepath.Join(root, "p999999-1")
	if err := os.MkdirAll(dead, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dead, ingestPrefix+"x"), []byte("partial"), 0o644)
	os.WriteFile(dead+".lock", nil, 0o644)
	// A live command's file, and a loose stale one.
	mine := filepath.Join(s.TempDir(), "layer-1.spool")
	os.WriteFile(mine, []byte("in use"), 0o644)
	loose := filepath.Join(root, ".index.json-123")
	os.WriteFile(loose, []byte("{"), 0o644)
	past := time.Now().Add(-2 * staleLoose)
	os.Chtimes(loose, past, past)

	if _, err := s.GC(context.Background()); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{dead: false, dead + ".lock": false, mine: true, loose: false} {
		_, err := os.Stat(p)
		if got := err == nil; got != want {
			t.Errorf("after GC, %s exists = %v, want %v", p, got, want)
		}
	}
	// Another store of this process (another command) keeps its own.
	other, err := Open(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if other.TempDir() == s.TempDir() {
		t.Error("two stores share one temporary directory")
	}
	if _, err := os.Stat(mine); err != nil {
		t.Error("opening the store again removed a live command's file")
	}
}

func TestOpenStore(t *testing.T) {
	t.Run("refuses a directory that is not a layout", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir); err == nil {
			t.Error("OpenStore of a non-empty non-layout directory succeeded")
		}
	})
	t.Run("reopens an existing store", func(t *testing.T) {
		s := openStore(t)
		ref := mustRef(t, "localhost:5000/x:1")
		if err := s.Write(context.Background(), ref, randomImage(t, 10, 1)); err != nil {
			t.Fatal(err)
		}
		again, err := Open(s.Dir())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := again.Image(ref); err != nil {
			t.Errorf("Image after reopening: %v", err)
		}
	})
	t.Run("refuses another layout version", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"9.9.9"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir); err == nil {
			t.Error("OpenStore of a layout version 9.9.9 succeeded")
		}
	})
}

func TestDefaultStoreDir(t *testing.T) {
	for _, tc := range []struct {
		name, store, xdg, home, want string
	}{
		{name: "SSEBENCH_STORE wins", store: "/srv/store", xdg: "/xdg", home: "/home/u", want: "/srv/store"},
		{name: "XDG_DATA_HOME", xdg: "/xdg", home: "/home/u", want: "/xdg/ssebench/store"},
		{name: "home", home: "/home/u", want: "/home/u/.local/share/ssebench/store"},
		{name: "relative XDG_DATA_HOME is ignored", xdg: "rel", home: "/home/u", want: "/home/u/.local/share/ssebench/store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(DirEnv, tc.store)
			t.Setenv("XDG_DATA_HOME", tc.xdg)
			t.Setenv("HOME", tc.home)
			got, err := DefaultDir()
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("DefaultDir() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestReadOnly: a read-only store is not created where there is none,
// reads what is there, and refuses every write.
func TestReadOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if _, err := Open(dir, ReadOnly()); !errors.Is(err, ErrNoStore) {
		t.Fatalf("Open(ReadOnly) of nothing = %v, want ErrNoStore", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open(ReadOnly) created %s", dir)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference("localhost:5000/x/ro:1")
	if err != nil {
		t.Fatal(err)
	}
	img, err := random.Image(100, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), ref, img); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ro, err := Open(dir, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Image(ref); err != nil {
		t.Errorf("Image() from a read-only store: %v", err)
	}
	other, _ := name.ParseReference("localhost:5000/x/ro:2")
	if err := ro.Write(context.Background(), other, img); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Write() to a read-only store = %v, want ErrReadOnly", err)
	}
	if err := ro.Tag(context.Background(), ref, other); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Tag() in a read-only store = %v, want ErrReadOnly", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, ".tmp")); len(ents) != 0 {
		t.Errorf("a read-only store claimed a temporary directory: %v", ents)
	}
}

// TestSweepOfARemovedLockKeepsALiveDirectory: a sweep that listed a lock
// file another sweep removed since (the window where a new command has made
// its lock file but not yet locked it) does not make the file again and
// take the live command's directory.
func TestSweepOfARemovedLockKeepsALiveDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	live, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	other, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	lock := live.temp.dir + ".lock"
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	other.sweepLock(lock)
	if _, err := os.Stat(live.temp.dir); err != nil {
		t.Fatalf("the live command's temporary directory: %v", err)
	}
	if _, err := os.Stat(lock); err == nil {
		t.Errorf("the sweep made the removed lock file %s again", lock)
	}
}
