package runner

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

func TestMakeOptionsDefaults(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  string
		opts []Option
		want string
	}{
		{name: "default socket", want: DefaultAddress},
		{name: "environment", env: "/tmp/c.sock", want: "/tmp/c.sock"},
		{name: "environment is trimmed", env: " /tmp/c.sock\n", want: "/tmp/c.sock"},
		{name: "flag beats environment", env: "/tmp/c.sock", opts: []Option{WithAddress("/x/d.sock")}, want: "/x/d.sock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(AddressEnv, tc.env)
			o, err := makeOptions(tc.opts...)
			if err != nil {
				t.Fatalf("makeOptions: %v", err)
			}
			if o.address != tc.want {
				t.Errorf("address = %q, want %q", o.address, tc.want)
			}
			if o.namespace != DefaultNamespace || o.snapshotter != "" || o.stopTimeout != DefaultStopTimeout || o.store != nil {
				t.Errorf("defaults = %+v, want namespace %q, no snapshotter choice, stop timeout %s, no store", o, DefaultNamespace, DefaultStopTimeout)
			}
			if o.platform.OS != "linux" || o.platform.Architecture == "" {
				t.Errorf("default platform = %+v, want linux and the host's architecture", o.platform)
			}
		})
	}
}

func TestOptions(t *testing.T) {
	store, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		opt     Option
		check   func(*options) bool
		wantErr string
	}{
		{name: "namespace", opt: WithNamespace("ssebench-ci"), check: func(o *options) bool { return o.namespace == "ssebench-ci" }},
		{name: "bad namespace", opt: WithNamespace("a/b"), wantErr: "invalid containerd namespace"},
		{name: "empty namespace", opt: WithNamespace(""), wantErr: "invalid containerd namespace"},
		{name: "snapshotter", opt: WithSnapshotter("native"), check: func(o *options) bool { return o.snapshotter == "native" }},
		{name: "bad snapshotter", opt: WithSnapshotter("../x"), wantErr: "invalid snapshotter"},
		{name: "empty address", opt: WithAddress(" "), wantErr: "address is empty"},
		{name: "store", opt: WithStore(store), check: func(o *options) bool { return o.store == store }},
		{name: "nil store", opt: WithStore(nil), wantErr: "store is nil"},
		{name: "platform", opt: WithPlatform("linux/arm64"), check: func(o *options) bool {
			return o.platform.OS == "linux" && o.platform.Architecture == "arm64"
		}},
		{name: "platform variant normalised", opt: WithPlatform("linux/aarch64"), check: func(o *options) bool { return o.platform.Architecture == "arm64" }},
		{name: "bad platform", opt: WithPlatform("linux/"), wantErr: "invalid platform"},
		{name: "windows platform", opt: WithPlatform("windows/amd64"), wantErr: "containers run on linux"},
		{name: "keychain", opt: WithKeychain(authn.NewMultiKeychain()), check: func(o *options) bool { return o.keychain != authn.DefaultKeychain }},
		{name: "nil keychain", opt: WithKeychain(nil), wantErr: "keychain is nil"},
		{name: "stop timeout", opt: WithStopTimeout(time.Second), check: func(o *options) bool { return o.stopTimeout == time.Second }},
		{name: "zero stop timeout", opt: WithStopTimeout(0), wantErr: "must be positive"},
		{name: "negative connect timeout", opt: WithConnectTimeout(-time.Second), wantErr: "must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := makeOptions(tc.opt)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("makeOptions() error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("makeOptions: %v", err)
			}
			if !tc.check(o) {
				t.Errorf("option not applied: %+v", o)
			}
		})
	}
}

func TestNewUnreachable(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.sock")

	// A socket file nobody listens on: what a crashed daemon leaves.
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()

	for _, addr := range []string{missing, "unix://" + stale} {
		t.Run(addr, func(t *testing.T) {
			start := time.Now()
			_, err := New(context.Background(), WithAddress(addr))
			if !errors.Is(err, ErrUnreachable) {
				t.Fatalf("New(%s) error = %v, want ErrUnreachable", addr, err)
			}
			want := "cannot reach containerd at " + addr + ": start it with scripts/setup.sh (or set CONTAINERD_ADDRESS)"
			if err.Error() != want {
				t.Errorf("New(%s) error = %q, want %q", addr, err, want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("New took %s to fail, want an immediate error", d)
			}
		})
	}
}

func TestContainerdName(t *testing.T) {
	for _, tc := range []struct{ ref, want string }{
		{"127.0.0.1:5000/ssebench/os/debian:bookworm", "127.0.0.1:5000/ssebench/os/debian:bookworm"},
		{"ghcr.io/42-b3yond-6ug/ssebench/runtime:1.0.0", "ghcr.io/42-b3yond-6ug/ssebench/runtime:1.0.0"},
		{"localhost:5000/ssebench/case/pilot/x", "localhost:5000/ssebench/case/pilot/x:latest"},
		{"debian:bookworm", "docker.io/library/debian:bookworm"},
		{"ghcr.io/a/b@sha256:" + strings.Repeat("ab", 32), "ghcr.io/a/b@sha256:" + strings.Repeat("ab", 32)},
	} {
		ref, err := name.ParseReference(tc.ref)
		if err != nil {
			t.Fatal(err)
		}
		if got := containerdName(ref); got != tc.want {
			t.Errorf("containerdName(%s) = %s, want %s", tc.ref, got, tc.want)
		}
	}
}

func TestParseNetwork(t *testing.T) {
	for in, want := range map[string]Network{"": NetworkRestricted, "restricted": NetworkRestricted, "open": NetworkOpen} {
		got, err := ParseNetwork(in)
		if err != nil || got != want {
			t.Errorf("ParseNetwork(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseNetwork("host"); err == nil || !strings.Contains(err.Error(), `"restricted" or "open"`) {
		t.Errorf(`ParseNetwork("host") error = %v, want one naming the choices`, err)
	}
}

// TestKernelAtLeast: a root file system is volatile only on a kernel whose
// overlayfs takes the option (5.10).
func TestKernelAtLeast(t *testing.T) {
	for rel, want := range map[string]bool{
		"6.1.0-18-amd64": true, "5.10.0": true, "5.9.16": false, "4.19.0-26-amd64": false, "5.15": true, "junk": false, "": false,
	} {
		if got := kernelAtLeast(rel, 5, 10); got != want {
			t.Errorf("kernelAtLeast(%q, 5, 10) = %v, want %v", rel, got, want)
		}
	}
}
