package runner

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"math"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// tarEntry is one member of a test layer's tar. typ 0 means a regular
// file; mtime 0 a fixed time.
type tarEntry struct {
	name     string
	typ      byte
	mode     int64
	body     string
	link     string
	uid, gid int
	mtime    int64
}

// testMTime is the modification time of tar entries that give none.
const testMTime = 1700000000

// tarBytes is the uncompressed tar of entries, in order.
func tarBytes(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		mt := e.mtime
		if mt == 0 {
			mt = testMTime
		}
		hdr := &tar.Header{Typeflag: typ, Name: e.name, Mode: e.mode, Linkname: e.link, Uid: e.uid, Gid: e.gid,
			ModTime: time.Unix(mt, 0), Format: tar.FormatPAX}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := io.WriteString(tw, e.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// tarLayer is a gzip-compressed layer of entries whose diff id is right.
func tarLayer(t *testing.T, entries []tarEntry) v1.Layer {
	t.Helper()
	b := tarBytes(t, entries)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// randomLayer is a layer of one file of n random (incompressible) bytes.
func randomLayer(t *testing.T, file string, n int) v1.Layer {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	return tarLayer(t, []tarEntry{{name: file, mode: 0o644, body: string(b)}})
}

// writeImage writes an image of layers for r's platform to st under ref.
func writeImage(t *testing.T, st *store.Store, r *Runner, ref string, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	p, err := v1.ParsePlatform(r.Platform())
	if err != nil {
		t.Fatal(err)
	}
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	if err := st.Write(context.Background(), mustParse(t, ref), img); err != nil {
		t.Fatalf("writing %s to the store: %v", ref, err)
	}
	return img
}

// usage is r's ImageUsage, or the test fails.
func usage(t *testing.T, r *Runner) ImageUsage {
	t.Helper()
	u, err := r.ImageUsage(context.Background())
	if err != nil {
		t.Fatalf("ImageUsage: %v", err)
	}
	return u
}

// imageNames are the names of the namespace's image records, in
// containerd's order (by name).
func imageNames(t *testing.T, r *Runner) []string {
	t.Helper()
	imgs, err := r.Client().ImageService().List(r.withNamespace(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, img := range imgs {
		out = append(out, img.Name)
	}
	return out
}

// TestIntegrationEvictLRU: over its budget, Evict removes the least
// recently used of the images ssebench imported, and only as many as
// bring the namespace back under the budget; an image labelled kept,
// another tool's image, one a container was created from and one a run of
// this process uses stay, even when that leaves the namespace over the
// budget.
func TestIntegrationEvictLRU(t *testing.T) {
	addr := testenv.RequireContainerd(t)
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := newTestRunner(t, addr, WithNamespace(testNamespace(t, addr)), WithStore(st))
	ctx := r.withNamespace(context.Background())
	const (
		a = "127.0.0.1:5000/ssebench-evict/a:1"
		b = "127.0.0.1:5000/ssebench-evict/b:1"
		c = "127.0.0.1:5000/ssebench-evict/c:1"
	)
	cname := func(ref string) string { return containerdName(mustParse(t, ref)) }
	// Distinct layers, 1 MiB each, so that every image holds what it
	// alone holds.
	for i, ref := range []string{a, b, c} {
		writeImage(t, st, r, ref, randomLayer(t, "data", (1+i)<<20))
	}
	size := map[string]int64{}
	var prev int64
	for _, ref := range []string{a, b, c} {
		img, err := r.Import(ctx, ref)
		if err != nil {
			t.Fatalf("Import(%s): %v", ref, err)
		}
		if img.Stats.LayersUnpacked != 1 {
			t.Fatalf("Import(%s): %+v, want its layer unpacked", ref, img.Stats)
		}
		u := usage(t, r)
		size[ref], prev = u.Bytes-prev, u.Bytes
		if size[ref] < 1<<20 {
			t.Fatalf("importing %s added %d bytes to the usage, want at least its 1 MiB layer", ref, size[ref])
		}
	}
	t.Logf("footprints: %v", size)
	// a is used again: b is now the least recently used.
	if img, err := r.Import(ctx, a); err != nil || img.Stats.LayersUnpacked != 0 {
		t.Fatalf("second Import(%s): %+v, %v; want nothing unpacked", a, img, err)
	}

	before := usage(t, r)
	if before.Images != 3 || before.Bytes != size[a]+size[b]+size[c] {
		t.Fatalf("usage %+v, want 3 images and %d bytes", before, size[a]+size[b]+size[c])
	}
	// Room for two of the three: evicting b, the least recently used,
	// is enough.
	budget := before.Bytes - size[b]/2
	ev, err := r.Evict(context.Background(), budget)
	if err != nil {
		t.Fatalf("Evict(%d): %v", budget, err)
	}
	t.Logf("Evict(%d): %+v", budget, ev)
	if diff := cmp.Diff([]string{cname(b)}, ev.Images); diff != "" {
		t.Errorf("evicted (-want +got):\n%s", diff)
	}
	if got := imageNames(t, r); !cmp.Equal(got, []string{cname(a), cname(c)}) {
		t.Errorf("images after the eviction: %v, want %s and %s", got, cname(a), cname(c))
	}
	after := usage(t, r)
	if ev.Before != before {
		t.Errorf("Evicted.Before = %+v, want the usage before, %+v", ev.Before, before)
	}
	if ev.After != after {
		t.Errorf("Evicted.After = %+v, want the usage after, %+v", ev.After, after)
	}
	if after.Bytes > budget || after.Images != 2 || after.Bytes != before.Bytes-size[b] {
		t.Errorf("usage after the eviction %+v, want 2 images and %d bytes (%d less: the evicted image's blobs and layer collected), at most the budget %d",
			after, before.Bytes-size[b], size[b], budget)
	}

	// Under the budget: nothing to do.
	ev, err = r.Evict(context.Background(), budget)
	if err != nil {
		t.Fatal(err)
	}
	if len(ev.Images) != 0 || ev.Before != after || ev.After != after {
		t.Errorf("Evict under the budget: %+v, want nothing evicted and the usage %+v before and after", ev, after)
	}

	// c is kept; a container was created from a; another tool's image
	// names c's manifest. Nothing may go, even for a budget of nothing.
	is := r.Client().ImageService()
	kept := imageRecord(t, r, c)
	kept.Labels[LabelKept] = "true"
	if _, err := is.Update(ctx, *kept, "labels."+LabelKept); err != nil {
		t.Fatal(err)
	}
	other := images.Image{Name: "example.com/other/tool:1", Target: kept.Target}
	if _, err := is.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	holder, err := r.Client().NewContainer(ctx, "ssebench-evict-holder", client.WithImageName(cname(a)), client.WithSpec(&oci.Spec{}))
	if err != nil {
		t.Fatal(err)
	}
	ev, err = r.Evict(context.Background(), 0)
	if err != nil {
		t.Fatalf("Evict(0): %v", err)
	}
	if len(ev.Images) != 0 {
		t.Errorf("Evict(0) with a kept image and one a container uses: evicted %v, want none", ev.Images)
	}
	if got := imageNames(t, r); !cmp.Equal(got, []string{cname(a), cname(c), other.Name}) {
		t.Errorf("images after Evict(0): %v, want all three left", got)
	}
	if ev.Before.Bytes != after.Bytes || ev.After != ev.Before || ev.After.Images != 3 {
		t.Errorf("Evict(0) that removed nothing: %+v, want before = after = %d bytes, 3 images", ev, after.Bytes)
	}

	// The container is gone, but a run of this process uses a.
	if err := holder.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	use, err := r.acquireImage(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	ev, err = r.Evict(context.Background(), 0)
	if err != nil {
		t.Fatalf("Evict(0): %v", err)
	}
	if len(ev.Images) != 0 {
		t.Errorf("Evict(0) while a run uses %s: evicted %v, want none", a, ev.Images)
	}
	// The run ends (under a budget, having added nothing: no eviction).
	if err := r.releaseImage(ctx, use, RunSpec{Image: a, ImageBudget: math.MaxInt64}, false); err != nil {
		t.Fatal(err)
	}
	if imageRecord(t, r, a) == nil {
		t.Fatalf("the end of a run that added nothing removed %s", a)
	}
	ev, err = r.Evict(context.Background(), 0)
	if err != nil {
		t.Fatalf("Evict(0): %v", err)
	}
	if diff := cmp.Diff([]string{cname(a)}, ev.Images); diff != "" {
		t.Errorf("Evict(0) once nothing uses %s: evicted (-want +got):\n%s", a, diff)
	}
	left := usage(t, r)
	if ev.After != left || left.Bytes != after.Bytes-size[a] || left.Images != 2 || left.Bytes <= 0 {
		t.Errorf("after evicting %s: Evicted.After %+v, usage %+v; want %d bytes and 2 images (the kept image over the budget of 0)", a, ev.After, left, after.Bytes-size[a])
	}
	if imageRecord(t, r, c) == nil {
		t.Errorf("the kept image %s was evicted", c)
	}
}

// TestIntegrationRunKeepsUnderBudget: under a budget, a run without
// RemoveImage leaves its image in containerd, unlabelled kept (so a later
// eviction may take it), evicts an older image to fit, and the next run of
// the image unpacks nothing; Result.Startup says what the start-up took.
func TestIntegrationRunKeepsUnderBudget(t *testing.T) {
	addr := testenv.RequireContainerd(t)
	const old = "127.0.0.1:5000/ssebench-evict/old:1"
	st, osImage := osImageStore(t)
	ctx := context.Background()

	// What the OS image takes, measured in a namespace of its own.
	scratch := newTestRunner(t, addr, WithNamespace(testNamespace(t, addr)), WithStore(st))
	writeImage(t, st, scratch, old, randomLayer(t, "old", 2<<20))
	if _, err := scratch.Import(ctx, osImage); err != nil {
		t.Fatal(err)
	}
	osBytes := usage(t, scratch).Bytes

	r := newTestRunner(t, addr, WithNamespace(testNamespace(t, addr)), WithStore(st))
	if _, err := r.Import(ctx, old); err != nil {
		t.Fatal(err)
	}
	oldBytes := usage(t, r).Bytes
	// Room for the OS image, not for both.
	budget := osBytes + oldBytes/2
	t.Logf("OS image %d bytes, old image %d bytes, budget %d", osBytes, oldBytes, budget)

	for i := range 2 {
		var out bytes.Buffer
		res, err := r.Run(ctx, RunSpec{Image: osImage, Args: []string{"echo", "budget"}, ImageBudget: budget, Output: &out})
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		if res.ExitCode != 0 || out.String() != "budget\n" {
			t.Fatalf("run %d: exit %d, output %q", i+1, res.ExitCode, out.String())
		}
		assertGone(t, r, res.ContainerID)
		s := res.Image.Stats
		t.Logf("run %d: start-up %s, %+v (sum %s), import %+v", i+1, res.StartupTime, res.Startup,
			res.Startup.Import+res.Startup.Unpack+res.Startup.Create+res.Startup.Start, s)
		if i == 0 && (s.Layers == 0 || s.LayersUnpacked != s.Layers || s.LayersFromStore != s.Layers) {
			t.Errorf("run 1: %+v, want every layer unpacked, from the store", s)
		}
		if i == 1 && (s.LayersUnpacked != 0 || s.BlobsWritten != 0) {
			t.Errorf("run 2: %+v, want nothing written or unpacked: the image stayed", s)
		}
		su := res.Startup
		if su.Import <= 0 || su.Create <= 0 || su.Start <= 0 || su.Unpack < 0 || (i == 0 && su.Unpack <= 0) {
			t.Errorf("run %d: Startup %+v, want Import, Create and Start (and Unpack for the first) above 0", i+1, su)
		}
		if su.Import+su.Unpack+su.Create+su.Start > res.StartupTime {
			t.Errorf("run %d: Startup %+v adds up to more than StartupTime %s", i+1, su, res.StartupTime)
		}
		img := imageRecord(t, r, osImage)
		if img == nil {
			t.Fatalf("run %d under a budget removed %s", i+1, osImage)
		}
		if img.Labels[LabelImported] == "" || img.Labels[LabelKept] != "" {
			t.Errorf("run %d: %s labelled %v, want %s and not %s (a budget may evict it)", i+1, osImage, img.Labels, LabelImported, LabelKept)
		}
		if imageRecord(t, r, old) != nil {
			t.Errorf("run %d: %s is still there; want it evicted to fit the budget", i+1, old)
		}
		if u := usage(t, r); u.Bytes > budget || u.Images != 1 {
			t.Errorf("run %d: usage %+v, want only the OS image, within the budget %d", i+1, u, budget)
		}
	}
}
