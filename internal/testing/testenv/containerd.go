package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"
)

// ssebenchNamespace is the runner's default namespace (runner.DefaultNamespace;
// testenv imports nothing of ours).
const ssebenchNamespace = "ssebench"

// cleanupTimeout bounds a test's clean-up of containerd.
const cleanupTimeout = 2 * time.Minute

// Unique returns prefix-<8 random hex digits>: a name (a registry
// prefix, a namespace) no other test, here or in another checkout running
// at the same time, uses, so that a test's clean-up removes only its own.
func Unique(prefix string) string {
	b := make([]byte, 4)
	rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// ContainerdNamespace returns a fresh containerd namespace named
// prefix-<8 hex digits>, which is emptied (containers, images, leases) and
// removed when the test ends: a test that runs images in a namespace of its
// own leaves nothing behind, even when it fails.
func ContainerdNamespace(t testing.TB, addr, prefix string) string {
	t.Helper()
	ns := Unique(prefix)
	t.Cleanup(func() {
		c, err := client.New(addr, client.WithDefaultNamespace(ns))
		if err != nil {
			t.Errorf("cleaning containerd namespace %s: %v", ns, err)
			return
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.Background(), ns), cleanupTimeout)
		defer cancel()
		empty(ctx, c, func(string) bool { return true })
		var derr error
		for range 20 {
			if derr = c.NamespaceService().Delete(ctx, ns); derr == nil || errdefs.IsNotFound(derr) {
				return
			}
			// What the collector has not removed yet keeps the namespace.
			collect(ctx, c)
			time.Sleep(250 * time.Millisecond)
		}
		t.Errorf("removing containerd namespace %s: %v", ns, derr)
	})
	return ns
}

// RemoveImagesAfter removes, when the test ends, the containers and images
// whose image name contains part (the test's registry prefix, such as
// "/ssebench-e2e-1a2b3c4d") from ssebench's containerd namespace, for
// tests that run through the CLI or the pipeline, which work there. part
// must be the test's own, so that other tests' images stay. With no
// containerd (addr empty) it does nothing.
func RemoveImagesAfter(t testing.TB, addr, part string) {
	t.Helper()
	if addr == "" {
		return
	}
	if part == "" || part == "/" {
		t.Fatalf("RemoveImagesAfter: %q would match every image", part)
	}
	t.Cleanup(func() {
		c, err := client.New(addr, client.WithDefaultNamespace(ssebenchNamespace))
		if err != nil {
			t.Errorf("cleaning containerd: %v", err)
			return
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.Background(), ssebenchNamespace), cleanupTimeout)
		defer cancel()
		empty(ctx, c, func(image string) bool { return strings.Contains(image, part) })
	})
}

// empty removes the containers (with their tasks and snapshots) and image
// records of the namespace on ctx whose image match says yes, the expired
// leases when it says yes to everything, and runs the garbage collector.
func empty(ctx context.Context, c *client.Client, match func(image string) bool) {
	ctrs, _ := c.Containers(ctx)
	for _, ctr := range ctrs {
		info, err := ctr.Info(ctx, client.WithoutRefreshedMetadata)
		if err != nil || !match(info.Image) {
			continue
		}
		if task, err := ctr.Task(ctx, nil); err == nil {
			task.Delete(ctx, client.WithProcessKill)
		}
		ctr.Delete(ctx, client.WithSnapshotCleanup)
	}
	imgs, _ := c.ImageService().List(ctx)
	for _, img := range imgs {
		if match(img.Name) {
			c.ImageService().Delete(ctx, img.Name)
		}
	}
	if match("") {
		ls, _ := c.LeasesService().List(ctx)
		for _, l := range ls {
			c.LeasesService().Delete(ctx, l)
		}
		// Snapshots a test made by hand (a leaked unpack's, say) that the
		// collector keeps: children first, so a few rounds.
		for _, name := range []string{"overlayfs", "native"} {
			sn := c.SnapshotService(name)
			for range 5 {
				var keys []string
				sn.Walk(ctx, func(_ context.Context, info snapshots.Info) error {
					keys = append(keys, info.Name)
					return nil
				})
				if len(keys) == 0 {
					break
				}
				for _, k := range keys {
					sn.Remove(ctx, k)
				}
			}
		}
	}
	collect(ctx, c)
}

// collect runs containerd's garbage collector now (deleting a lease
// synchronously does), so that a test's content and snapshots are gone
// when it ends.
func collect(ctx context.Context, c *client.Client) {
	ls := c.LeasesService()
	l, err := ls.Create(ctx, leases.WithRandomID(), leases.WithExpiration(time.Minute))
	if err != nil {
		return
	}
	ls.Delete(ctx, l, leases.SynchronousDelete)
}
