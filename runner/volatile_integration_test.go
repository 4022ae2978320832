package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/errdefs"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

// rootMountOptions are the file system type and the mount and super
// options of the mount at / in a /proc/self/mountinfo, or ok false.
func rootMountOptions(mountinfo string) (fstype string, opts []string, ok bool) {
	// 36 35 98:0 / / rw,noatime master:1 - overlay overlay rw,lowerdir=...
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, found := strings.Cut(line, " - ")
		f := strings.Fields(pre)
		if !found || len(f) < 6 || f[4] != "/" {
			continue
		}
		p := strings.Fields(post)
		if len(p) < 3 {
			continue
		}
		fstype = p[0]
		opts = append(strings.Split(f[5], ","), strings.Split(p[2], ",")...)
		ok = true // the last mount at / is the one seen
	}
	return fstype, opts, ok
}

// volatile says mount options include overlayfs's volatile (spelled
// fsync=volatile by Linux 6.6 and later).
func volatile(opts []string) bool {
	return slices.Contains(opts, "volatile") || slices.Contains(opts, "fsync=volatile")
}

// TestIntegrationVolatileRoot: a container that is thrown away (Keep
// false) gets its root overlay mounted volatile, holds its snapshot by a
// gc.ref label (a garbage collection during the run leaves it), and leaves
// no snapshot behind; a kept container's root is an ordinary mount, named
// by its snapshot key, and WithRootCleanup removes either kind.
func TestIntegrationVolatileRoot(t *testing.T) {
	addr := testenv.RequireContainerd(t)
	st, osImage := osImageStore(t)
	r := newTestRunner(t, addr, WithNamespace(testNamespace(t, addr)), WithStore(st))
	// Under CI=true a machine without volatile roots fails the test.
	testenv.Need(t, r.Snapshotter() == SnapshotterOverlayFS && kernelHasVolatile(),
		fmt.Sprintf("snapshotter %s, volatile overlays %v: no volatile roots here", r.Snapshotter(), kernelHasVolatile()))
	ctx := r.withNamespace(context.Background())
	sn := r.Client().SnapshotService(r.Snapshotter())
	label := gcRefSnapshot + r.Snapshotter()

	t.Run("thrown away", func(t *testing.T) {
		const id = "ssebench-volatile-1"
		var (
			during  containers.Container
			infoErr error
			statErr error
		)
		// The task writes to its root after the collector has run.
		out := run(t, r, RunSpec{
			Image: osImage, ID: id,
			Args: []string{"sh", "-c", "cat /proc/self/mountinfo; sleep 1; echo written > /marker && cat /marker"},
			Started: func(uint32) {
				c, err := r.Client().LoadContainer(ctx, id)
				if err != nil {
					infoErr = err
					return
				}
				if during, infoErr = c.Info(ctx); infoErr != nil {
					return
				}
				if infoErr = r.collectGarbage(ctx); infoErr != nil {
					return
				}
				_, statErr = sn.Stat(ctx, id)
			},
		}, 0)
		if infoErr != nil {
			t.Fatalf("reading the container during the run: %v", infoErr)
		}
		if during.SnapshotKey != "" || during.Labels[label] != id {
			t.Errorf("container during the run: snapshot key %q, labels %v; want no key and %s=%s", during.SnapshotKey, during.Labels, label, id)
		}
		if statErr != nil {
			t.Errorf("after a garbage collection during the run, snapshot %s: %v; want it held by the container's label", id, statErr)
		}
		fstype, opts, ok := rootMountOptions(out)
		if !ok || fstype != "overlay" || !volatile(opts) {
			t.Errorf("the container's root: %s %v (found %v), want a volatile overlay; mountinfo:\n%s", fstype, opts, ok, out)
		}
		if !strings.HasSuffix(out, "\nwritten\n") {
			t.Errorf("output %q, want the write to the root after the collection to work", out)
		}
		// Checked at once, before any collection: the run removed it.
		var left []string
		sn.Walk(ctx, func(_ context.Context, info snapshots.Info) error {
			if info.Name == id || info.Kind != snapshots.KindCommitted {
				left = append(left, info.Name+" ("+info.Kind.String()+")")
			}
			return nil
		})
		if len(left) > 0 {
			t.Errorf("snapshots left after the run: %v", left)
		}
	})

	t.Run("kept", func(t *testing.T) {
		const id = "ssebench-volatile-kept"
		t.Cleanup(func() { removeContainer(t, r, id) })
		out := run(t, r, RunSpec{Image: osImage, ID: id, Args: []string{"cat", "/proc/self/mountinfo"}, Keep: true}, 0)
		fstype, opts, ok := rootMountOptions(out)
		if !ok || fstype != "overlay" || volatile(opts) {
			t.Errorf("a kept container's root: %s %v (found %v), want an overlay, not volatile (it may be mounted again)", fstype, opts, ok)
		}
		c, err := r.Client().LoadContainer(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.SnapshotKey != id || info.Labels[label] != "" {
			t.Errorf("kept container: snapshot key %q, labels %v; want key %s and no %s", info.SnapshotKey, info.Labels, id, label)
		}
		if err := c.Delete(ctx, WithRootCleanup); err != nil {
			t.Fatalf("deleting the kept container with WithRootCleanup: %v", err)
		}
		if _, err := sn.Stat(ctx, id); !errdefs.IsNotFound(err) {
			t.Errorf("snapshot %s after deleting its container with WithRootCleanup: %v, want not found", id, err)
		}
	})
}
