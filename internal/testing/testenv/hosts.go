package testenv

import (
	"bytes"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
)

// hostsFile is where the resolver of this machine (and of its daemons:
// buildkitd, containerd) finds host names.
const hostsFile = "/etc/hosts"

var hostsMu sync.Mutex

// HostAlias makes name a second name of 127.0.0.1 in /etc/hosts for the
// test, and returns host:port of the shared registry under that name: a
// registry that is plain HTTP but not loopback by name, as a lab mirror
// would be. It needs root (to write /etc/hosts); without it the test is
// skipped, or fails under CI=true. The line is removed at cleanup.
func HostAlias(t testing.TB, name string) string {
	t.Helper()
	reg := RequireRegistry(t)
	_, port, err := net.SplitHostPort(reg)
	if err != nil {
		t.Fatalf("registry %q is not host:port: %v", reg, err)
	}
	if os.Geteuid() != 0 {
		if inCI() {
			t.Fatalf("HostAlias needs root to write %s", hostsFile)
		}
		t.Skipf("skipping: HostAlias needs root to write %s", hostsFile)
	}
	line := "127.0.0.1 " + name + " # ssebench test " + t.Name() + "\n"
	hostsMu.Lock()
	defer hostsMu.Unlock()
	old, err := os.ReadFile(hostsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !hasHost(old, name) {
		// Write in place: /etc/hosts may be a bind mount that a rename
		// would not replace.
		if err := os.WriteFile(hostsFile, append(bytes.TrimRight(old, "\n"), append([]byte("\n"), line...)...), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			hostsMu.Lock()
			defer hostsMu.Unlock()
			cur, err := os.ReadFile(hostsFile)
			if err != nil {
				return
			}
			_ = os.WriteFile(hostsFile, bytes.Replace(cur, []byte(line), nil, 1), 0o644)
		})
	}
	return net.JoinHostPort(name, port)
}

func hasHost(hosts []byte, name string) bool {
	for _, l := range strings.Split(string(hosts), "\n") {
		if i := strings.IndexByte(l, '#'); i >= 0 {
			l = l[:i]
		}
		f := strings.Fields(l)
		for _, h := range f[min(1, len(f)):] {
			if h == name {
				return true
			}
		}
	}
	return false
}

func inCI() bool { return os.Getenv(ciEnv) == "true" }

// Need skips t when ok is false, for the reason why (what the machine
// lacks and how to get it), except under CI=true, where a missing
// prerequisite fails the test: CI must run everything.
func Need(t testing.TB, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if inCI() {
		t.Fatalf("CI=true and %s", why)
	}
	t.Skip(why)
}
