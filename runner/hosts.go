package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// hostsPath is where a container looks names up before DNS.
const hostsPath = "/etc/hosts"

// loopbackHosts is a restricted run's /etc/hosts: its own loopback under
// the names tests dial. Images rarely carry one (Docker writes it into
// every container, BuildKit into every RUN step, and neither commits it),
// and without it "localhost" does not resolve in a network namespace with
// no DNS: a task's tests that listen on localhost failed here and passed
// on Kubernetes, whose kubelet writes the file.
const loopbackHosts = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"

// hostsDir holds the one file every restricted run mounts, read-only: in
// /run, which only root writes, so that no other user of the machine can
// put another file (or a link) in its place between the write and the
// mount. A variable for the tests.
var hostsDir = "/run/ssebench"

// withLoopbackHosts mounts loopbackHosts at /etc/hosts, read-only: the
// agent cannot point localhost elsewhere for the grader's scripts that
// run after it in the same container.
func withLoopbackHosts(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
	file, err := ensureHostsFile()
	if err != nil {
		return err
	}
	s.Mounts = append(s.Mounts, specs.Mount{
		Type: "bind", Source: file, Destination: hostsPath,
		Options: []string{"rbind", "rprivate", "ro"},
	})
	return nil
}

// ensureHostsFile writes the hosts file unless it is there with the right
// content, atomically, and returns its path.
func ensureHostsFile() (string, error) {
	file := filepath.Join(hostsDir, "hosts")
	if b, err := os.ReadFile(file); err == nil && bytes.Equal(b, []byte(loopbackHosts)) {
		if fi, err := os.Lstat(file); err == nil && fi.Mode().IsRegular() {
			return file, nil
		}
	}
	if err := os.MkdirAll(hostsDir, 0o755); err != nil {
		return "", fmt.Errorf("writing the containers' /etc/hosts: %w (ssebench runs containers as root)", err)
	}
	tmp, err := os.CreateTemp(hostsDir, ".hosts-*")
	if err != nil {
		return "", fmt.Errorf("writing the containers' /etc/hosts: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(loopbackHosts); err != nil {
		tmp.Close()
		return "", fmt.Errorf("writing the containers' /etc/hosts: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return "", fmt.Errorf("writing the containers' /etc/hosts: %w", err)
	}
	return file, nil
}
