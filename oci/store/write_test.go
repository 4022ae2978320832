package store

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/stream"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

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

func (l *failingLayer) Size() (int64, error) { return 2 * l.n, nil }

func (l *failingLayer) DiffID() (v1.Hash, error) { return fakeDiffID, nil }

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

func (l *cancelingLayer) Size() (int64, error) { return 1 << 40, nil }

func (l *cancelingLayer) DiffID() (v1.Hash, error) { return fakeDiffID, nil }

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
