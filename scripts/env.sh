# shellcheck shell=bash
# env.sh exports the variables through which tests and developers find the
# services that scripts/setup.sh starts. Source it:
#
#	source scripts/env.sh
#
# Go tests read only these variables (see internal/testing/testenv);
# nothing in the Go code hardcodes the addresses.
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

export SSEBENCH_TEST_REGISTRY="$SSEBENCH_DEV_REGISTRY_ADDR"
export SSEBENCH_TEST_OS_IMAGE="$OS_IMAGE"
export BUILDKIT_HOST="unix://$BUILDKIT_SOCKET"
export CONTAINERD_ADDRESS="$CONTAINERD_SOCKET"
# buildkitd for anyone starting it by hand; runc for driving containerd.
case ":$PATH:" in
*":$BUILDKIT_BIN:"*) ;;
*) export PATH="$BUILDKIT_BIN:$PATH:/usr/sbin:/sbin" ;;
esac
# The test cluster of scripts/k8s-up.sh, while it is up.
# shellcheck source=scripts/k8s-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/k8s-lib.sh"
if [ -f "$K8S_KUBECONFIG" ]; then
	export SSEBENCH_TEST_KUBECONFIG="$K8S_KUBECONFIG"
else
	unset SSEBENCH_TEST_KUBECONFIG
fi
# Whether it enforces NetworkPolicies (see k8s-up.sh).
if [ -f "$K8S_STATE/netpol-enforced" ]; then
	export SSEBENCH_TEST_NETPOL=1
else
	unset SSEBENCH_TEST_NETPOL
fi
