package runner

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/errdefs"
	"golang.org/x/sys/unix"
)

// gcRefSnapshot is the label prefix by which a containerd record holds a
// snapshot (its suffix is the snapshotter) against the garbage collector.
const gcRefSnapshot = "containerd.io/gc.ref.snapshot."

// volatileRoot makes the root file system of container c, whose snapshot
// is key, a volatile overlay mount (Linux 5.10, "volatile" in
// Documentation/filesystems/overlayfs.rst) and returns the mounts its task
// is to be created with; nil when the snapshot is not one overlay mount.
//
// Unmounting an overlay syncs the whole file system of its upper
// directory: on a machine that writes (other runs, a build) the shim's
// task delete waited about a second for it, twice a run, for a root file
// system that is thrown away the moment it is unmounted. containerd 1.6
// cannot be told (its snapshotter took mount_options only in 1.7), and
// its client always adds the snapshot's own mounts when the container
// names a snapshot: so the container holds the snapshot by a gc.ref label
// instead of by its snapshot key, and the mounts go to the task directly.
// A volatile upper directory cannot be mounted again, which a container
// that is thrown away never is.
func (r *Runner) volatileRoot(ctx context.Context, c client.Container, key string) ([]mount.Mount, error) {
	if r.snapshotter != SnapshotterOverlayFS || !kernelHasVolatile() {
		return nil, nil
	}
	ms, err := r.client.SnapshotService(r.snapshotter).Mounts(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("reading the mounts of snapshot %s: %w", key, err)
	}
	if len(ms) != 1 || ms[0].Type != "overlay" {
		// One layer, bind-mounted read-write: nothing to sync.
		return nil, nil
	}
	if !slices.Contains(ms[0].Options, "volatile") {
		ms[0].Options = append(ms[0].Options, "volatile")
	}
	err = c.Update(ctx, func(_ context.Context, _ *client.Client, ci *containers.Container) error {
		if ci.Labels == nil {
			ci.Labels = map[string]string{}
		}
		ci.Labels[gcRefSnapshot+ci.Snapshotter] = ci.SnapshotKey
		ci.SnapshotKey = ""
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("holding snapshot %s by label: %w", key, err)
	}
	return ms, nil
}

// kernelHasVolatile says the kernel's overlayfs takes "volatile" (Linux
// 5.10): an older one refuses the mount, and the container keeps its
// snapshot key and the sync.
var kernelHasVolatile = sync.OnceValue(func() bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	return kernelAtLeast(unix.ByteSliceToString(u.Release[:]), 5, 10)
})

// kernelAtLeast says release ("6.1.0-18-amd64") is major.minor or later.
func kernelAtLeast(release string, major, minor int) bool {
	var ma, mi int
	if n, _ := fmt.Sscanf(release, "%d.%d", &ma, &mi); n != 2 {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// rootSnapshot is the snapshotter and key of c's root file system: its
// snapshot key, else the snapshot its gc.ref label holds (volatileRoot).
func rootSnapshot(c containers.Container) (snapshotter, key string) {
	if c.SnapshotKey != "" {
		return c.Snapshotter, c.SnapshotKey
	}
	if c.Snapshotter != "" {
		return c.Snapshotter, c.Labels[gcRefSnapshot+c.Snapshotter]
	}
	return "", ""
}

// WithRootCleanup is client.WithSnapshotCleanup for the containers of
// Run: it removes the root file system's snapshot of a container being
// deleted, whether the container names it (its snapshot key) or holds it
// by label (a volatile root, see volatileRoot).
func WithRootCleanup(ctx context.Context, cl *client.Client, c containers.Container) error {
	sn, key := rootSnapshot(c)
	if sn == "" || key == "" {
		return nil
	}
	if err := cl.SnapshotService(sn).Remove(ctx, key); err != nil && !errdefs.IsNotFound(err) {
		return err
	}
	return nil
}
