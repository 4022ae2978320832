#!/usr/bin/env bash
# k8s-down.sh stops the test cluster that scripts/k8s-up.sh started, as
# root, and leaves the machine as it was: the pods' containers killed, the
# daemons stopped (by their pid files only), leftover mounts unmounted, the
# bridge and the kubepods cgroups removed, the sysctls kubelet rewrote
# restored, the cluster's state (etcd's data, kubelet's and containerd's
# roots) deleted. The cached binaries and the certificates stay, so the next
# k8s-up.sh takes seconds.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=scripts/lib.sh
source "$here/lib.sh"
# shellcheck source=scripts/k8s-lib.sh
source "$here/k8s-lib.sh"

require_root
take_lock
rm -f "$K8S_KUBECONFIG"

# kubelet first, so that it restarts nothing; then every container of the
# CRI instance, sandboxes included.
stop_daemon k8s-kubelet
if [ -S "$K8S_CONTAINERD_SOCKET" ]; then
	c=(ctr --address "$K8S_CONTAINERD_SOCKET" -n k8s.io)
	for t in $("${c[@]}" tasks ls -q 2>/dev/null); do
		"${c[@]}" tasks kill -s SIGKILL "$t" >/dev/null 2>&1 || true
	done
	for _ in $(seq 1 40); do
		"${c[@]}" tasks ls 2>/dev/null | awk 'NR > 1 && $3 == "RUNNING"' | grep -q . || break
		sleep 0.25
	done
	for t in $("${c[@]}" tasks ls -q 2>/dev/null); do
		"${c[@]}" tasks delete -f "$t" >/dev/null 2>&1 || true
	done
	for ctr_id in $("${c[@]}" containers ls -q 2>/dev/null); do
		"${c[@]}" containers delete "$ctr_id" >/dev/null 2>&1 || true
	done
fi
stop_daemon k8s-kube-proxy
# kube-proxy's chains (KUBE-*), which it removes itself when asked.
[ ! -x "$K8S_BIN/kube-proxy" ] || "$K8S_BIN/kube-proxy" --cleanup >/dev/null 2>&1 || true
stop_daemon k8s-podfilter
# tools/podfilter's chains and their jumps.
for j in "FORWARD -s $K8S_POD_CIDR" "FORWARD -d $K8S_POD_CIDR" "INPUT -s $K8S_POD_CIDR"; do
	# shellcheck disable=SC2086 # the words of the rule
	while iptables -D $j -j SSEBENCH-NETPOL 2>/dev/null; do :; done
done
for c in SSEBENCH-NETPOL SSEBENCH-NETPOL-EG SSEBENCH-NETPOL-IN; do iptables -F "$c" 2>/dev/null || true; done
for c in SSEBENCH-NETPOL SSEBENCH-NETPOL-EG SSEBENCH-NETPOL-IN; do iptables -X "$c" 2>/dev/null || true; done
for d in k8s-containerd k8s-scheduler k8s-controller-manager k8s-apiserver k8s-etcd; do
	stop_daemon "$d"
done

# What the daemons leave: mounts under their state (kubelet's volumes,
# containerd's snapshots and sandboxes' shm), the pods' network
# namespaces, the bridge, the pods' cgroups.
for root in "$K8S_STATE/" "$K8S_RUN/"; do
	awk -v s="$root" 'index($2, s) == 1 { print $2 }' /proc/mounts | sort -r | while read -r mp; do
		mp=$(printf '%b' "$mp")
		umount "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null || true
	done
done
# The CRI names pods' namespaces cni-<uuid>; only pods of this cluster's
# containerd are left (the other containerd runs no CRI pods here).
if [ -d /run/netns ]; then
	for ns in /run/netns/cni-*; do
		[ -e "$ns" ] || continue
		ip netns delete "$(basename "$ns")" 2>/dev/null || { umount "$ns" 2>/dev/null; rm -f "$ns"; } || true
	done
fi
if ip link show "$K8S_BRIDGE" >/dev/null 2>&1; then
	ip link delete "$K8S_BRIDGE" || true
	log "removed bridge $K8S_BRIDGE"
fi
# cgroup v1 has one tree per controller (and the unified one): remove the
# kubepods directories bottom-up; rmdir fails while a process is in one.
for tree in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
	[ -d "$tree/kubepods" ] || [ -d "$tree/kubepods.slice" ] || continue
	# find fails on the one of the two that is missing: that is fine.
	{ find "$tree/kubepods" "$tree/kubepods.slice" -depth -type d 2>/dev/null || true; } | while read -r d; do
		rmdir "$d" 2>/dev/null || true
	done
done
for tree in /sys/fs/cgroup/*/; do
	if [ -d "$tree/kubepods" ]; then
		log "warning: $tree/kubepods is still there (a process is left in it)"
	fi
done

# The sysctls as they were before the first k8s-up.sh.
for f in "$K8S_STATE/sysctl.saved" "$K8S_STATE/sysctl.saved-net"; do
	[ -f "$f" ] || continue
	while IFS= read -r kv; do
		[ -n "$kv" ] && sysctl -qw "$kv" || true
	done <"$f"
done
log "sysctls restored: $(cat "$K8S_STATE/sysctl.saved" "$K8S_STATE/sysctl.saved-net" 2>/dev/null | tr '\n' ' ')"

# State that a new cluster must not inherit; the certificates are kept.
if [ -d "$K8S_STATE" ]; then
	find "$K8S_STATE" -mindepth 1 -maxdepth 1 ! -name pki -exec rm -rf {} + 2>/dev/null || true
fi
rm -rf "$K8S_RUN"
log "kubernetes test cluster: stopped"
