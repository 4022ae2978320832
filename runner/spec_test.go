package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/google/go-cmp/cmp"
	"github.com/opencontainers/runtime-spec/specs-go"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

func TestRunSpecValidate(t *testing.T) {
	dir := t.TempDir()
	ok := RunSpec{Image: "localhost:5000/x:1"}
	for _, tc := range []struct {
		name    string
		edit    func(*RunSpec)
		wantErr string
	}{
		{name: "no image", edit: func(s *RunSpec) { s.Image = " " }, wantErr: "no image"},
		{name: "bad ID", edit: func(s *RunSpec) { s.ID = "a b" }, wantErr: `invalid container ID "a b"`},
		{name: "long ID", edit: func(s *RunSpec) { s.ID = strings.Repeat("a", 77) }, wantErr: "invalid container ID"},
		{name: "bad network", edit: func(s *RunSpec) { s.Network = "host" }, wantErr: "unknown network"},
		{name: "env without =", edit: func(s *RunSpec) { s.Env = []string{"A=1", "B"} }, wantErr: `invalid environment entry "B"`},
		{name: "env without key", edit: func(s *RunSpec) { s.Env = []string{"=1"} }, wantErr: "invalid environment entry"},
		{name: "empty label key", edit: func(s *RunSpec) { s.Labels = map[string]string{"": "x"} }, wantErr: "empty key"},
		{name: "relative source", edit: func(s *RunSpec) { s.Mounts = []Mount{{Source: "results", Target: "/r"}} }, wantErr: "host path must be absolute"},
		{name: "missing source", edit: func(s *RunSpec) { s.Mounts = []Mount{{Source: filepath.Join(dir, "nope"), Target: "/r"}} }, wantErr: "no such file"},
		{name: "relative target", edit: func(s *RunSpec) { s.Mounts = []Mount{{Source: dir, Target: "r"}} }, wantErr: "container path must be absolute"},
		{name: "root target", edit: func(s *RunSpec) { s.Mounts = []Mount{{Source: dir, Target: "/r/.."}} }, wantErr: "not /"},
		{name: "two mounts on one path", edit: func(s *RunSpec) {
			s.Mounts = []Mount{{Source: dir, Target: "/r"}, {Source: dir, Target: "/r/"}}
		}, wantErr: "two mounts on /r"},
		{name: "empty command", edit: func(s *RunSpec) { s.Entrypoint = []string{} }, wantErr: "empty command"},
		{name: "valid", edit: func(s *RunSpec) {
			s.ID = "run-1.x_y"
			s.Env = []string{"A=", "B=c=d"}
			s.Mounts = []Mount{{Source: dir, Target: "/var/lib/ssebench/results"}}
			s.Entrypoint = []string{}
			s.Args = []string{"true"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			tc.edit(&s)
			got, err := s.validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("validate() = %v, want nil", err)
				}
				if got.ID != s.ID || got.Network != NetworkRestricted {
					t.Errorf("validate() = ID %q, network %q; want %q, %q", got.ID, got.Network, s.ID, NetworkRestricted)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("validate() error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestRunSpecGeneratedID(t *testing.T) {
	a, err := RunSpec{Image: "x"}.validate()
	if err != nil {
		t.Fatal(err)
	}
	b, err := RunSpec{Image: "x"}.validate()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^ssebench-[0-9a-f]{12}$`).MatchString(a.ID) || a.ID == b.ID {
		t.Errorf("generated IDs %q and %q, want two different ssebench-<12 hex>", a.ID, b.ID)
	}
}

// generate builds the OCI spec for s the way containerd does, minus the
// image config, which needs a snapshot to resolve users.
func generate(t *testing.T, s RunSpec) *oci.Spec {
	t.Helper()
	s, err := s.validate()
	if err != nil {
		t.Fatalf("validate: %v", err)
	}
	ctx := namespaces.WithNamespace(context.Background(), "ssebench")
	spec, err := oci.GenerateSpec(ctx, nil, &containers.Container{ID: s.ID}, s.specOpts(nil)...)
	if err != nil {
		t.Fatalf("GenerateSpec: %v", err)
	}
	return spec
}

func networkNamespace(s *oci.Spec) (specs.LinuxNamespace, bool) {
	for _, ns := range s.Linux.Namespaces {
		if ns.Type == specs.NetworkNamespace {
			return ns, true
		}
	}
	return specs.LinuxNamespace{}, false
}

func mountsAt(s *oci.Spec, targets ...string) []specs.Mount {
	var out []specs.Mount
	for _, m := range s.Mounts {
		for _, t := range targets {
			if m.Destination == t {
				out = append(out, m)
			}
		}
	}
	return out
}

func TestSpecNetwork(t *testing.T) {
	t.Run("restricted", func(t *testing.T) {
		old := hostsDir
		hostsDir = t.TempDir()
		t.Cleanup(func() { hostsDir = old })
		s := generate(t, RunSpec{Image: "x"})
		ns, ok := networkNamespace(s)
		if !ok || ns.Path != "" {
			t.Errorf("network namespace = %+v, %v; want a new one (no path)", ns, ok)
		}
		// The host's files are never mounted: only ssebench's own hosts
		// file, which names nothing but the container's loopback, read-only.
		var got []string
		for _, m := range mountsAt(s, "/etc/hosts", "/etc/resolv.conf") {
			got = append(got, fmt.Sprintf("%s->%s %v", m.Source, m.Destination, m.Options))
		}
		want := []string{filepath.Join(hostsDir, "hosts") + "->/etc/hosts [rbind rprivate ro nosuid nodev]"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("restricted run's network file mounts (-want +got):\n%s", diff)
		}
		b, err := os.ReadFile(filepath.Join(hostsDir, "hosts"))
		if err != nil || string(b) != loopbackHosts {
			t.Errorf("hosts file = %q, %v; want only the loopback names", b, err)
		}
	})
	t.Run("open", func(t *testing.T) {
		s := generate(t, RunSpec{Image: "x", Network: NetworkOpen})
		if ns, ok := networkNamespace(s); ok {
			t.Errorf("network namespace %+v, want the host's (none in the spec)", ns)
		}
		var got []string
		for _, m := range mountsAt(s, "/etc/hosts", "/etc/resolv.conf") {
			got = append(got, m.Source+"->"+m.Destination)
		}
		want := []string{"/etc/hosts->/etc/hosts", "/etc/resolv.conf->/etc/resolv.conf"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("network file mounts (-want +got):\n%s", diff)
		}
	})
}

func TestSpecProcess(t *testing.T) {
	results, archive := t.TempDir(), t.TempDir()
	s := generate(t, RunSpec{
		Image:      "x",
		Entrypoint: []string{"/usr/local/bin/sse-entrypoint"},
		Args:       []string{"python3", "agent.py"},
		Env:        []string{"SSE_DIFFICULTY=2", "PATH=/opt/bin"},
		User:       "1000:1000",
		Mounts: []Mount{
			{Source: results, Target: "/var/lib/ssebench/results"},
			{Source: archive, Target: "/tmp/sse-archive/", ReadOnly: true},
		},
	})
	if diff := cmp.Diff([]string{"/usr/local/bin/sse-entrypoint", "python3", "agent.py"}, s.Process.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"SSE_DIFFICULTY=2", "PATH=/opt/bin"}, s.Process.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
	if s.Process.User.UID != 1000 || s.Process.User.GID != 1000 {
		t.Errorf("user = %+v, want 1000:1000", s.Process.User)
	}
	want := []specs.Mount{
		{Destination: "/var/lib/ssebench/results", Type: "bind", Source: results, Options: []string{"rbind", "rprivate", "rw", "nosuid", "nodev"}},
		{Destination: "/tmp/sse-archive", Type: "bind", Source: archive, Options: []string{"rbind", "rprivate", "ro", "nosuid", "nodev"}},
	}
	if diff := cmp.Diff(want, mountsAt(s, "/var/lib/ssebench/results", "/tmp/sse-archive")); diff != "" {
		t.Errorf("bind mounts (-want +got):\n%s", diff)
	}
}

func TestSpecArgsOnly(t *testing.T) {
	s := generate(t, RunSpec{Image: "x", Args: []string{"sh", "-c", "exit 3"}})
	if diff := cmp.Diff([]string{"sh", "-c", "exit 3"}, s.Process.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
}

// TestSpecLimits: a run's limits become the container's cgroup settings,
// swap no more than memory; no limits, no settings.
func TestSpecLimits(t *testing.T) {
	s := generate(t, RunSpec{Image: "x", Limits: contract.Limits{MemoryBytes: 1 << 30, Pids: 512, CPUs: 1.5}})
	r := s.Linux.Resources
	if r == nil || r.Memory == nil || r.Memory.Limit == nil || *r.Memory.Limit != 1<<30 || r.Memory.Swap == nil || *r.Memory.Swap != 1<<30 {
		t.Fatalf("memory = %+v, want limit and swap 1Gi", r)
	}
	if r.Pids == nil || r.Pids.Limit == nil || *r.Pids.Limit != 512 {
		t.Errorf("pids = %+v, want 512", r.Pids)
	}
	if r.CPU == nil || r.CPU.Quota == nil || *r.CPU.Quota != 150000 || r.CPU.Period == nil || *r.CPU.Period != 100000 {
		t.Errorf("cpu = %+v, want 150000/100000", r.CPU)
	}
	none := generate(t, RunSpec{Image: "x"})
	if r := none.Linux.Resources; r != nil && (r.Memory != nil && r.Memory.Limit != nil || r.Pids != nil && r.Pids.Limit != nil) {
		t.Errorf("no limits asked, got %+v", r)
	}
}

// TestSpecHardened: every container has containerd's default seccomp
// profile (no keyctl, bpf, userfaultfd, io_uring for the agent's code or
// root's), with the namespaces and mounts the grade's sandbox needs
// allowed, and every bind mount, containerd's own too, nosuid and nodev.
func TestSpecHardened(t *testing.T) {
	dir := t.TempDir()
	for _, network := range []Network{NetworkRestricted, NetworkOpen} {
		s := generate(t, RunSpec{Image: "x", Network: network, Mounts: []Mount{{Source: dir, Target: "/var/lib/ssebench/results"}}})
		sc := s.Linux.Seccomp
		if sc == nil || sc.DefaultAction != specs.ActErrno {
			t.Fatalf("%s: seccomp = %+v, want the default profile (refuse what it does not allow)", network, sc)
		}
		allowed := map[string]bool{}
		for _, r := range sc.Syscalls {
			if r.Action == specs.ActAllow && len(r.Args) == 0 {
				for _, n := range r.Names {
					allowed[n] = true
				}
			}
		}
		for _, n := range []string{"read", "clone", "unshare", "mount", "umount2", "prctl", "setresuid"} {
			if !allowed[n] {
				t.Errorf("%s: seccomp does not allow %s", network, n)
			}
		}
		for _, n := range []string{"keyctl", "add_key", "bpf", "userfaultfd", "io_uring_setup", "kexec_load", "open_by_handle_at"} {
			if allowed[n] {
				t.Errorf("%s: seccomp allows %s", network, n)
			}
		}
		n := 0
		for _, m := range s.Mounts {
			if m.Type != "bind" {
				continue
			}
			n++
			if !slices.Contains(m.Options, "nosuid") || !slices.Contains(m.Options, "nodev") {
				t.Errorf("%s: bind mount %s has options %v, want nosuid and nodev", network, m.Destination, m.Options)
			}
		}
		if n < 2 {
			t.Errorf("%s: %d bind mounts, want the results and a hosts file", network, n)
		}
	}
}
