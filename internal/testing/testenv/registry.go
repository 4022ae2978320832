// Package testenv starts the daemons that integration tests need and skips
// the test cleanly when they cannot run.
package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// registryBinary is the Debian package's name for the distribution
// registry; RegistryBinEnv may point at another build.
const registryBinary = "docker-registry"

// RegistryBinEnv names an environment variable holding the path of a
// docker-registry (distribution) binary to use instead of the one on PATH.
const RegistryBinEnv = "SSEBENCH_TEST_DOCKER_REGISTRY"

// registryStartTimeout bounds how long the registry may take to answer
// GET /v2/; it starts in well under a second on an idle machine.
const registryStartTimeout = 20 * time.Second

// StartRegistry starts a docker-registry (distribution 2.x) on a free
// loopback port with its storage in t.TempDir(), no auth, and returns its
// host:port (e.g. "127.0.0.1:38519"). The registry is killed when the test
// ends. The test is skipped under -short or when the binary is missing.
func StartRegistry(t testing.TB) string {
	t.Helper()
	return serveRegistry(t, "")
}

// StartAuthRegistry is StartRegistry with htpasswd authentication: only
// user with password may pull or push (basic auth over plain HTTP, as
// distribution allows on loopback).
func StartAuthRegistry(t testing.TB, user, password string) string {
	t.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return serveRegistry(t, user+":"+string(hash)+"\n")
}

// serveRegistry starts the registry; htpasswd, when not "", is the
// content of its htpasswd file.
func serveRegistry(t testing.TB, htpasswd string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping: starts a docker-registry (run without -short)")
	}
	bin := os.Getenv(RegistryBinEnv)
	if bin == "" {
		var err error
		if bin, err = exec.LookPath(registryBinary); err != nil {
			msg := fmt.Sprintf("%s not found on PATH (apt-get install docker-registry, or set %s)", registryBinary, RegistryBinEnv)
			if os.Getenv(ciEnv) == "true" {
				t.Fatalf("%s (CI=true, so this fails instead of skipping)", msg)
			}
			t.Skipf("skipping: %s", msg)
		}
	}
	dir := t.TempDir()
	host := freeLoopbackAddr(t)
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
http:
  addr: %s
`, filepath.Join(dir, "data"), host)
	if htpasswd != "" {
		pw := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(pw, []byte(htpasswd), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg += fmt.Sprintf("auth:\n  htpasswd:\n    realm: ssebench-test\n    path: %s\n", pw)
	}
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var out LockedBuffer
	cmd := exec.Command(bin, "serve", cfgPath)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})

	ctx, cancel := context.WithTimeout(context.Background(), registryStartTimeout)
	defer cancel()
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("%s exited before answering (%v): %s", bin, err, out.String())
		case <-ctx.Done():
			t.Fatalf("%s did not answer GET http://%s/v2/ within %s: %s", bin, host, registryStartTimeout, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/v2/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK || htpasswd != "" && resp.StatusCode == http.StatusUnauthorized {
			return host
		}
	}
}

// freeLoopbackAddr asks the kernel for a free port. Another process could
// take it before the registry binds it; then the registry exits and the
// test fails with its output, which says so.
func freeLoopbackAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// LockedBuffer is a bytes.Buffer safe for concurrent writers: a daemon's
// log, or BuildKit's progress, shown when a test fails.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
