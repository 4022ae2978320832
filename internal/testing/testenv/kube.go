package testenv

import (
	"context"
	"testing"
)

// KubeconfigEnv holds the path of the test cluster's admin kubeconfig,
// written by scripts/k8s-up.sh while the cluster is up.
const KubeconfigEnv = "SSEBENCH_TEST_KUBECONFIG"

// RequireKubernetes returns the test cluster's kubeconfig path from
// SSEBENCH_TEST_KUBECONFIG, with the skip and fail rules of
// RequireBuildKit. probe checks that the cluster answers; it is the
// caller's so that this package does not need client-go.
func RequireKubernetes(t testing.TB, probe func(ctx context.Context, kubeconfig string) error) string {
	t.Helper()
	return requireService(t, testing.Short(), KubeconfigEnv, "Kubernetes cluster", probe)
}
