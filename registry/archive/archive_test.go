package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/imagetest"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// archiveFixture is a store with two images sharing two layers.
type archiveFixture struct {
	store        *store.Store
	shared       []v1.Layer
	a, b         v1.Image
	refA, refB   string
	onlyA, onlyB v1.Layer
}

func newArchiveFixture(t *testing.T) *archiveFixture {
	t.Helper()
	f := &archiveFixture{store: imagetest.Store(t)}
	f.shared = []v1.Layer{imagetest.Layer(t, 5000), imagetest.Layer(t, 4000)}
	f.onlyA, f.onlyB = imagetest.Layer(t, 3000), imagetest.Layer(t, 2000)
	f.a = imagetest.ImageOf(t, append(append([]v1.Layer{}, f.shared...), f.onlyA)...)
	f.b = imagetest.ImageOf(t, append(append([]v1.Layer{}, f.shared...), f.onlyB)...)
	f.refA = "localhost:5000/ssebench/tool/a:1.0.0"
	f.refB = "localhost:5000/ssebench/tool/b:1.0.0"
	ctx := context.Background()
	for ref, img := range map[string]v1.Image{f.refA: f.a, f.refB: f.b} {
		if err := f.store.Write(ctx, imagetest.Ref(t, ref), img); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func save(t *testing.T, s *store.Store, refs []string, opts ...Option) ([]byte, *Report) {
	t.Helper()
	var buf bytes.Buffer
	rep, err := Save(context.Background(), &buf, refs, append([]Option{noAuth, WithStore(s), WithRegistryPrefix("localhost:5000/ssebench")}, opts...)...)
	if err != nil {
		t.Fatalf("Save: %v", err)
	}
	return buf.Bytes(), rep
}

type tarEntry struct {
	Name string
	Size int64
}

func tarEntries(t *testing.T, b []byte) []tarEntry {
	t.Helper()
	var out []tarEntry
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(archiveTime) || h.Uid != 0 || h.Uname != "" {
			t.Errorf("entry %s has time %s, uid %d, uname %q; want fixed values", h.Name, h.ModTime, h.Uid, h.Uname)
		}
		out = append(out, tarEntry{h.Name, h.Size})
	}
}

func TestSaveArchive(t *testing.T) {
	f := newArchiveFixture(t)
	b, rep := save(t, f.store, []string{f.refB, f.refA, f.refA})
	again, _ := save(t, f.store, []string{f.refA, f.refB})
	if !bytes.Equal(b, again) {
		t.Error("saving the same images twice gave different archives")
	}
	// 2 manifests, 2 configs, 4 distinct layers: the shared ones once.
	if rep.Blobs != 8 || len(rep.Images) != 2 {
		t.Errorf("archive has %d blobs and %d images, want 8 and 2", rep.Blobs, len(rep.Images))
	}
	es := tarEntries(t, b)
	var names []string
	for _, e := range es {
		names = append(names, e.Name)
	}
	if names[0] != "blobs/" || names[1] != "blobs/sha256/" || names[len(names)-2] != "index.json" || names[len(names)-1] != "oci-layout" {
		t.Errorf("entries %v: want blobs/, blobs/sha256/, sorted blobs, index.json, oci-layout", names)
	}
	for i := 3; i < len(names)-2; i++ {
		if names[i-1] >= names[i] {
			t.Errorf("blob entries are not sorted: %s before %s", names[i-1], names[i])
		}
	}

	// The archive is an OCI layout another tool can read: unpack it and
	// open it as our store.
	dir := filepath.Join(t.TempDir(), "layout")
	untar(t, b, dir)
	s, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	img, err := s.Image(imagetest.Ref(t, f.refA))
	if err != nil {
		t.Fatalf("the unpacked archive has no %s: %v", f.refA, err)
	}
	if err := validate.Image(img); err != nil {
		t.Errorf("validate.Image: %v", err)
	}
	if imagetest.Digest(t, img) != imagetest.Digest(t, f.a) {
		t.Errorf("archived %s has digest %s, want %s", f.refA, imagetest.Digest(t, img), imagetest.Digest(t, f.a))
	}
}

func untar(t *testing.T, b []byte, dir string) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, h.Name)
		if h.Typeflag == tar.TypeDir {
			os.MkdirAll(p, 0o755)
			continue
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		data, _ := io.ReadAll(tr)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func load(t *testing.T, b []byte) (*store.Store, *Report, error) {
	t.Helper()
	s := imagetest.Store(t)
	rep, err := Load(context.Background(), bytes.NewReader(b), WithStore(s))
	return s, rep, err
}

func TestLoadArchive(t *testing.T) {
	f := newArchiveFixture(t)
	b, _ := save(t, f.store, []string{f.refA, f.refB})
	s, rep, err := load(t, b)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if rep.Registry != "localhost:5000/ssebench" || rep.Stored != 8 {
		t.Errorf("Load: registry %q, %d blobs stored; want localhost:5000/ssebench and 8", rep.Registry, rep.Stored)
	}
	if diff := cmp.Diff([]string{f.refA, f.refB}, imagetest.Names(t, s)); diff != "" {
		t.Errorf("store entries (-want +got):\n%s", diff)
	}
	imagetest.Verified(t, s.Dir())
}

func TestLoadRejectsDamagedArchives(t *testing.T) {
	f := newArchiveFixture(t)
	b, _ := save(t, f.store, []string{f.refA})
	shared := imagetest.Digest(t, f.shared[0])
	// Find where the shared layer's content starts in the tar.
	off := blobOffset(t, b, shared)

	tampered := append([]byte(nil), b...)
	tampered[off+100] ^= 0xff
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{name: "tampered blob", data: tampered, want: "blob " + shared.String() + " in the archive is corrupt"},
		{name: "cut inside a blob", data: b[:off+50], want: "truncated inside blob " + shared.String()},
		{name: "cut before index.json", data: b[:entryOffset(t, b, "index.json")-512], want: "has no index.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, err := load(t, tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load = %v, want an error with %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is not one line", err)
			}
			if names := imagetest.Names(t, s); len(names) != 0 {
				t.Errorf("a failed load tagged %v", names)
			}
		})
	}
}

// blobOffset returns the offset in the tar b of the content of blob h.
func blobOffset(t *testing.T, b []byte, h v1.Hash) int {
	t.Helper()
	return entryOffset(t, b, "blobs/sha256/"+h.Hex)
}

// entryOffset returns the offset in the tar b of the content of entry n
// (its header is the 512 bytes before: our names need no extra headers).
func entryOffset(t *testing.T, b []byte, n string) int {
	t.Helper()
	r := &countReader{r: bytes.NewReader(b)}
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatalf("%s is not in the archive: %v", n, err)
		}
		if hdr.Name == n {
			return int(r.n)
		}
	}
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestSaveSince(t *testing.T) {
	f := newArchiveFixture(t)
	old, _ := save(t, f.store, []string{f.refA})
	oldPath := filepath.Join(t.TempDir(), "old.tar")
	if err := os.WriteFile(oldPath, old, 0o644); err != nil {
		t.Fatal(err)
	}
	next, rep := save(t, f.store, []string{f.refB}, WithSince(oldPath))
	// B's shared layers travelled in old.tar: only B's own layer, config
	// and manifest are in the new archive.
	if rep.Blobs != 3 || rep.Omitted != 2 || rep.OmittedBytes != layerSize(t, f.shared...) {
		t.Errorf("archive since old.tar: %s; want 3 blobs, the 2 shared layers left out", rep)
	}
	for _, e := range tarEntries(t, next) {
		for _, l := range f.shared {
			if e.Name == "blobs/sha256/"+imagetest.Digest(t, l).Hex {
				t.Errorf("shared layer %s is in the archive made --since", e.Name)
			}
		}
	}

	t.Run("alone it does not load", func(t *testing.T) {
		s, _, err := load(t, next)
		if err == nil || !strings.Contains(err.Error(), "load the earlier archive first") {
			t.Fatalf("Load = %v, want an error asking for the earlier archive", err)
		}
		if names := imagetest.Names(t, s); len(names) != 0 {
			t.Errorf("a failed load tagged %v", names)
		}
	})
	t.Run("after the earlier one it does", func(t *testing.T) {
		s := imagetest.Store(t)
		var rep *Report
		for _, b := range [][]byte{old, next} {
			var err error
			if rep, err = Load(context.Background(), bytes.NewReader(b), WithStore(s)); err != nil {
				t.Fatalf("Load: %v", err)
			}
		}
		// What load prints: the left-out blobs' real size, not "(0 B)".
		want := fmt.Sprintf("2 blobs (%s) left out as already carried", units.Bytes(layerSize(t, f.shared...)))
		if rep.OmittedBytes != layerSize(t, f.shared...) || !strings.Contains(rep.String(), want) {
			t.Errorf("Load of the archive since old.tar = %q, want %q in it", rep, want)
		}
		img, err := s.Image(imagetest.Ref(t, f.refB))
		if err != nil {
			t.Fatal(err)
		}
		if err := validate.Image(img); err != nil {
			t.Errorf("validate.Image(%s): %v", f.refB, err)
		}
	})

	t.Run("chains through an archive that itself left blobs out", func(t *testing.T) {
		nextPath := filepath.Join(t.TempDir(), "next.tar")
		if err := os.WriteFile(nextPath, next, 0o644); err != nil {
			t.Fatal(err)
		}
		_, rep := save(t, f.store, []string{f.refB}, WithSince(nextPath))
		if rep.Omitted != 4 {
			t.Errorf("archive since next.tar left out %d blobs, want 4 (2 it carried, 2 it left out)", rep.Omitted)
		}
	})
}

// TestIntegrationSaveLoadPush saves two images from one registry, loads the
// archive and pushes it to a second registry under another prefix: the
// images arrive with the same digests, the shared layers uploaded once.
func TestIntegrationSaveLoadPush(t *testing.T) {
	src, dst := testenv.StartRegistry(t), testenv.StartRegistry(t)
	ctx := context.Background()
	f := newArchiveFixture(t)
	refs := []string{src + "/ssebench/tool/a:1.0.0", src + "/ssebench/tool/b:1.0.0"}
	for i, img := range []v1.Image{f.a, f.b} {
		if _, err := remote.Push(ctx, refs[i], img, remote.WithKeychain(authn.NewMultiKeychain())); err != nil {
			t.Fatal(err)
		}
	}

	var buf bytes.Buffer
	// No store: the images come from the registry.
	if _, err := Save(ctx, &buf, refs, noAuth, WithRegistryPrefix(src+"/ssebench")); err != nil {
		t.Fatalf("Save from the registry: %v", err)
	}
	s := imagetest.Store(t)
	rep, err := Load(ctx, bytes.NewReader(buf.Bytes()), WithStore(s))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	prep, err := PushLoaded(ctx, rep, dst+"/mirror", noAuth, WithStore(s))
	if err != nil {
		t.Fatalf("PushLoaded: %v", err)
	}
	if prep.MountedBlobs != 2 || prep.Mounted != layerSize(t, f.shared...) {
		t.Errorf("push after load: %s; want the 2 shared layers mounted for the second image", prep)
	}
	for ref, img := range map[string]v1.Image{dst + "/mirror/tool/a:1.0.0": f.a, dst + "/mirror/tool/b:1.0.0": f.b} {
		if got := imagetest.Pulled(t, ref); got != imagetest.Digest(t, img) {
			t.Errorf("%s has digest %s, want %s", ref, got, imagetest.Digest(t, img))
		}
	}
}

func TestLoadNeedsAStore(t *testing.T) {
	_, err := Load(context.Background(), strings.NewReader(""))
	if err == nil || !strings.Contains(err.Error(), "WithStore") {
		t.Errorf("Load without a store = %v, want an error saying so", err)
	}
	if errors.Is(err, store.ErrNotFound) {
		t.Error("wrong error kind")
	}
}

// noAuth keeps the tests off the machine's Docker credentials.
var noAuth = WithRemote(remote.WithKeychain(authn.NewMultiKeychain()))

func layerSize(t testing.TB, ls ...v1.Layer) int64 {
	t.Helper()
	var n int64
	for _, l := range ls {
		size, err := l.Size()
		if err != nil {
			t.Fatal(err)
		}
		n += size
	}
	return n
}

// TestSaveLoadAfterPlatformPullKeepsIndex: a two-platform index of which
// this machine resolved (and read) one platform is saved and loaded as the
// index, both platforms whole, and pushes back unchanged.
func TestSaveLoadAfterPlatformPullKeepsIndex(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	reg := strings.TrimPrefix(srv.URL, "http://")
	idx := v1.ImageIndex(empty.Index)
	for _, p := range []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}} {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: imagetest.RandomImage(t, 300, 2), Descriptor: v1.Descriptor{Platform: &p}})
	}
	ref := reg + "/ssebench/runtime:1.0.0"
	keys := remote.WithKeychain(authn.NewMultiKeychain())
	if _, err := remote.Push(ctx, ref, idx, keys); err != nil {
		t.Fatal(err)
	}
	s := imagetest.Store(t)
	r, err := remote.NewResolver(remote.WithStore(s), keys, remote.WithPlatform(&v1.Platform{OS: "linux", Architecture: "amd64"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Resolve(ctx, ref); err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	if _, err := Save(ctx, &buf, []string{ref}, WithStore(s), WithRemote(keys)); err != nil {
		t.Fatalf("Save: %v", err)
	}
	other := imagetest.Store(t)
	rep, err := Load(ctx, bytes.NewReader(buf.Bytes()), WithStore(other))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(rep.Images) != 1 || rep.Images[0].Descriptor.Digest != imagetest.Digest(t, idx) || !rep.Images[0].Descriptor.MediaType.IsIndex() {
		t.Fatalf("loaded %+v, want the index %s", rep.Images, imagetest.Digest(t, idx))
	}
	imagetest.Verified(t, other.Dir())
	if u, err := other.Usage(); err != nil || u.Images[0].Remote != 0 {
		t.Errorf("the loaded index lacks bytes (%+v, %v): the archive must carry both platforms whole", u, err)
	}
	if _, err := PushLoaded(ctx, rep, reg+"/back", WithStore(other), WithRemote(keys)); err != nil {
		t.Fatal(err)
	}
	if got := imagetest.Pulled(t, reg+"/back/ssebench/runtime:1.0.0"); got != imagetest.Digest(t, idx) {
		t.Errorf("pushed back %s, want the index %s", got, imagetest.Digest(t, idx))
	}
}

// TestLoadGuards: a load names the tags it replaces, refuses to replace a
// protected image without force, and refuses names outside the grammar,
// tagging nothing in either case.
func TestLoadGuards(t *testing.T) {
	ctx := context.Background()
	f := newArchiveFixture(t)
	b, _ := save(t, f.store, []string{f.refA})

	// A store whose tool/a is another image.
	s := imagetest.Store(t)
	other := imagetest.RandomImage(t, 100, 1)
	if err := s.Write(ctx, imagetest.Ref(t, f.refA), other); err != nil {
		t.Fatal(err)
	}
	tool := func(ref string) bool { return strings.Contains(ref, "/tool/") }
	_, err := Load(ctx, bytes.NewReader(b), WithStore(s), WithProtected(tool))
	if err == nil || !strings.Contains(err.Error(), "--force") || !strings.Contains(err.Error(), f.refA) {
		t.Fatalf("Load over a tool image = %v, want a refusal naming it and --force", err)
	}
	if d, _ := s.Descriptor(imagetest.Ref(t, f.refA)); d.Digest != imagetest.Digest(t, other) {
		t.Error("the refused load changed the tag")
	}
	rep, err := Load(ctx, bytes.NewReader(b), WithStore(s), WithProtected(tool), WithForce(true))
	if err != nil {
		t.Fatalf("Load with force: %v", err)
	}
	if len(rep.Replaced) != 1 || rep.Replaced[0].Name != f.refA || rep.Replaced[0].Old != imagetest.Digest(t, other) {
		t.Errorf("Replaced = %+v, want %s replaced", rep.Replaced, f.refA)
	}

	// A name with ".." inside the archive tags nothing.
	bad := bytes.Replace(b, []byte("tool/a:1.0.0"), []byte("to../a:1.0.0"), -1)
	fresh := imagetest.Store(t)
	check := func(ref string) error {
		if strings.Contains(ref, "..") {
			return errors.New("image name has \"..\"")
		}
		return nil
	}
	if _, err := Load(ctx, bytes.NewReader(bad), WithStore(fresh), WithNameCheck(check)); err == nil {
		t.Error("an archive naming a path with .. loaded")
	}
	if names := imagetest.Names(t, fresh); len(names) != 0 {
		t.Errorf("the refused archive tagged %v", names)
	}
}
