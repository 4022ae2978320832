package runner

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/opencontainers/image-spec/identity"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// osImageStore returns a store holding the OS image under the names refs
// (the first is the OS image's own), and that name.
func osImageStore(t *testing.T, refs ...string) (*store.Store, string) {
	t.Helper()
	osImage := testenv.OSImage(t)
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(osImage)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref, remote.WithContext(context.Background()))
	if err != nil {
		t.Fatalf("reading %s: %v", osImage, err)
	}
	for _, s := range append([]string{osImage}, refs...) {
		if err := st.Write(context.Background(), mustParse(t, s), img); err != nil {
			t.Fatalf("writing %s to the store: %v", s, err)
		}
	}
	return st, osImage
}

func mustParse(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// imageRecord returns the namespace's record of ref, or nil.
func imageRecord(t *testing.T, r *Runner, ref string) *images.Image {
	t.Helper()
	img, err := r.Client().ImageService().Get(r.withNamespace(context.Background()), containerdName(mustParse(t, ref)))
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return &img
}

// TestIntegrationImageRemoval: a run removes from containerd the image it
// imported, unless asked to keep it or another run of the process still
// uses it; an image that was there before stays.
func TestIntegrationImageRemoval(t *testing.T) {
	addr := testenv.RequireContainerd(t)
	const (
		removed = "127.0.0.1:5000/ssebench-prune34/removed:1"
		kept    = "127.0.0.1:5000/ssebench-prune34/kept:1"
		shared  = "127.0.0.1:5000/ssebench-prune34/shared:1"
		later   = "127.0.0.1:5000/ssebench-prune34/later:1"
	)
	st, _ := osImageStore(t, removed, kept, shared, later)
	r := newTestRunner(t, addr, WithNamespace(testNamespace(t, addr)), WithStore(st))

	t.Run("a run removes the image it imported", func(t *testing.T) {
		run(t, r, RunSpec{Image: removed, Args: []string{"true"}, RemoveImage: true}, 0)
		if img := imageRecord(t, r, removed); img != nil {
			t.Errorf("after the run containerd still has %s (labels %v), want it removed", removed, img.Labels)
		}
	})

	t.Run("kept, then there before", func(t *testing.T) {
		run(t, r, RunSpec{Image: kept, Args: []string{"true"}}, 0)
		img := imageRecord(t, r, kept)
		if img == nil || img.Labels[LabelImported] == "" || img.Labels[LabelKept] != "true" {
			t.Fatalf("after a run that keeps its image: record %+v, want it labelled %s and %s", img, LabelImported, LabelKept)
		}
		// There before this run: it stays, labels and all.
		run(t, r, RunSpec{Image: kept, Args: []string{"true"}, RemoveImage: true}, 0)
		if img := imageRecord(t, r, kept); img == nil || img.Labels[LabelKept] != "true" {
			t.Errorf("a run removed (or relabelled) %s, which was in containerd before it: %+v", kept, img)
		}
	})

	t.Run("not while another run uses it", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var wg sync.WaitGroup
		wg.Add(1)
		var longErr error
		started := make(chan struct{})
		go func() {
			defer wg.Done()
			_, longErr = r.Run(ctx, RunSpec{Image: shared, ID: "ssebench-prune34-long", Args: []string{"sleep", "600"}, RemoveImage: true,
				Started: func(uint32) { close(started) }})
		}()
		select {
		case <-started:
		case <-time.After(2 * time.Minute):
			t.Fatal("the long run did not start")
		}
		run(t, r, RunSpec{Image: shared, Args: []string{"true"}, RemoveImage: true}, 0)
		if imageRecord(t, r, shared) == nil {
			t.Errorf("a run removed %s while another run of the process still used it", shared)
		}
		cancel() // Ctrl-C: the interrupted run cleans up the same way
		wg.Wait()
		if longErr == nil {
			t.Errorf("the cancelled run returned no error")
		}
		if img := imageRecord(t, r, shared); img != nil {
			t.Errorf("after the last run that used it containerd still has %s", shared)
		}
	})

	t.Run("kept for a later run", func(t *testing.T) {
		needed := true
		spec := RunSpec{Image: later, Args: []string{"true"}, RemoveImage: true, ImageNeeded: func() bool { return needed }}
		run(t, r, spec, 0)
		if img := imageRecord(t, r, later); img == nil || img.Labels[LabelKept] != "" {
			t.Fatalf("a run removed (or labelled kept) %s, which a later run needs: %+v", later, img)
		}
		needed = false
		run(t, r, spec, 0)
		if imageRecord(t, r, later) != nil {
			t.Errorf("the last run that needs %s left it in containerd", later)
		}
	})
}

// TestIntegrationPrune: prune removes what runs left in ssebench's
// namespace (an imported image, a finished container, an extract snapshot
// no lease holds, an expired lease) and nothing else; --all also the kept
// images.
func TestIntegrationPrune(t *testing.T) {
	addr := testenv.RequireContainerd(t)
	const (
		left = "127.0.0.1:5000/ssebench-prune34/left:1"
		kept = "127.0.0.1:5000/ssebench-prune34/kept:1"
	)
	st, _ := osImageStore(t, left, kept)
	r := newTestRunner(t, addr, WithNamespace(testNamespace(t, addr)), WithStore(st))
	ctx := r.withNamespace(context.Background())

	// What an interrupted run leaves: its image, and its container (a
	// kept one here, whose task is gone).
	run(t, r, RunSpec{Image: left, ID: "ssebench-prune34-ctr", Args: []string{"true"}, Keep: true}, 0)
	if _, err := r.Client().ImageService().Update(ctx, images.Image{Name: containerdName(mustParse(t, left)), Labels: map[string]string{LabelImported: "2026-12-01T00:00:00Z"}}, "labels."+LabelKept); err != nil {
		t.Fatal(err)
	}
	// What run --keep-images leaves.
	run(t, r, RunSpec{Image: kept, Args: []string{"true"}}, 0)
	// Another tool's image in the same namespace.
	other := images.Image{Name: "example.com/other/tool:1", Target: imageRecord(t, r, kept).Target}
	if _, err := r.Client().ImageService().Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	// An unpack killed before it committed, made as the old code made
	// them: active, under no lease, and a gc.root label that the garbage
	// collector respects.
	sn := r.Client().SnapshotService(r.Snapshotter())
	orphan := "extract-1-prune34-orphan"
	if _, err := sn.Prepare(ctx, orphan, "", snapshots.WithLabels(map[string]string{"containerd.io/gc.root": "2026-12-01T00:00:00Z"})); err != nil {
		t.Fatal(err)
	}
	// An unpack in progress in another process: its lease holds it.
	ls := r.Client().LeasesService()
	live, err := ls.Create(ctx, leases.WithRandomID(), leases.WithExpiration(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	busy := "extract-2-prune34-busy"
	if _, err := sn.Prepare(leases.WithLease(ctx, live.ID), busy, ""); err != nil {
		t.Fatal(err)
	}
	// The test makes an extract snapshot of the kind GC alone never
	// takes: run the collector and check it is still there.
	if err := r.collectGarbage(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sn.Stat(ctx, orphan); err != nil {
		t.Fatalf("the orphan extract snapshot is gone before prune: %v", err)
	}

	dry, err := r.Prune(context.Background(), PruneDryRun(), withPruneGrace(0))
	if err != nil {
		t.Fatalf("Prune(dry run): %v", err)
	}
	want := map[string]bool{
		PruneImage + " " + containerdName(mustParse(t, left)): true,
		PruneContainer + " ssebench-prune34-ctr":              true,
		PruneSnapshot + " " + r.Snapshotter() + "/" + orphan:  true,
	}
	check := func(what string, p *Pruned) {
		t.Helper()
		got := map[string]bool{}
		for _, it := range p.Items {
			if it.Kind != PruneLease {
				got[it.Kind+" "+it.Name] = true
			}
		}
		for k := range want {
			if !got[k] {
				t.Errorf("%s: %s not pruned; pruned %v", what, k, got)
			}
		}
		for k := range got {
			if !want[k] {
				t.Errorf("%s: %s pruned, want it kept", what, k)
			}
		}
	}
	check("dry run", dry)
	if dry.Bytes <= 0 {
		t.Errorf("dry run: %d bytes, want more than 0", dry.Bytes)
	}
	if imageRecord(t, r, left) == nil {
		t.Fatalf("the dry run removed %s", left)
	}

	p, err := r.Prune(context.Background(), withPruneGrace(0))
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	check("prune", p)
	t.Logf("prune freed %d bytes (dry run estimated %d)", p.Bytes, dry.Bytes)
	if p.Bytes <= 0 {
		t.Errorf("prune freed %d bytes, want more than 0", p.Bytes)
	}
	if imageRecord(t, r, left) != nil {
		t.Errorf("%s is still in containerd", left)
	}
	if _, err := r.Client().LoadContainer(ctx, "ssebench-prune34-ctr"); !errdefs.IsNotFound(err) {
		t.Errorf("the finished container is still there (%v)", err)
	}
	if _, err := sn.Stat(ctx, orphan); !errdefs.IsNotFound(err) {
		t.Errorf("the orphan extract snapshot is still there (%v)", err)
	}
	if _, err := sn.Stat(ctx, busy); err != nil {
		t.Errorf("prune removed an extract snapshot a live lease holds: %v", err)
	}
	if imageRecord(t, r, kept) == nil {
		t.Errorf("prune without --all removed the kept image %s", kept)
	}
	if _, err := r.Client().ImageService().Get(ctx, other.Name); err != nil {
		t.Errorf("prune removed another tool's image: %v", err)
	}

	want = map[string]bool{PruneImage + " " + containerdName(mustParse(t, kept)): true}
	all, err := r.Prune(context.Background(), PruneAll(), withPruneGrace(0))
	if err != nil {
		t.Fatalf("Prune(all): %v", err)
	}
	check("prune --all", all)
	if _, err := r.Client().ImageService().Get(ctx, other.Name); err != nil {
		t.Errorf("prune --all removed another tool's image: %v", err)
	}
}

// TestIntegrationKilledUnpack: the snapshot an unpack was extracting when
// its process was killed is held by the unpack's lease only, so containerd
// collects it once the lease expires (it used to carry a gc.root label and
// stay forever).
func TestIntegrationKilledUnpack(t *testing.T) {
	if dir := os.Getenv("SSEBENCH_TEST_UNPACK_STORE"); dir != "" {
		// The child: import until killed.
		st, err := store.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		r := newTestRunner(t, os.Getenv("SSEBENCH_TEST_UNPACK_ADDR"), WithNamespace(os.Getenv("SSEBENCH_TEST_UNPACK_NS")), WithStore(st))
		r.Import(context.Background(), os.Getenv("SSEBENCH_TEST_UNPACK_REF"))
		return
	}
	addr := testenv.RequireContainerd(t)
	st, osImage := osImageStore(t)
	ns := testNamespace(t, addr)
	r := newTestRunner(t, addr, WithNamespace(ns))
	ctx := r.withNamespace(context.Background())
	sn := r.Client().SnapshotService(r.Snapshotter())

	child := exec.Command(os.Args[0], "-test.run=^TestIntegrationKilledUnpack$", "-test.count=1")
	child.Env = append(os.Environ(), "SSEBENCH_TEST_UNPACK_STORE="+st.Dir(), "SSEBENCH_TEST_UNPACK_ADDR="+addr,
		"SSEBENCH_TEST_UNPACK_NS="+ns, "SSEBENCH_TEST_UNPACK_REF="+osImage)
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var extract string
	for deadline := time.Now().Add(2 * time.Minute); extract == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		sn.Walk(ctx, func(_ context.Context, info snapshots.Info) error {
			if info.Kind == snapshots.KindActive && strings.HasPrefix(info.Name, "extract-") {
				extract = info.Name
			}
			return nil
		})
	}
	child.Process.Kill()
	child.Wait()
	if extract == "" {
		t.Fatal("the child never started extracting a layer")
	}
	if _, err := sn.Stat(ctx, extract); err != nil {
		t.Skipf("the child finished the layer before it was killed (%v): nothing left to collect", err)
	}
	// The lease expires (after leaseExpiry): deleting it is the same to
	// the garbage collector.
	ls := r.Client().LeasesService()
	all, err := ls.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range all {
		if l.Labels[expireLabel] == "" {
			t.Errorf("lease %s has no expiry: a killed run's content would stay forever", l.ID)
		}
		if err := ls.Delete(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.collectGarbage(ctx); err != nil {
		t.Fatal(err)
	}
	if info, err := sn.Stat(ctx, extract); !errdefs.IsNotFound(err) {
		t.Errorf("the killed unpack's snapshot %s outlived its lease (labels %v, %v)", extract, info.Labels, err)
	}
}

// TestIntegrationSecondUnpack: two runs that unpack the same layer at
// once (eval --jobs, a reference run beside a dummy) both extract it, and
// the second commit finds the first's. The second copy, a whole unpacked
// layer, must go at once: on a test machine such copies, kept alive by a
// label and later by their lease, added up to gigabytes.
func TestIntegrationSecondUnpack(t *testing.T) {
	addr := testenv.RequireContainerd(t)
	st, osImage := osImageStore(t)
	ns := testNamespace(t, addr)
	r := newTestRunner(t, addr, WithNamespace(ns), WithStore(st))
	ctx := r.withNamespace(context.Background())
	ctx, done, err := r.Client().WithLease(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer done(context.Background())
	img, err := r.Import(ctx, osImage)
	if err != nil {
		t.Fatal(err)
	}
	cs := r.Client().ContentStore()
	m, err := images.Manifest(ctx, cs, img.Target, r.matcher())
	if err != nil {
		t.Fatal(err)
	}
	diffIDs, err := images.RootFS(ctx, cs, m.Config)
	if err != nil || len(diffIDs) == 0 || len(m.Layers) != len(diffIDs) {
		t.Fatalf("layers %d, diff ids %v (%v)", len(m.Layers), diffIDs, err)
	}
	// The layer unpacked again, as the run that lost the race does.
	sn := r.Client().SnapshotService(r.Snapshotter())
	chain := identity.ChainID(diffIDs[:1]).String()
	if _, err := r.applyLayer(ctx, sn, r.Client().DiffService(), &storeProvider{s: st}, m.Layers[0], diffIDs[0], "", chain); err != nil {
		t.Fatalf("the second unpack of the first layer: %v", err)
	}
	var left []string
	sn.Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if info.Kind == snapshots.KindActive && strings.HasPrefix(info.Name, "extract-") {
			left = append(left, info.Name)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("the second unpack's snapshot stayed: %v", left)
	}
}
