package runner

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// TestIntegration runs the OS image with the shared containerd. One test
// with subtests shares the import (about 30 MB) and a fresh namespace,
// which is removed at the end.
func TestIntegration(t *testing.T) {
	addr := testenv.RequireContainerd(t)
	osImage := testenv.OSImage(t)
	ctx := context.Background()

	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(osImage)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("reading %s: %v", osImage, err)
	}
	if err := st.Write(ctx, ref, img); err != nil {
		t.Fatalf("writing %s to the store: %v", osImage, err)
	}

	ns := testNamespace(t, addr)
	r := newTestRunner(t, addr, WithNamespace(ns), WithStore(st))
	t.Logf("containerd %s, snapshotter %s, platform %s", r.ServerVersion(), r.Snapshotter(), r.Platform())

	t.Run("import writes only what is missing", func(t *testing.T) {
		first, err := r.Import(ctx, osImage)
		if err != nil {
			t.Fatalf("Import: %v", err)
		}
		t.Logf("first import: %+v", first.Stats)
		if first.Stats.BlobsWritten == 0 || first.Stats.LayersUnpacked == 0 || first.Stats.LayersUnpacked != first.Stats.Layers {
			t.Errorf("first Import into a fresh namespace: stats %+v, want every blob written and every layer unpacked", first.Stats)
		}
		// The lease is gone; a garbage collection now must keep every
		// blob and snapshot, held by the image record alone.
		forceGC(t, r, first.Target)
		second, err := r.Import(ctx, osImage)
		if err != nil {
			t.Fatalf("second Import: %v", err)
		}
		t.Logf("second import: %+v", second.Stats)
		if second.Stats.BlobsWritten != 0 || second.Stats.BytesWritten != 0 || second.Stats.LayersUnpacked != 0 {
			t.Errorf("second Import: stats %+v, want nothing written and nothing unpacked", second.Stats)
		}
		if second.Stats.Blobs != first.Stats.Blobs {
			t.Errorf("second Import saw %d blobs, first %d", second.Stats.Blobs, first.Stats.Blobs)
		}
		if second.Target.Digest != first.Target.Digest {
			t.Errorf("second Import target %s, first %s", second.Target.Digest, first.Target.Digest)
		}
	})

	t.Run("output and exit status", func(t *testing.T) {
		var out bytes.Buffer
		res, err := r.Run(ctx, RunSpec{
			Image:  osImage,
			Args:   []string{"sh", "-c", "echo hello; echo oops >&2; exit 3"},
			Output: &out,
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		t.Logf("start-up %s (import %+v), ran %s", res.StartupTime, res.Image.Stats, res.Duration)
		if res.ExitCode != 3 {
			t.Errorf("ExitCode = %d, want 3", res.ExitCode)
		}
		// stdout and stderr share one output; their order is not kept.
		if got := out.String(); len(got) != len("hello\noops\n") || !strings.Contains(got, "hello\n") || !strings.Contains(got, "oops\n") {
			t.Errorf("output = %q, want hello and oops", got)
		}
		if res.Image.Stats.BlobsWritten != 0 || res.Image.Stats.LayersUnpacked != 0 {
			t.Errorf("Run of an imported image: import stats %+v, want nothing written or unpacked", res.Image.Stats)
		}
		assertGone(t, r, res.ContainerID)
	})

	t.Run("the end of both streams arrives", func(t *testing.T) {
		// Both streams end together as the process exits; a shim that
		// closes the shared output when stdout ends drops stderr's tail.
		for i := 0; i < 5; i++ {
			var out bytes.Buffer
			_, err := r.Run(ctx, RunSpec{
				Image:  osImage,
				Args:   []string{"sh", "-c", "seq 1 100000; seq 1 50000 >&2; echo last >&2"},
				Output: &out,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			// 588895 bytes of stdout, 288894 + 5 of stderr.
			if out.Len() != 588895+288894+5 || !strings.Contains(out.String(), "\nlast\n") {
				t.Fatalf("run %d: %d bytes of output, want 877794 ending with stderr's last line", i, out.Len())
			}
		}
	})

	t.Run("env, labels and keep", func(t *testing.T) {
		id := "runner-test-keep"
		labels := map[string]string{"ssebench.task-id": "t-1", "ssebench.run-id": "r-1"}
		out := run(t, r, RunSpec{
			Image:  osImage,
			ID:     id,
			Args:   []string{"sh", "-c", `echo "$SSE_DIFFICULTY $TIMEOUT $PATH"`},
			Env:    []string{"SSE_DIFFICULTY=2", "TIMEOUT=3600"},
			Labels: labels,
			Keep:   true,
		}, 0)
		if !strings.HasPrefix(out, "2 3600 /") {
			t.Errorf("output = %q, want the environment and the image's PATH", out)
		}
		c, err := r.Client().LoadContainer(r.withNamespace(ctx), id)
		if err != nil {
			t.Fatalf("kept container: %v", err)
		}
		t.Cleanup(func() { removeContainer(t, r, id) })
		got, err := c.Labels(r.withNamespace(ctx))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(labels, got); diff != "" {
			t.Errorf("container labels (-want +got):\n%s", diff)
		}
		if _, err := r.Client().SnapshotService(r.Snapshotter()).Stat(r.withNamespace(ctx), id); err != nil {
			t.Errorf("kept snapshot: %v", err)
		}
		_, err = r.Run(ctx, RunSpec{Image: osImage, ID: id, Args: []string{"true"}})
		if !errdefs.IsAlreadyExists(err) || !strings.Contains(err.Error(), "ctr -n "+ns+" containers rm "+id) {
			t.Errorf("Run with the ID of a kept container: error %v, want ErrAlreadyExists saying how to remove it", err)
		}
	})

	t.Run("bind mounts", func(t *testing.T) {
		rw, ro := t.TempDir(), t.TempDir()
		if err := os.WriteFile(filepath.Join(ro, "in"), []byte("input\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := run(t, r, RunSpec{
			Image: osImage,
			Args:  []string{"sh", "-c", "cat /in/in; echo written > /out/result; if touch /in/x 2>/dev/null; then echo ro-writable; fi"},
			Mounts: []Mount{
				{Source: rw, Target: "/out"},
				{Source: ro, Target: "/in", ReadOnly: true},
			},
		}, 0)
		if out != "input\n" {
			t.Errorf("output = %q, want the read-only file's content and no write to it", out)
		}
		b, err := os.ReadFile(filepath.Join(rw, "result"))
		if err != nil || string(b) != "written\n" {
			t.Errorf("file written through the rw mount: %q, %v; want %q", b, err, "written\n")
		}
	})

	t.Run("restricted network has only loopback", func(t *testing.T) {
		out := run(t, r, RunSpec{Image: osImage, Args: []string{"cat", "/proc/net/dev"}}, 0)
		if diff := cmp.Diff([]string{"lo"}, interfaces(out)); diff != "" {
			t.Errorf("interfaces (-want +got):\n%s", diff)
		}
	})

	t.Run("restricted network resolves localhost", func(t *testing.T) {
		// Go tests of a task that listen on localhost need it; the
		// file is read-only, so the agent cannot point it elsewhere for
		// the grader's scripts.
		out := run(t, r, RunSpec{Image: osImage, Args: []string{"sh", "-c", "getent hosts localhost; if echo x 2>/dev/null >> /etc/hosts; then echo WRITABLE; fi"}}, 0)
		// getent hosts prefers ::1; either is the container's loopback.
		if !(strings.HasPrefix(out, "::1 ") || strings.HasPrefix(out, "127.0.0.1 ")) || strings.Contains(out, "WRITABLE") {
			t.Errorf("output %q, want localhost on the loopback and /etc/hosts read-only", out)
		}
	})

	t.Run("open network is the host's", func(t *testing.T) {
		host, err := os.ReadFile("/proc/net/dev")
		if err != nil {
			t.Fatal(err)
		}
		out := run(t, r, RunSpec{
			Image:   osImage,
			Args:    []string{"sh", "-c", "cat /proc/net/dev; echo ---; cat /etc/resolv.conf"},
			Network: NetworkOpen,
		}, 0)
		dev, resolv, _ := strings.Cut(out, "---\n")
		if diff := cmp.Diff(interfaces(string(host)), interfaces(dev)); diff != "" {
			t.Errorf("interfaces (-host +container):\n%s", diff)
		}
		if hostResolv, err := os.ReadFile("/etc/resolv.conf"); err == nil && resolv != string(hostResolv) {
			t.Errorf("/etc/resolv.conf = %q, want the host's %q", resolv, hostResolv)
		}
	})

	// The disk limit: what uid 1000 writes, to the writable layer or to a
	// writable mount, past the limit gets its writer killed; root's
	// processes (the entrypoint in a real run) go on and see it.
	for _, where := range []string{"layer", "mount"} {
		t.Run("disk limit kills the unprivileged writers/"+where, func(t *testing.T) {
			out := t.TempDir()
			if err := os.Chmod(out, 0o777); err != nil {
				t.Fatal(err)
			}
			dir := "/tmp"
			if where == "mount" {
				dir = "/out"
			}
			script := `setpriv --reuid 1000 --regid 1000 --clear-groups sh -c 'i=0; while [ $i -lt 4000 ]; do head -c 1048576 /dev/zero >> ` + dir + `/fill || exit 3; i=$((i+1)); done'; echo "writer exit $?"; echo "root still here"`
			var stdout bytes.Buffer
			res, err := r.Run(ctx, RunSpec{
				Image: osImage, Args: []string{"sh", "-c", script}, Output: &stdout,
				Mounts: []Mount{{Source: out, Target: "/out"}},
				Limits: contract.Limits{DiskBytes: 64 << 20},
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Killed != contract.KilledDisk {
				t.Errorf("Killed = %q, want %q; output %q", res.Killed, contract.KilledDisk, stdout.String())
			}
			// The shell's "Killed" may come before or after.
			if got := stdout.String(); !strings.Contains(got, "writer exit 137\nroot still here\n") {
				t.Errorf("output = %q, want the writer killed (137) and root going on", got)
			}
		})
	}

	// An inode bomb: empty files cost no blocks, but each is charged as
	// a small file, so 40,000 of them pass a 64 MiB limit.
	t.Run("disk limit counts empty files", func(t *testing.T) {
		script := `setpriv --reuid 1000 --regid 1000 --clear-groups sh -c 'mkdir /tmp/b && cd /tmp/b && i=0; while [ $i -lt 400 ]; do touch $(seq -f "f$i-%g" 1 100) || exit 3; i=$((i+1)); done; sleep 5'; echo "writer exit $?"`
		var stdout bytes.Buffer
		res, err := r.Run(ctx, RunSpec{Image: osImage, Args: []string{"sh", "-c", script}, Output: &stdout, Limits: contract.Limits{DiskBytes: 64 << 20}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Killed != contract.KilledDisk {
			t.Errorf("Killed = %q, want %q; output %q", res.Killed, contract.KilledDisk, stdout.String())
		}
	})

	t.Run("user", func(t *testing.T) {
		out := run(t, r, RunSpec{Image: osImage, User: "1000:1000", Args: []string{"id", "-u"}}, 0)
		if out != "1000\n" {
			t.Errorf("id -u = %q, want 1000", out)
		}
	})

	t.Run("cancel kills with SIGKILL after the stop timeout", func(t *testing.T) {
		fast := newTestRunner(t, addr, WithNamespace(ns), WithStore(st), WithStopTimeout(time.Second))
		// sleep is PID 1 and has no SIGTERM handler, so the kernel ignores
		// SIGTERM and only SIGKILL ends it.
		res, err, elapsed := runUntilReady(t, fast, RunSpec{
			Image: osImage,
			ID:    "runner-test-cancel",
			Args:  []string{"sh", "-c", "echo ready; exec sleep 600"},
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run after cancel: error %v, want one matching context.Canceled", err)
		}
		if !res.Stopped || res.ExitCode != 137 {
			t.Errorf("Result = %+v, want Stopped and exit code 137 (SIGKILL)", res)
		}
		if elapsed > 10*time.Second {
			t.Errorf("stopping took %s, want about the 1s stop timeout", elapsed)
		}
		assertGone(t, r, "runner-test-cancel")
	})

	t.Run("cancel sends SIGTERM first", func(t *testing.T) {
		res, err, elapsed := runUntilReady(t, r, RunSpec{
			Image: osImage,
			Args:  []string{"sh", "-c", "trap 'exit 7' TERM; echo ready; while :; do sleep 0.1; done"},
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run after cancel: error %v, want one matching context.Canceled", err)
		}
		if res.ExitCode != 7 {
			t.Errorf("ExitCode = %d, want 7 from the TERM trap", res.ExitCode)
		}
		if elapsed > DefaultStopTimeout/2 {
			t.Errorf("stopping took %s, want well under the %s stop timeout", elapsed, DefaultStopTimeout)
		}
		assertGone(t, r, res.ContainerID)
	})

	t.Run("pull", func(t *testing.T) {
		pr := newTestRunner(t, addr, WithNamespace(testNamespace(t, addr)))
		first, err := pr.Pull(ctx, osImage)
		if err != nil {
			t.Fatalf("Pull: %v", err)
		}
		t.Logf("first pull: %+v", first.Stats)
		if first.Stats.BlobsWritten == 0 || first.Stats.LayersUnpacked != first.Stats.Layers || first.Stats.Layers == 0 {
			t.Errorf("first Pull into a fresh namespace: stats %+v, want blobs fetched and every layer unpacked", first.Stats)
		}
		var stdout bytes.Buffer
		res, err := pr.Run(ctx, RunSpec{Image: osImage, Pull: true, Args: []string{"echo", "pulled"}, Output: &stdout})
		if err != nil {
			t.Fatalf("Run with Pull: %v", err)
		}
		t.Logf("run with pull: start-up %s, %+v", res.StartupTime, res.Image.Stats)
		if res.ExitCode != 0 || stdout.String() != "pulled\n" {
			t.Errorf("Run with Pull: exit %d, output %q; want 0, %q", res.ExitCode, stdout.String(), "pulled\n")
		}
		if s := res.Image.Stats; s.BlobsWritten != 0 || s.LayersUnpacked != 0 {
			t.Errorf("second pull: stats %+v, want nothing fetched or unpacked", s)
		}
	})

	t.Run("multi-platform index", func(t *testing.T) {
		// An index whose other platform's manifest is not even in the
		// store: only the run platform's blobs may be read.
		other, err := random.Image(64, 1)
		if err != nil {
			t.Fatal(err)
		}
		host, err := v1.ParsePlatform(r.Platform())
		if err != nil {
			t.Fatal(err)
		}
		idx := mutate.AppendManifests(empty.Index,
			mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "s390x"}}},
			mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: host}},
		)
		iref := name.MustParseReference("localhost:5000/ssebench-runner-test/multi:1")
		if err := st.WriteIndex(ctx, iref, idx); err != nil {
			t.Fatal(err)
		}
		otherDigest, err := other.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(st.BlobPath(otherDigest)); err != nil {
			t.Fatal(err)
		}
		var stdout bytes.Buffer
		res, err := r.Run(ctx, RunSpec{Image: iref.String(), Args: []string{"echo", "multi"}, Output: &stdout})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if stdout.String() != "multi\n" {
			t.Errorf("output = %q, want %q", stdout.String(), "multi\n")
		}
		// The index is new; the host manifest, its config and layer are
		// already in containerd.
		if s := res.Image.Stats; s.BlobsWritten != 1 || s.Blobs != 4 || s.LayersUnpacked != 0 {
			t.Errorf("import stats %+v, want 4 blobs of which only the index written, no layer unpacked", s)
		}
	})

	t.Run("native snapshotter", func(t *testing.T) {
		nr := newTestRunner(t, addr, WithNamespace(ns), WithStore(st), WithSnapshotter(SnapshotterNative))
		if got := run(t, nr, RunSpec{Image: osImage, Args: []string{"echo", "native"}}, 0); got != "native\n" {
			t.Errorf("output = %q, want %q", got, "native\n")
		}
	})

	t.Run("image not in the store", func(t *testing.T) {
		_, err := r.Run(ctx, RunSpec{Image: "127.0.0.1:5000/ssebench/missing:1", Args: []string{"true"}})
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Run of a missing image: error %v, want one matching store.ErrNotFound", err)
		}
	})
}

func newTestRunner(t *testing.T, addr string, opts ...Option) *Runner {
	t.Helper()
	r, err := New(context.Background(), append([]Option{WithAddress(addr)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// run runs spec and checks its exit code; it returns stdout.
func run(t *testing.T, r *Runner, spec RunSpec, wantCode int) string {
	t.Helper()
	var stdout bytes.Buffer
	spec.Output = &stdout
	res, err := r.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run(%q): %v", spec.Args, err)
	}
	if res.ExitCode != wantCode {
		t.Fatalf("Run(%q): exit code %d, want %d; output %q", spec.Args, res.ExitCode, wantCode, stdout.String())
	}
	if !spec.Keep {
		assertGone(t, r, res.ContainerID)
	}
	return stdout.String()
}

// runUntilReady runs spec, cancels it once it prints "ready" and returns
// what Run returned and how long stopping took.
func runUntilReady(t *testing.T, r *Runner, spec RunSpec) (*Result, error, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &readyWriter{ready: make(chan struct{})}
	spec.Output = w
	type ret struct {
		res *Result
		err error
	}
	done := make(chan ret, 1)
	go func() {
		res, err := r.Run(ctx, spec)
		done <- ret{res, err}
	}()
	select {
	case <-w.ready:
	case got := <-done:
		t.Fatalf("Run returned before the container was ready: %+v, %v", got.res, got.err)
	case <-time.After(time.Minute):
		t.Fatal("the container did not print ready within a minute")
	}
	start := time.Now()
	cancel()
	got := <-done
	elapsed := time.Since(start)
	t.Logf("stopped in %s", elapsed)
	if got.res == nil {
		t.Fatalf("Run after cancel returned no result: %v", got.err)
	}
	return got.res, got.err, elapsed
}

type readyWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	ready chan struct{}
	once  sync.Once
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), "ready\n") {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

// interfaces lists the interface names of a /proc/net/dev.
func interfaces(procNetDev string) []string {
	var names []string
	for _, line := range strings.Split(procNetDev, "\n") {
		if n, _, ok := strings.Cut(line, ":"); ok && !strings.Contains(n, "|") {
			names = append(names, strings.TrimSpace(n))
		}
	}
	sort.Strings(names)
	return names
}

// assertGone checks that a run left no container, task or snapshot.
func assertGone(t *testing.T, r *Runner, id string) {
	t.Helper()
	ctx := r.withNamespace(context.Background())
	if _, err := r.Client().LoadContainer(ctx, id); !errdefs.IsNotFound(err) {
		t.Errorf("container %s after the run: %v, want not found", id, err)
	}
	if _, err := r.Client().TaskService().Get(ctx, nil); err == nil {
		t.Errorf("a task exists after the run")
	}
	if _, err := r.Client().SnapshotService(r.Snapshotter()).Stat(ctx, id); !errdefs.IsNotFound(err) {
		t.Errorf("snapshot %s after the run: %v, want not found", id, err)
	}
}

func removeContainer(t *testing.T, r *Runner, id string) {
	t.Helper()
	ctx := r.withNamespace(context.Background())
	c, err := r.Client().LoadContainer(ctx, id)
	if err != nil {
		return
	}
	if err := c.Delete(ctx, client.WithSnapshotCleanup); err != nil {
		t.Errorf("removing kept container %s: %v", id, err)
	}
}

// testNamespace returns a fresh containerd namespace that is emptied and
// removed when the test ends.
func testNamespace(t *testing.T, addr string) string {
	t.Helper()
	return testenv.ContainerdNamespace(t, addr, "ssebench-test-runner")
}

// forceGC makes containerd collect garbage now: deleting an image record
// synchronously runs the collector.
func forceGC(t *testing.T, r *Runner, target ocispec.Descriptor) {
	t.Helper()
	ctx := r.withNamespace(context.Background())
	is := r.Client().ImageService()
	if _, err := is.Create(ctx, images.Image{Name: "gc-trigger", Target: target}); err != nil {
		t.Fatal(err)
	}
	if err := is.Delete(ctx, "gc-trigger", images.SynchronousDelete()); err != nil {
		t.Fatal(err)
	}
}

// TestIntegrationPullInsecureRegistry pulls the OS image from the shared
// registry under a name that is not loopback (registry.test): containerd
// reaches it over plain HTTP only when ssebench's policy (the hosts of
// --insecure-registry) says so.
func TestIntegrationPullInsecureRegistry(t *testing.T) {
	addr := testenv.RequireContainerd(t)
	osImage := testenv.OSImage(t)
	reg := testenv.HostAlias(t, "registry.test")
	host, _, _ := net.SplitHostPort(reg)
	ctx := context.Background()
	src, err := name.ParseReference(osImage)
	if err != nil {
		t.Fatal(err)
	}
	ref := reg + "/" + src.Context().RepositoryStr() + ":" + src.Identifier()

	plain := newTestRunner(t, addr, WithNamespace(testNamespace(t, addr)))
	if _, err := plain.Pull(ctx, ref); err == nil {
		t.Fatalf("pulling %s without the policy succeeded: the test cannot tell", ref)
	}
	r := newTestRunner(t, addr, WithNamespace(testNamespace(t, addr)), WithPlainHTTP(func(h string) bool { return h == reg || h == host }))
	var stdout bytes.Buffer
	res, err := r.Run(ctx, RunSpec{Image: ref, Pull: true, Args: []string{"echo", "insecure"}, Output: &stdout})
	if err != nil {
		t.Fatalf("Run with Pull from %s marked plain HTTP: %v", ref, err)
	}
	if res.ExitCode != 0 || stdout.String() != "insecure\n" {
		t.Errorf("Run: exit %d, output %q; want 0, %q", res.ExitCode, stdout.String(), "insecure\n")
	}
}
