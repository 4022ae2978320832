# shellcheck shell=bash
# Settings of the test cluster (scripts/k8s-up.sh, k8s-down.sh). Sourced
# after lib.sh, not run.

# Live state: certificates, etcd's data, kubelet's and containerd's roots.
K8S_STATE="$SSEBENCH_DEV_STATE/k8s"
# Sockets and containerd's state (tmpfs).
K8S_RUN=/run/ssebench-k8s
K8S_CONTAINERD_SOCKET="$K8S_RUN/containerd.sock"
# The admin kubeconfig, present while the cluster is up.
: "${K8S_KUBECONFIG:=$SSEBENCH_DEV_STATE/kubeconfig}"
K8S_NODE=ssebench-node
K8S_ETCD_PORT=2479
K8S_ETCD_PEER_PORT=2480
K8S_APISERVER_PORT=6443
# Addresses of pods and Services: inside this machine only (the bridge
# and the pods' network namespaces are the cluster's own).
K8S_POD_CIDR=10.88.0.0/24
K8S_SERVICE_CIDR=10.96.0.0/24
K8S_SERVICE_IP=10.96.0.1
K8S_BRIDGE=ssebench-cni0
# kubelet rewrites these at start (protectKernelDefaults is off): saved
# by k8s-up.sh, restored by k8s-down.sh.
K8S_SYSCTLS=(vm.overcommit_memory kernel.panic kernel.panic_on_oops)
# The daemons, in the order they start (k8s-down.sh stops them in reverse).
K8S_DAEMONS=(k8s-etcd k8s-apiserver k8s-controller-manager k8s-scheduler k8s-containerd k8s-kubelet k8s-kube-proxy)
export K8S_KUBECONFIG

# k8s_node_ip prints the address kubelet registers: the one of the default
# route (kubelet refuses loopback), else the first global one.
k8s_node_ip() {
	local ip dev
	dev=$(ip -4 route show default 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "dev") { print $(i+1); exit }}')
	[ -z "$dev" ] || ip=$(ip -4 -o addr show dev "$dev" scope global | awk '{ sub("/.*", "", $4); print $4; exit }')
	[ -n "${ip:-}" ] || ip=$(ip -4 -o addr show scope global | awk '$2 != "'"$K8S_BRIDGE"'" { sub("/.*", "", $4); print $4; exit }')
	[ -n "${ip:-}" ] || die "this machine has no IPv4 address other than loopback for the node"
	echo "$ip"
}

# nft_queue_works succeeds when the kernel takes an nftables rule with the
# queue expression (what kube-network-policies sends new connections to),
# tried in a scratch table.
nft_queue_works() {
	local t=ssebench_probe_$$ ok=1
	nft add table inet "$t" 2>/dev/null || return 1
	nft "add chain inet $t c { type filter hook forward priority 0; policy accept; }" 2>/dev/null &&
		nft add rule inet "$t" c meta l4proto tcp queue num 100 bypass 2>/dev/null && ok=0
	nft delete table inet "$t" 2>/dev/null || true
	return "$ok"
}
