package testenv

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// recorder stands in for the testing.TB given to a Require function so that
// its skips and failures can be observed instead of ending this test. Like
// the real ones, Skipf and Fatalf stop the calling goroutine.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

type outcome struct {
	Value   string
	Skipped bool
	Failed  bool
}

// call runs fn against a recorder on its own goroutine, as the testing
// package runs a test, and reports what happened.
func call(t *testing.T, fn func(testing.TB) string) (outcome, string) {
	t.Helper()
	rec := &recorder{TB: t}
	var got outcome
	done := make(chan struct{})
	go func() {
		defer close(done)
		got.Value = fn(rec)
	}()
	<-done
	got.Skipped, got.Failed = rec.skipped, rec.failed
	return got, rec.msg
}

// listenUnix returns the path of a unix socket that accepts connections.
func listenUnix(t *testing.T) string {
	t.Helper()
	// Unix socket paths are limited to about 100 bytes, which a nested
	// t.TempDir() can exceed; a short directory of our own cannot.
	dir, err := os.MkdirTemp("", "testenv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s.sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listening on %s: %v", path, err)
	}
	t.Cleanup(func() { l.Close() })
	return path
}

// startRegistry serves an in-memory registry and returns its host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

func pushRandomImage(t *testing.T, ref string) {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
}

func TestRequireService(t *testing.T) {
	sock := listenUnix(t)
	tcpListener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcpListener.Close()
	reg := startRegistry(t)
	image := reg + "/ssebench/os/debian:bookworm"
	pushRandomImage(t, image)
	missingSock := filepath.Join(t.TempDir(), "missing.sock")
	closedPort := freeLoopbackAddr(t)

	type probeFunc = func(context.Context, string) error
	tests := []struct {
		name  string
		env   string
		probe probeFunc
		value string // "" leaves the variable unset
		short bool
		ci    string
		want  outcome
	}{
		{name: "buildkit unix socket", env: BuildKitHostEnv, probe: probeBuildKit, value: "unix://" + sock,
			want: outcome{Value: "unix://" + sock}},
		{name: "buildkit tcp", env: BuildKitHostEnv, probe: probeBuildKit, value: "tcp://" + tcpListener.Addr().String(),
			want: outcome{Value: "tcp://" + tcpListener.Addr().String()}},
		{name: "buildkit other scheme is passed on", env: BuildKitHostEnv, probe: probeBuildKit, value: "docker-container://buildkitd",
			want: outcome{Value: "docker-container://buildkitd"}},
		{name: "buildkit without scheme", env: BuildKitHostEnv, probe: probeBuildKit, value: sock,
			want: outcome{Skipped: true}},
		{name: "buildkit unset", env: BuildKitHostEnv, probe: probeBuildKit,
			want: outcome{Skipped: true}},
		{name: "buildkit unset in CI fails", env: BuildKitHostEnv, probe: probeBuildKit, ci: "true",
			want: outcome{Failed: true}},
		{name: "containerd unset in CI fails", env: ContainerdAddressEnv, probe: probeContainerd, ci: "true",
			want: outcome{Failed: true}},
		{name: "registry unset in CI fails", env: RegistryEnv, probe: probeRegistry, ci: "true",
			want: outcome{Failed: true}},
		{name: "os image unset in CI fails", env: OSImageEnv, probe: probeImage, ci: "true",
			want: outcome{Failed: true}},
		{name: "unset in CI under -short skips", env: RegistryEnv, probe: probeRegistry, ci: "true", short: true,
			want: outcome{Skipped: true}},
		{name: "unset with CI=false skips", env: RegistryEnv, probe: probeRegistry, ci: "false",
			want: outcome{Skipped: true}},
		{name: "buildkit short", env: BuildKitHostEnv, probe: probeBuildKit, value: "unix://" + sock, short: true,
			want: outcome{Skipped: true}},
		{name: "buildkit unreachable", env: BuildKitHostEnv, probe: probeBuildKit, value: "unix://" + missingSock,
			want: outcome{Skipped: true}},
		{name: "buildkit unreachable in CI", env: BuildKitHostEnv, probe: probeBuildKit, value: "unix://" + missingSock, ci: "true",
			want: outcome{Failed: true}},
		{name: "containerd path", env: ContainerdAddressEnv, probe: probeContainerd, value: sock,
			want: outcome{Value: sock}},
		{name: "containerd unix address", env: ContainerdAddressEnv, probe: probeContainerd, value: "unix://" + sock,
			want: outcome{Value: "unix://" + sock}},
		{name: "containerd unreachable", env: ContainerdAddressEnv, probe: probeContainerd, value: missingSock,
			want: outcome{Skipped: true}},
		{name: "containerd unreachable in CI", env: ContainerdAddressEnv, probe: probeContainerd, value: missingSock, ci: "true",
			want: outcome{Failed: true}},
		{name: "registry", env: RegistryEnv, probe: probeRegistry, value: reg,
			want: outcome{Value: reg}},
		{name: "registry as URL", env: RegistryEnv, probe: probeRegistry, value: "http://" + reg, ci: "true",
			want: outcome{Failed: true}},
		{name: "registry unreachable", env: RegistryEnv, probe: probeRegistry, value: closedPort,
			want: outcome{Skipped: true}},
		{name: "registry unreachable in CI", env: RegistryEnv, probe: probeRegistry, value: closedPort, ci: "true",
			want: outcome{Failed: true}},
		{name: "os image", env: OSImageEnv, probe: probeImage, value: image,
			want: outcome{Value: image}},
		{name: "os image not pushed", env: OSImageEnv, probe: probeImage, value: reg + "/ssebench/os/debian:trixie",
			want: outcome{Skipped: true}},
		{name: "os image not pushed in CI", env: OSImageEnv, probe: probeImage, value: reg + "/ssebench/os/debian:trixie", ci: "true",
			want: outcome{Failed: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(tt.env, tt.value)
			t.Setenv(ciEnv, tt.ci)
			got, msg := call(t, func(tb testing.TB) string {
				return requireService(tb, tt.short, tt.env, "service", tt.probe)
			})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("requireService(%s=%q, short=%v, CI=%q) (-want +got):\n%s\nmessage: %s", tt.env, tt.value, tt.short, tt.ci, diff, msg)
			}
			// A skip must tell the reader how to get the service.
			if got.Skipped && !tt.short && !strings.Contains(msg, "scripts/setup.sh") {
				t.Errorf("skip message %q does not mention scripts/setup.sh", msg)
			}
			if (got.Skipped || got.Failed) && !tt.short && !strings.Contains(msg, tt.env) {
				t.Errorf("message %q does not name %s", msg, tt.env)
			}
		})
	}
}

// TestRequireFromEnvironment checks the exported functions read the
// documented variables; under -short they must skip whatever is set.
func TestRequireFromEnvironment(t *testing.T) {
	sock := listenUnix(t)
	reg := startRegistry(t)
	image := reg + "/ssebench/os/debian:bookworm"
	pushRandomImage(t, image)
	t.Setenv(BuildKitHostEnv, "unix://"+sock)
	t.Setenv(ContainerdAddressEnv, sock)
	t.Setenv(RegistryEnv, reg)
	t.Setenv(OSImageEnv, image)
	t.Setenv(ciEnv, "")

	tests := []struct {
		name string
		fn   func(testing.TB) string
		want string
	}{
		{"RequireBuildKit", RequireBuildKit, "unix://" + sock},
		{"RequireContainerd", RequireContainerd, sock},
		{"RequireRegistry", RequireRegistry, reg},
		{"OSImage", OSImage, image},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := outcome{Value: tt.want}
			if testing.Short() {
				want = outcome{Skipped: true}
			}
			got, msg := call(t, tt.fn)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s() (-want +got):\n%s\nmessage: %s", tt.name, diff, msg)
			}
		})
	}
}

// TestServicesFromSetup checks the services that scripts/setup.sh started,
// through the variables scripts/test.sh exports: a CI run whose setup left
// one of them unreachable fails here, with the variable's name.
func TestServicesFromSetup(t *testing.T) {
	for _, tt := range []struct {
		name string
		fn   func(testing.TB) string
	}{
		{"RequireBuildKit", RequireBuildKit},
		{"RequireContainerd", RequireContainerd},
		{"RequireRegistry", RequireRegistry},
		{"OSImage", OSImage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.fn(t); got == "" {
				t.Errorf("%s() = %q, want an address", tt.name, got)
			}
		})
	}
}
