package runner

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/identity"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// treeEntry is what a file of a mounted file system looks like.
type treeEntry struct {
	Mode     fs.FileMode
	UID, GID uint32
	Nlink    uint64
	MTime    int64
	Content  string
	Link     string
}

// readTree describes every file under dir by its path relative to dir.
// The times of untimed (directories that a layer writes into without
// naming them, so that they are as new as their unpack) are left out, and
// so are directories' link counts.
func readTree(t *testing.T, dir string, untimed ...string) map[string]treeEntry {
	t.Helper()
	out := map[string]treeEntry{}
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		sys := fi.Sys().(*syscall.Stat_t)
		e := treeEntry{Mode: fi.Mode(), UID: sys.Uid, GID: sys.Gid, MTime: fi.ModTime().UnixNano()}
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.Content, e.Nlink = string(b), uint64(sys.Nlink)
		case fi.Mode()&fs.ModeSymlink != 0:
			if e.Link, err = os.Readlink(p); err != nil {
				return err
			}
			e.Nlink = uint64(sys.Nlink)
		case !fi.IsDir():
			e.Nlink = uint64(sys.Nlink)
		}
		if slices.Contains(untimed, rel) {
			e.MTime = 0
		}
		out[rel] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// mountedTree mounts the snapshot top of r's namespace read-only (a View)
// and reads it (readTree).
func mountedTree(t *testing.T, r *Runner, top string, untimed ...string) map[string]treeEntry {
	t.Helper()
	ctx, done, err := r.Client().WithLease(r.withNamespace(context.Background()))
	if err != nil {
		t.Fatal(err)
	}
	defer done(context.Background())
	sn := r.Client().SnapshotService(r.Snapshotter())
	key := testenv.Unique("view")
	ms, err := sn.View(ctx, key, top)
	if err != nil {
		t.Fatalf("a view of %s: %v", top, err)
	}
	defer sn.Remove(ctx, key)
	dir := t.TempDir()
	if err := mount.All(ms, dir); err != nil {
		t.Fatalf("mounting %v: %v", ms, err)
	}
	defer func() {
		if err := mount.UnmountAll(dir, 0); err != nil {
			t.Errorf("unmounting the view of %s: %v", top, err)
		}
	}()
	return readTree(t, dir, untimed...)
}

// snapshotNames are the namespace's snapshots of kind, by name.
func snapshotNames(t *testing.T, r *Runner, kind snapshots.Kind) []string {
	t.Helper()
	var out []string
	err := r.Client().SnapshotService(r.Snapshotter()).Walk(r.withNamespace(context.Background()), func(_ context.Context, info snapshots.Info) error {
		if info.Kind == kind {
			out = append(out, info.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// diffIDs are the diff ids of img's config.
func diffIDs(t *testing.T, img v1.Image) []digest.Digest {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	var out []digest.Digest
	for _, d := range cf.RootFS.DiffIDs {
		out = append(out, digest.Digest(d.String()))
	}
	return out
}

// chainIDs are the chain ids of img's layers, sorted.
func chainIDs(t *testing.T, img v1.Image) []string {
	t.Helper()
	ids := diffIDs(t, img)
	var out []string
	for i := range ids {
		out = append(out, identity.ChainID(ids[:i+1]).String())
	}
	slices.Sort(out)
	return out
}

// gzipBytes compresses b.
func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// layerDigests are the digests of img's layer blobs.
func layerDigests(t *testing.T, img v1.Image) []digest.Digest {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var out []digest.Digest
	for _, l := range ls {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, digest.Digest(d.String()))
	}
	return out
}

// The two layers of TestIntegrationUnpackFromStore: the upper one deletes
// a file and a directory of the lower, makes a directory opaque, adds a
// file under a directory only the lower names (its parent's mode and time
// come from the lower), and adds files of several kinds and modes.
var (
	lowerLayer = []tarEntry{
		{name: "etc/", typ: tar.TypeDir, mode: 0o751, mtime: testMTime - 1000},
		{name: "etc/config", mode: 0o644, body: "v1\n"},
		{name: "etc/other", mode: 0o644, body: "other\n"},
		{name: "gone.txt", mode: 0o644, body: "deleted by the upper layer\n"},
		{name: "gonedir/", typ: tar.TypeDir, mode: 0o755},
		{name: "gonedir/a", mode: 0o644, body: "a\n"},
		{name: "gonedir/sub/", typ: tar.TypeDir, mode: 0o755},
		{name: "gonedir/sub/b", mode: 0o644, body: "b\n"},
		{name: "opaque/", typ: tar.TypeDir, mode: 0o755},
		{name: "opaque/old1", mode: 0o644, body: "old\n"},
		{name: "opaque/olddir/", typ: tar.TypeDir, mode: 0o755},
		{name: "opaque/olddir/x", mode: 0o644, body: "x\n"},
		{name: "keep.txt", mode: 0o644, body: "keep\n", mtime: testMTime - 5},
		// A hard link's header sets its inode's mode and time as well.
		{name: "hard", typ: tar.TypeLink, link: "keep.txt", mode: 0o644, mtime: testMTime - 5},
	}
	upperLayer = []tarEntry{
		{name: ".wh.gone.txt"},
		{name: ".wh.gonedir"},
		{name: "etc/config", mode: 0o640, body: "v2\n", uid: 1000, gid: 1000},
		{name: "opaque/", typ: tar.TypeDir, mode: 0o750, mtime: testMTime + 7},
		{name: "opaque/.wh..wh..opq"},
		{name: "opaque/new1", mode: 0o600, body: "new\n", uid: 1000, gid: 1001},
		{name: "opaque/newdir/", typ: tar.TypeDir, mode: 0o700},
		{name: "opaque/newdir/y", mode: 0o444, body: "y\n"},
		{name: "bin/", typ: tar.TypeDir, mode: 0o755},
		{name: "bin/tool", mode: 0o755, body: "#!/bin/sh\necho tool\n"},
		{name: "bin/suid", mode: 0o4755, body: "suid\n"},
		{name: "link", typ: tar.TypeSymlink, link: "keep.txt", mtime: testMTime + 3},
		{name: "abs", typ: tar.TypeSymlink, link: "/etc/config"},
		{name: "dangling", typ: tar.TypeSymlink, link: "nowhere"},
		{name: "fifo", typ: tar.TypeFifo, mode: 0o620},
		{name: "empty", mode: 0o644},
	}
)

// TestIntegrationUnpackFromStore: an import unpacks each layer straight
// from the store's file into its snapshot, never writing it to
// containerd's content store, and the result is what containerd's own
// unpack makes: the same chain ids and, mounted, the same tree, whiteouts
// (a file, a directory, an opaque directory) applied. A layer whose bytes
// do not match the image's diff id, or the store's digest, is refused and
// leaves no snapshot.
func TestIntegrationUnpackFromStore(t *testing.T) {
	addr := testenv.RequireContainerd(t)
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const ref = "127.0.0.1:5000/ssebench-unpack/whiteouts:1"
	fromStore := newTestRunner(t, addr, WithNamespace(testNamespace(t, addr)), WithStore(st))
	inDaemon := newTestRunner(t, addr, WithNamespace(testNamespace(t, addr)), WithStore(st), withUnpackInDaemon())
	img := writeImage(t, st, fromStore, ref, tarLayer(t, lowerLayer), tarLayer(t, upperLayer))
	chains := chainIDs(t, img)
	top := identity.ChainID(diffIDs(t, img))

	trees := map[string]map[string]treeEntry{}
	for _, c := range []struct {
		name      string
		r         *Runner
		fromStore int
	}{{"from the store", fromStore, 2}, {"in containerd", inDaemon, 0}} {
		got, err := c.r.Import(ctx, ref)
		if err != nil {
			t.Fatalf("Import %s: %v", c.name, err)
		}
		t.Logf("import %s (%s): %+v", c.name, c.r.Snapshotter(), got.Stats)
		s := got.Stats
		if s.Layers != 2 || s.LayersUnpacked != 2 || s.LayersFromStore != c.fromStore {
			t.Errorf("import %s: %+v, want 2 layers unpacked, %d of them from the store", c.name, s, c.fromStore)
		}
		cs := c.r.Client().ContentStore()
		for _, d := range layerDigests(t, img) {
			_, err := cs.Info(c.r.withNamespace(ctx), d)
			if c.fromStore > 0 && !errdefs.IsNotFound(err) {
				t.Errorf("import %s: containerd's content store has layer %s (%v), want it read from the store only", c.name, d, err)
			}
			if c.fromStore == 0 && err != nil {
				t.Errorf("import %s: layer %s is not in containerd's content store: %v", c.name, d, err)
			}
		}
		if diff := cmp.Diff(chains, snapshotNames(t, c.r, snapshots.KindCommitted)); diff != "" {
			t.Errorf("import %s: committed snapshots (-chain ids +got):\n%s", c.name, diff)
		}
		if left := snapshotNames(t, c.r, snapshots.KindActive); len(left) > 0 {
			t.Errorf("import %s: active snapshots left: %v", c.name, left)
		}
		// The root and etc, which the upper layer writes into without
		// naming, are as new as the unpack (the applier gives etc the
		// lower layer's mode and owner).
		trees[c.name] = mountedTree(t, c.r, top.String(), ".", "etc")
	}

	tree := trees["from the store"]
	if diff := cmp.Diff(trees["in containerd"], tree); diff != "" {
		t.Errorf("the unpacked image (-containerd's unpack +from the store):\n%s", diff)
	}
	var names []string
	for p := range tree {
		names = append(names, p)
		if strings.HasPrefix(filepath.Base(p), ".wh.") {
			t.Errorf("whiteout %s is visible in the unpacked image", p)
		}
	}
	slices.Sort(names)
	t.Logf("unpacked tree: %v", names)
	for _, p := range []string{"gone.txt", "gonedir", "gonedir/a", "opaque/old1", "opaque/olddir"} {
		if _, ok := tree[p]; ok {
			t.Errorf("%s, which the upper layer deletes, is in the unpacked image", p)
		}
	}
	var opaque []string
	for _, p := range names {
		if strings.HasPrefix(p, "opaque/") {
			opaque = append(opaque, p)
		}
	}
	if diff := cmp.Diff([]string{"opaque/new1", "opaque/newdir", "opaque/newdir/y"}, opaque); diff != "" {
		t.Errorf("the opaque directory (-want +got):\n%s", diff)
	}
	want := map[string]treeEntry{
		"etc":         {Mode: fs.ModeDir | 0o751},
		"etc/config":  {Mode: 0o640, UID: 1000, GID: 1000, Nlink: 1, MTime: testMTime * 1e9, Content: "v2\n"},
		"etc/other":   {Mode: 0o644, Nlink: 1, MTime: testMTime * 1e9, Content: "other\n"},
		"opaque":      {Mode: fs.ModeDir | 0o750, MTime: (testMTime + 7) * 1e9},
		"opaque/new1": {Mode: 0o600, UID: 1000, GID: 1001, Nlink: 1, MTime: testMTime * 1e9, Content: "new\n"},
		"bin/suid":    {Mode: fs.ModeSetuid | 0o755, Nlink: 1, MTime: testMTime * 1e9, Content: "suid\n"},
		"keep.txt":    {Mode: 0o644, Nlink: 2, MTime: (testMTime - 5) * 1e9, Content: "keep\n"},
		"hard":        {Mode: 0o644, Nlink: 2, MTime: (testMTime - 5) * 1e9, Content: "keep\n"},
		"link":        {Mode: fs.ModeSymlink | 0o777, Nlink: 1, MTime: (testMTime + 3) * 1e9, Link: "keep.txt"},
		"dangling":    {Mode: fs.ModeSymlink | 0o777, Nlink: 1, MTime: testMTime * 1e9, Link: "nowhere"},
		"fifo":        {Mode: fs.ModeNamedPipe | 0o620, Nlink: 1, MTime: testMTime * 1e9},
	}
	for p, w := range want {
		if diff := cmp.Diff(w, tree[p]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", p, diff)
		}
	}

	// A layer that does not match what the image says it is: refused,
	// and nothing unpacked stays. static.NewLayer's diff id is the digest
	// of the compressed blob, not of the tar in it. The other's file in
	// the store was changed after it was written.
	badDiffID := static.NewLayer(gzipBytes(t, tarBytes(t, []tarEntry{{name: "f", mode: 0o644, body: "diff id\n"}})), types.OCILayer)
	writeImage(t, st, fromStore, "127.0.0.1:5000/ssebench-unpack/bad-diff-id:1", badDiffID)
	tamperedLayer := static.NewLayer(tarBytes(t, []tarEntry{{name: "f", mode: 0o644, body: "tampered with\n"}}), types.OCIUncompressedLayer)
	writeImage(t, st, fromStore, "127.0.0.1:5000/ssebench-unpack/tampered:1", tamperedLayer)
	h, err := tamperedLayer.Digest()
	if err != nil {
		t.Fatal(err)
	}
	blob := st.BlobPath(h)
	b, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("tampered with"))
	if i < 0 {
		t.Fatal("the tampered layer's file lacks its content")
	}
	b[i] = 'T'
	if err := os.Chmod(blob, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blob, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ref, want string
		is        func(error) bool
	}{
		{"127.0.0.1:5000/ssebench-unpack/bad-diff-id:1", "its content has diff id", func(err error) bool { return strings.Contains(err.Error(), "its content has diff id") }},
		{"127.0.0.1:5000/ssebench-unpack/tampered:1", "the store's blob is corrupt", func(err error) bool { return errors.Is(err, store.ErrCorruptBlob) }},
	} {
		for _, daemon := range []bool{false, true} {
			opts := []Option{WithNamespace(testNamespace(t, addr)), WithStore(st)}
			if daemon {
				opts = append(opts, withUnpackInDaemon())
			}
			r := newTestRunner(t, addr, opts...)
			got, err := r.Import(ctx, c.ref)
			t.Logf("Import(%s), unpacked in containerd %v: %v", c.ref, daemon, err)
			if err == nil {
				t.Errorf("Import(%s), unpacked in containerd %v: %+v, want an error", c.ref, daemon, got.Stats)
			} else if !c.is(err) {
				t.Errorf("Import(%s), unpacked in containerd %v: error %v, want one saying %s", c.ref, daemon, err, c.want)
			}
			if left := append(snapshotNames(t, r, snapshots.KindCommitted), snapshotNames(t, r, snapshots.KindActive)...); len(left) > 0 {
				t.Errorf("Import(%s), unpacked in containerd %v: snapshots left: %v", c.ref, daemon, left)
			}
		}
	}
}
