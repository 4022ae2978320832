package testenv

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Environment variables through which integration tests find the shared
// services that scripts/setup.sh starts; scripts/env.sh exports them and
// scripts/test.sh sets them for `go test`. Tests never hardcode addresses.
const (
	// BuildKitHostEnv holds buildkitd's address, as buildctl takes it
	// (e.g. "unix:///run/buildkit/buildkitd.sock").
	BuildKitHostEnv = "BUILDKIT_HOST"
	// ContainerdAddressEnv holds containerd's socket path
	// (e.g. "/run/containerd/containerd.sock").
	ContainerdAddressEnv = "CONTAINERD_ADDRESS"
	// RegistryEnv holds the host:port of the shared plain-HTTP registry
	// (e.g. "127.0.0.1:5000").
	RegistryEnv = "SSEBENCH_TEST_REGISTRY"
	// OSImageEnv holds the reference of the Debian OS image that base
	// images start FROM, pushed to the shared registry by scripts/os-image.sh.
	OSImageEnv = "SSEBENCH_TEST_OS_IMAGE"
	// ciEnv is set to "true" by CI. There an unset or unreachable service
	// fails the test: a broken setup must not pass as all-skipped.
	ciEnv = "CI"
)

// serviceProbeTimeout bounds each reachability check. The services run on
// this machine, so an answer takes milliseconds when they are up.
const serviceProbeTimeout = 5 * time.Second

const setupHint = "start the services with scripts/setup.sh (as root) and `source scripts/env.sh`, or run scripts/test.sh"

// RequireBuildKit returns buildkitd's address from BUILDKIT_HOST. It skips
// the test under -short, when the variable is unset, or when nothing listens
// there; with CI=true an unset variable or an unreachable address fails the
// test instead (-short still skips).
func RequireBuildKit(t testing.TB) string {
	t.Helper()
	return requireService(t, testing.Short(), BuildKitHostEnv, "buildkitd", probeBuildKit)
}

// RequireContainerd returns containerd's socket path from
// CONTAINERD_ADDRESS, with the same skip and fail rules as RequireBuildKit.
func RequireContainerd(t testing.TB) string {
	t.Helper()
	return requireService(t, testing.Short(), ContainerdAddressEnv, "containerd", probeContainerd)
}

// RequireRegistry returns the shared registry's host:port from
// SSEBENCH_TEST_REGISTRY, with the same skip and fail rules as
// RequireBuildKit. The registry speaks plain HTTP and is shared by every
// test package, so tests push under repository names of their own.
func RequireRegistry(t testing.TB) string {
	t.Helper()
	return requireService(t, testing.Short(), RegistryEnv, "registry", probeRegistry)
}

// OSImage returns the reference of the Debian OS image from
// SSEBENCH_TEST_OS_IMAGE, after checking that its registry has it, with the
// same skip and fail rules as RequireBuildKit.
func OSImage(t testing.TB) string {
	t.Helper()
	return requireService(t, testing.Short(), OSImageEnv, "OS image", probeImage)
}

// requireService holds the rules shared by the Require functions; short is
// a parameter so that the rules can be tested under -short too.
func requireService(t testing.TB, short bool, env, what string, probe func(ctx context.Context, value string) error) string {
	t.Helper()
	if short {
		t.Skipf("skipping: needs %s (run without -short)", what)
	}
	value := os.Getenv(env)
	if value == "" {
		msg := fmt.Sprintf("%s is unset, so there is no %s to test against", env, what)
		if os.Getenv(ciEnv) == "true" {
			// A CI script that forgets an export must not pass green
			// with every integration test skipped.
			t.Fatalf("%s (CI=true, so this fails instead of skipping); %s", msg, setupHint)
		}
		t.Skipf("skipping: %s; %s", msg, setupHint)
	}
	ctx, cancel := context.WithTimeout(context.Background(), serviceProbeTimeout)
	defer cancel()
	if err := probe(ctx, value); err != nil {
		msg := fmt.Sprintf("%s=%s: %s is unreachable: %v", env, value, what, err)
		if os.Getenv(ciEnv) == "true" {
			t.Fatalf("%s (CI=true, so this fails instead of skipping)", msg)
		}
		t.Skipf("skipping: %s; %s", msg, setupHint)
	}
	return value
}

// probeBuildKit dials BuildKit's address. Only unix and tcp addresses are
// checked; other schemes (docker-container://, kube-pod://) are passed on
// for the BuildKit client to resolve.
func probeBuildKit(ctx context.Context, addr string) error {
	u, err := url.Parse(addr)
	if err != nil {
		return fmt.Errorf("parsing address: %w", err)
	}
	switch u.Scheme {
	case "unix":
		return dial(ctx, "unix", u.Path)
	case "tcp":
		return dial(ctx, "tcp", u.Host)
	case "":
		return fmt.Errorf("address %q has no scheme (want unix:// or tcp://)", addr)
	default:
		return nil
	}
}

// probeContainerd dials containerd's socket; like containerd's client it
// accepts a plain path or a unix:// address.
func probeContainerd(ctx context.Context, addr string) error {
	return dial(ctx, "unix", strings.TrimPrefix(addr, "unix://"))
}

func dial(ctx context.Context, network, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// probeRegistry checks that host answers the registry API's version check.
// 401 counts as an answer: it is a registry, one that wants credentials.
func probeRegistry(ctx context.Context, host string) error {
	if strings.Contains(host, "/") {
		return fmt.Errorf("want host:port, got %q", host)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/v2/", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusUnauthorized {
		return fmt.Errorf("GET /v2/ answered %s", resp.Status)
	}
	return nil
}

// probeImage checks that the image's manifest is in its registry.
func probeImage(ctx context.Context, ref string) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	if _, err := remote.Head(r, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("%w (scripts/os-image.sh pushes it)", err)
	}
	return nil
}
