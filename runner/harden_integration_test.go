package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// TestIntegrationHardened runs the OS image with what a run's container
// gets: system calls the default seccomp profile refuses are refused (the
// bare spec let the container's code make them), the grade's sandbox
// (user, mount, network, IPC and PID namespaces, a tmpfs) still works, and
// bind mounts are nosuid and nodev.
func TestIntegrationHardened(t *testing.T) {
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
		t.Fatal(err)
	}
	r := newTestRunner(t, addr, WithNamespace(testNamespace(t, addr)), WithStore(st))

	dir := t.TempDir()
	probe := filepath.Join(dir, "syscallprobe")
	build := exec.Command("go", "build", "-o", probe, "./testdata/syscallprobe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the probe: %v\n%s", err, out)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	mounts := []Mount{{Source: dir, Target: "/probe", ReadOnly: true}}

	t.Run("system calls the profile refuses", func(t *testing.T) {
		hostile.Case(t, "containers get the bare default spec")
		out := run(t, r, RunSpec{Image: osImage, Args: []string{"/probe/syscallprobe"}, Mounts: mounts}, 0)
		for _, call := range []string{"keyctl", "userfaultfd"} {
			if !strings.Contains(out, call+" refused") {
				t.Errorf("%s in the container: %q, want it refused", call, out)
			}
		}
	})

	t.Run("the sandbox's namespaces", func(t *testing.T) {
		// No new /proc: containerd's masked paths of /proc forbid one
		// in a user namespace, seccomp or not (sserun.Sandbox then runs
		// without its PID namespace).
		script := `unshare --user --map-root-user --mount --net --ipc --pid --fork sh -c 'mount -t tmpfs none /tmp && echo sandbox-ok'`
		out := run(t, r, RunSpec{Image: osImage, Args: []string{"sh", "-c", script + " 2>&1"}}, 0)
		if !strings.Contains(out, "sandbox-ok") {
			t.Errorf("namespaces in the container: %q, want them made", out)
		}
	})

	t.Run("bind mounts nosuid and nodev", func(t *testing.T) {
		// containerd's no_new_privs already keeps a setuid bit from
		// working; the mount options hold where a runtime does not.
		out := run(t, r, RunSpec{Image: osImage, Args: []string{"sh", "-c", "grep ' /probe ' /proc/self/mountinfo"}, Mounts: mounts}, 0)
		for _, o := range []string{"nosuid", "nodev"} {
			if !strings.Contains(out, o) {
				t.Errorf("/probe is mounted %q, want %s", strings.TrimSpace(out), o)
			}
		}
	})
}
