package store

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/stream"
	"github.com/google/go-containerregistry/pkg/v1/types"
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

func TestStoreRoundTripImage(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	img := randomImage(t, 1024, 3)
	ref := mustRef(t, "localhost:5000/ssebench/tool/x:0.1.0-dev")
	if err := s.Write(ctx, ref, img); err != nil {
		t.Fatalf("Write: %v", err)
	}
	got, err := s.Image(ref)
	if err != nil {
		t.Fatalf("Image: %v", err)
	}
	if err := validate.Image(got); err != nil {
		t.Errorf("validate.Image: %v", err)
	}
	if want, got := digestOf(t, img), digestOf(t, got); got != want {
		t.Errorf("Image(%s).Digest() = %s, want %s", ref, got, want)
	}
	desc, err := s.Descriptor(ref)
	if err != nil {
		t.Fatal(err)
	}
	if got := desc.Annotations[AnnotationRefName]; got != "localhost:5000/ssebench/tool/x:0.1.0-dev" {
		t.Errorf("annotation %s = %q, want the full reference", AnnotationRefName, got)
	}
	checkStore(t, s.Dir())
}

func TestStoreRoundTripIndex(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	idx, err := random.Index(512, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	ref := mustRef(t, "localhost:5000/ssebench/runtime:1.0.0")
	if err := s.WriteIndex(ctx, ref, idx); err != nil {
		t.Fatalf("WriteIndex: %v", err)
	}
	got, err := s.Index(ref)
	if err != nil {
		t.Fatalf("Index: %v", err)
	}
	if err := validate.Index(got); err != nil {
		t.Errorf("validate.Index: %v", err)
	}
	if want, got := digestOf(t, idx), digestOf(t, got); got != want {
		t.Errorf("Index(%s).Digest() = %s, want %s", ref, got, want)
	}
	if _, err := s.Image(ref); err == nil {
		t.Errorf("Image(%s) of an index succeeded, want an error", ref)
	}
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

func TestStoreRewriteReplacesEntry(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	ref := mustRef(t, "localhost:5000/x:1")
	first, second := randomImage(t, 100, 1), randomImage(t, 100, 1)
	for _, img := range []v1.Image{first, second} {
		if err := s.Write(ctx, ref, img); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 {
		t.Fatalf("List() has %d entries after writing one ref twice, want 1: %+v", len(list), list)
	}
	if got, want := list[0].Descriptor.Digest, digestOf(t, second); got != want {
		t.Errorf("entry digest = %s, want the second image %s", got, want)
	}
}

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

func TestStoreCorruptBlobs(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		blob   func(img v1.Image) v1.Hash
		damage func(path string) error
	}{{
		name: "flipped byte in layer",
		blob: firstLayer,
		damage: func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[len(b)/2] ^= 0xff
			return os.WriteFile(p, b, 0o644)
		},
	}, {
		name:   "truncated layer",
		blob:   firstLayer,
		damage: func(p string) error { return os.Truncate(p, 10) },
	}, {
		name:   "missing layer",
		blob:   firstLayer,
		damage: os.Remove,
	}, {
		name: "layer with extra bytes",
		blob: firstLayer,
		damage: func(p string) error {
			f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.Write([]byte("junk"))
			return err
		},
	}, {
		name: "tampered config",
		blob: func(img v1.Image) v1.Hash {
			h, _ := img.ConfigName()
			return h
		},
		damage: func(p string) error { return os.WriteFile(p, []byte(`{"architecture":"evil"}`), 0o644) },
	}, {
		name: "tampered manifest",
		blob: func(img v1.Image) v1.Hash {
			h, _ := img.Digest()
			return h
		},
		damage: func(p string) error { return os.WriteFile(p, []byte(`{}`), 0o644) },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t)
			img := randomImage(t, 2048, 2)
			ref := mustRef(t, "localhost:5000/ssebench/tool/x:1")
			if err := s.Write(ctx, ref, img); err != nil {
				t.Fatal(err)
			}
			h := tc.blob(img)
			if err := tc.damage(s.BlobPath(h)); err != nil {
				t.Fatal(err)
			}
			err := readAll(s, ref)
			if !errors.Is(err, ErrCorruptBlob) {
				t.Fatalf("reading %s with a damaged blob = %v, want ErrCorruptBlob", ref, err)
			}
			msg := err.Error()
			for _, want := range []string{h.String(), ref.Name()} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not name %q", msg, want)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q spans several lines", msg)
			}
			if !strings.Contains(msg, "pull or build the image again") {
				t.Errorf("error %q does not say how to fix it", msg)
			}
		})
	}
}

func firstLayer(img v1.Image) v1.Hash {
	ls, _ := img.Layers()
	h, _ := ls[0].Digest()
	return h
}

// readAll reads every blob of the image ref, as a push or an import would.
func readAll(s *Store, ref name.Reference) error {
	img, err := s.Image(ref)
	if err != nil {
		return err
	}
	ls, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range ls {
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// fakeDiffID spares mutate from reading the test layers below to compute
// their diff IDs: they must be read only by the write under test.
var fakeDiffID = v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("00", 32)}

// failingLayer yields n bytes and then fails, like a connection reset in
// the middle of a download.
type failingLayer struct {
	n   int64
	err error
}

func (l *failingLayer) Digest() (v1.Hash, error) {
	return v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}, nil
}
func (l *failingLayer) Size() (int64, error)                { return 2 * l.n, nil }
func (l *failingLayer) DiffID() (v1.Hash, error)            { return fakeDiffID, nil }
func (l *failingLayer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }
func (l *failingLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(io.MultiReader(io.LimitReader(zeros{}, l.n), errReader{l.err})), nil
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func imageWith(t testing.TB, layers ...partial.CompressedLayer) v1.Image {
	t.Helper()
	var ls []v1.Layer
	for _, cl := range layers {
		l, err := partial.CompressedToLayer(cl)
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	good, err := random.Layer(1000, types.OCILayer)
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, append([]v1.Layer{good}, ls...)...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func TestStoreWriteFailingLayer(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	keep := randomImage(t, 500, 2)
	if err := s.Write(ctx, mustRef(t, "localhost:5000/keep:1"), keep); err != nil {
		t.Fatal(err)
	}
	reset := errors.New("connection reset by peer")
	bad := &failingLayer{n: 512 << 10, err: reset}
	ref := mustRef(t, "localhost:5000/broken:1")
	err := s.Write(ctx, ref, imageWith(t, bad))
	if !errors.Is(err, reset) {
		t.Fatalf("Write with a failing layer = %v, want the layer's error", err)
	}
	h, _ := bad.Digest()
	if s.HasBlob(h) {
		t.Error("the half-written layer is in the blob pool")
	}
	if _, err := s.Descriptor(ref); !errors.Is(err, ErrNotFound) {
		t.Errorf("Descriptor(%s) after a failed Write = %v, want ErrNotFound", ref, err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(s.TempDir(), ingestPrefix+"*")); len(leftovers) != 0 {
		t.Errorf("a failed Write left temporary files: %v", leftovers)
	}
	checkStore(t, s.Dir())
	if diff := cmp.Diff([]string{"localhost:5000/keep:1"}, entryNames(t, s)); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

func TestStoreWriteRejectsWrongDigest(t *testing.T) {
	s := openStore(t)
	// Claims a digest its content does not have.
	liar := &failingLayer{n: 4096, err: io.EOF}
	err := s.Write(context.Background(), mustRef(t, "localhost:5000/liar:1"), imageWith(t, &sizedLayer{liar}))
	if err == nil {
		t.Fatal("Write of a layer whose content does not match its digest succeeded")
	}
	h, _ := liar.Digest()
	if s.HasBlob(h) {
		t.Error("a blob with the wrong content was stored under the claimed digest")
	}
	checkStore(t, s.Dir())
}

// sizedLayer reports the true size of a failingLayer that ends cleanly.
type sizedLayer struct{ *failingLayer }

func (l *sizedLayer) Size() (int64, error) { return l.n, nil }

func TestStoreWriteCanceled(t *testing.T) {
	s := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	l := &cancelingLayer{after: 256 << 10, cancel: cancel}
	err := s.Write(ctx, mustRef(t, "localhost:5000/c:1"), imageWith(t, l))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Write canceled midway = %v, want context.Canceled", err)
	}
	checkStore(t, s.Dir())
	if got := entryNames(t, s); len(got) != 0 {
		t.Errorf("entries after a canceled Write = %v, want none", got)
	}
}

// cancelingLayer cancels the write's context after some bytes, as Ctrl-C
// would, and would go on forever otherwise.
type cancelingLayer struct {
	after  int64
	cancel func()
}

func (l *cancelingLayer) Digest() (v1.Hash, error) {
	return v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("cd", 32)}, nil
}
func (l *cancelingLayer) Size() (int64, error)                { return 1 << 40, nil }
func (l *cancelingLayer) DiffID() (v1.Hash, error)            { return fakeDiffID, nil }
func (l *cancelingLayer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }
func (l *cancelingLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(&cancelAfter{r: zeros{}, left: l.after, cancel: l.cancel}), nil
}

type cancelAfter struct {
	r      io.Reader
	left   int64
	cancel func()
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.cancel()
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

func TestStoreStreamLayer(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	var content bytes.Buffer
	tw := tar.NewWriter(&content)
	body := bytes.Repeat([]byte("stream me "), 10000)
	if err := tw.WriteHeader(&tar.Header{Name: "f", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw.Write(body)
	tw.Close()
	sl := stream.NewLayer(io.NopCloser(&content))
	img, err := mutate.AppendLayers(empty.Image, sl)
	if err != nil {
		t.Fatal(err)
	}
	ref := mustRef(t, "localhost:5000/stream:1")
	if err := s.Write(ctx, ref, img); err != nil {
		t.Fatalf("Write with a stream.Layer: %v", err)
	}
	got, err := s.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(got); err != nil {
		t.Errorf("validate.Image: %v", err)
	}
}

func TestStoreAdoptBlob(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	content := []byte("a spooled layer")
	sum := sha256.Sum256(content)
	h := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}

	wrong := filepath.Join(s.TempDir(), "spool-wrong")
	if err := os.WriteFile(wrong, []byte("something else"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.AdoptBlob(ctx, wrong, h, int64(len(content))); err == nil {
		t.Error("AdoptBlob of a file with other content succeeded")
	}
	if s.HasBlob(h) {
		t.Fatal("a wrong file was adopted")
	}

	spool := filepath.Join(s.TempDir(), "spool-right")
	if err := os.WriteFile(spool, content, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.AdoptBlob(ctx, spool, h, int64(len(content))); err != nil {
		t.Fatalf("AdoptBlob: %v", err)
	}
	rc, err := s.Blob(h, int64(len(content)))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil || !bytes.Equal(got, content) {
		t.Errorf("Blob(%s) = %q, %v; want %q", h, got, err, content)
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

func TestStoreConcurrentGoroutines(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	var want []string
	for i := range writers {
		ref := fmt.Sprintf("localhost:5000/g/img%d:1", i)
		want = append(want, ref)
		img := randomImage(t, 2000, 2)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each writer opens its own Store, as separate commands would.
			s, err := Open(dir)
			if err == nil {
				err = s.Write(context.Background(), mustRef(t, ref), img)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Write: %v", err)
		}
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, entryNames(t, s)); diff != "" {
		t.Errorf("entries after concurrent writes (-want +got):\n%s", diff)
	}
	checkStore(t, dir)
}

const helperEnv = "SSEBENCH_REGISTRY_TEST_HELPER"

// TestHelperProcess is not a test: other tests run the test binary again
// with helperEnv set, to get a second process writing to a store.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("helper process for other tests")
	}
	dir := os.Getenv(helperEnv + "_DIR")
	s, err := Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx := context.Background()
	switch mode {
	case "write-many":
		id := os.Getenv(helperEnv + "_ID")
		for i := range 5 {
			ref := mustRef(t, fmt.Sprintf("localhost:5000/p%s/img%d:1", id, i))
			if err := s.Write(ctx, ref, randomImage(t, 3000, 2)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
	case "write-slow":
		if err := s.Write(ctx, mustRef(t, "localhost:5000/done:1"), randomImage(t, 1000, 1)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		slow := &slowLayer{marker: os.Getenv(helperEnv + "_MARKER")}
		err := s.Write(ctx, mustRef(t, "localhost:5000/killed:1"), imageWith(t, slow))
		fmt.Fprintln(os.Stderr, "the slow write was not killed:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// slowLayer writes a marker file once it has produced a megabyte, then
// trickles zeros until its process is killed.
type slowLayer struct{ marker string }

func (l *slowLayer) Digest() (v1.Hash, error) {
	return v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ef", 32)}, nil
}
func (l *slowLayer) Size() (int64, error)                { return 1 << 40, nil }
func (l *slowLayer) DiffID() (v1.Hash, error)            { return fakeDiffID, nil }
func (l *slowLayer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }
func (l *slowLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(&trickle{marker: l.marker}), nil
}

type trickle struct {
	marker string
	n      int64
}

func (r *trickle) Read(p []byte) (int, error) {
	if r.n >= 1<<20 {
		if r.n < 1<<20+int64(len(p)) {
			os.WriteFile(r.marker, nil, 0o644)
		}
		time.Sleep(5 * time.Millisecond)
	}
	p = p[:min(len(p), 64<<10)]
	clear(p)
	r.n += int64(len(p))
	return len(p), nil
}

func helperCommand(t *testing.T, mode, dir string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, helperEnv+"_DIR="+dir)
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

func TestStoreConcurrentProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for _, id := range []string{"1", "2"} {
		cmd := helperCommand(t, "write-many", dir, helperEnv+"_ID="+id)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer process %d: %v: %s", i+1, err, outs[i])
		}
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, id := range []string{"1", "2"} {
		for i := range 5 {
			want = append(want, fmt.Sprintf("localhost:5000/p%s/img%d:1", id, i))
		}
	}
	if diff := cmp.Diff(want, entryNames(t, s)); diff != "" {
		t.Errorf("entries after two processes wrote (-want +got):\n%s", diff)
	}
	checkStore(t, dir)
}

func TestStoreSurvivesSIGKILL(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	marker := filepath.Join(t.TempDir(), "halfway")
	cmd := helperCommand(t, "write-slow", dir, helperEnv+"_MARKER="+marker)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the writer never got halfway: %s", &out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	// The killed write left its temporary file in its own directory.
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".tmp", "p*", ingestPrefix+"*"))
	if len(leftovers) == 0 {
		t.Fatal("no temporary file left by the killed write; did it write straight into the pool?")
	}
	// The next command finds the directory of a dead process and
	// removes it: .tmp holds nothing but its own.
	checkStore(t, dir)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"localhost:5000/done:1"}, entryNames(t, s)); diff != "" {
		t.Errorf("entries after the writer was killed (-want +got):\n%s", diff)
	}
	for _, p := range leftovers {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the killed write's %s is still there after the next Open", p)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(dir, ".tmp"))
	for _, e := range ents {
		if p := filepath.Join(dir, ".tmp", e.Name()); p != s.TempDir() && p != s.TempDir()+".lock" && !strings.HasPrefix(p, filepath.Join(dir, ".tmp", fmt.Sprintf("p%d-", os.Getpid()))) {
			t.Errorf(".tmp holds %s after the next command", e.Name())
		}
	}
	checkStore(t, dir)
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
