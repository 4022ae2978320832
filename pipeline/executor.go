package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// Backends a run can use (--backend, SSEBENCH_BACKEND; SPEC.md section 15).
const (
	BackendContainerd = "containerd"
	BackendKubernetes = "kubernetes"
)

// BackendEnv is the variable that chooses the backend when --backend is
// not given.
const BackendEnv = "SSEBENCH_BACKEND"

// ParseBackend parses a --backend value; empty means containerd.
func ParseBackend(s string) (string, error) {
	switch s {
	case "", BackendContainerd:
		return BackendContainerd, nil
	case BackendKubernetes:
		return BackendKubernetes, nil
	}
	return "", fmt.Errorf("unknown backend %q: want %s or %s", s, BackendContainerd, BackendKubernetes)
}

// Executor runs one run's container: runner.Runner on this machine's
// containerd, or a Job on a cluster (kube.Runner). Run has the contract of
// runner.Runner.Run: the container's exit status in the Result (non-zero
// is not an error), the mounts' folders holding the results afterwards,
// and nothing of the run left behind. What else a backend can do it
// declares by implementing an optional interface (SidecarRunner).
type Executor interface {
	Run(ctx context.Context, spec runner.RunSpec) (*runner.Result, error)
	Close() error
}

// SidecarRunner is an Executor that can run sidecar mode's two containers
// (SPEC.md section 7): both run at once on this machine, and a folder in
// one's root file system can be bind-mounted into the other (the task
// container's SOURCE_DIR into the agent container). A backend declares it
// by implementing RootFS; runner.Runner does, and a cluster's Executor
// (kube.Runner), whose containers are on other machines, does not: sidecar
// mode is refused there.
type SidecarRunner interface {
	Executor
	// RootFS returns where the root file system of the running container
	// id is on this machine.
	RootFS(id string) (string, error)
}

var _ SidecarRunner = (*runner.Runner)(nil)

// Cluster opens the Executor of a run on a cluster, for the run's
// platform ("linux/amd64").
type Cluster interface {
	Open(ctx context.Context, platform string) (Executor, error)
}

// executor is the run's Executor: the cluster's, else containerd's.
func (e *Env) executor(ctx context.Context, req RunRequest, platform string) (Executor, error) {
	if req.Cluster != nil {
		return req.Cluster.Open(ctx, platform)
	}
	ropts := []runner.Option{runner.WithStore(e.Store), runner.WithPlatform(platform)}
	// containerd pulls with ssebench's own plain-HTTP policy.
	if acc, err := remote.New(e.RegistryOptions...); err == nil {
		ropts = append(ropts, runner.WithPlainHTTP(acc.PlainHTTP))
	}
	if req.ContainerdAddr != "" {
		ropts = append(ropts, runner.WithAddress(req.ContainerdAddr))
	}
	return runner.New(ctx, ropts...)
}

// ErrLocalOnly means a run on a cluster was asked to run an image that
// only this machine's store holds.
var ErrLocalOnly = errors.New("a cluster pulls its images from a registry")

// clusterImage is the agent image a cluster runs, pinned by digest: the
// one pushed with --registry, or the prebuilt one's digest in its
// registry. An image in the local store only is refused.
func (e *Env) clusterImage(ctx context.Context, req RunRequest, agentName string, ri *RunImages) (string, error) {
	if ri != nil {
		if !req.ViaRegistry {
			return "", fmt.Errorf("%w, and %s is in the local store only: pass --registry (one the cluster reaches, e.g. --registry localhost:5000/ssebench) to push it there first", ErrLocalOnly, agentName)
		}
		return ri.Agent, nil
	}
	_, desc, err := remote.Fetch(ctx, agentName, e.RegistryOptions...)
	if err != nil {
		return "", fmt.Errorf("%w, and the prebuilt image %s is not in the registry (%v): push it there (ssebench push) or build it with --registry", ErrLocalOnly, agentName, err)
	}
	return agentName + "@" + desc.Digest.String(), nil
}
