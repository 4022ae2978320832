#!/usr/bin/env bash
# k8s-up.sh starts a real single-node Kubernetes cluster on this machine for
# the Kubernetes backend's tests, as root, idempotently:
#   etcd            Debian's etcd-server, on 127.0.0.1:2479 (not etcd's usual
#                   port, so a system etcd is left alone)
#   kube-apiserver  on 127.0.0.1:6443, certificates and service-account
#   controller-mgr  keys generated here with openssl
#   kube-scheduler
#   containerd      a second instance with the CRI plugin on its own socket
#                   ($K8S_CONTAINERD_SOCKET), not the one `ssebench run` uses;
#                   it pulls from the local registry over plain HTTP and its
#                   sandbox image is built here (tools/pause)
#   kubelet         cgroupfs driver, cgroup v1 allowed, bridge CNI from
#                   Debian's containernetworking-plugins
# The four Kubernetes binaries come from scripts/k8s-build.sh (cached under
# $SSEBENCH_DEV_CACHE/k8s-<version>/bin; the first build takes about half an
# hour). The admin kubeconfig is written to $K8S_KUBECONFIG, which
# scripts/env.sh exports as SSEBENCH_TEST_KUBECONFIG when it exists.
# scripts/k8s-down.sh stops everything and restores what kubelet changed.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=scripts/lib.sh
source "$here/lib.sh"
# shellcheck source=scripts/k8s-lib.sh
source "$here/k8s-lib.sh"

require_root
start=$(now_s)
# The build has a lock of its own and comes first: holding setup's lock
# for its half hour would stall every other setup on the machine.
bash "$here/k8s-build.sh"
# A cluster whose daemons are all gone but whose state is left (the
# machine or the session was stopped without k8s-down.sh) is cleaned up
# first: its pods' mounts, namespaces and cgroups would confuse the new one.
alive=
for d in "${K8S_DAEMONS[@]}" k8s-podfilter; do
	! pid_alive "$d" || alive=1
done
if [ -z "$alive" ] && [ -d "$K8S_STATE/etcd" ]; then
	log "kubernetes: cleaning up a test cluster that was not stopped"
	bash "$here/k8s-down.sh"
fi
take_lock

install_apt_packages etcd-server containernetworking-plugins iptables nftables openssl curl
# kubectl for debugging and the scripts' waits; any kubectl will do, so an
# installed one (of another packaging) is kept.
command -v kubectl >/dev/null || install_apt_packages kubernetes-client
bash "$here/dev-up.sh" registry

mkdir -p "$K8S_STATE" "$K8S_RUN" "$LOG_DIR" "$RUN_DIR"

# --- what kubelet will change, saved once (k8s-down.sh restores it) ---
if [ ! -f "$K8S_STATE/sysctl.saved" ]; then
	for k in "${K8S_SYSCTLS[@]}"; do
		printf '%s=%s\n' "$k" "$(sysctl -n "$k")"
	done >"$K8S_STATE/sysctl.saved.tmp"
	mv "$K8S_STATE/sysctl.saved.tmp" "$K8S_STATE/sysctl.saved"
fi
# Pods on the bridge must pass through iptables (Services, policies).
modprobe br_netfilter 2>/dev/null || true
modprobe overlay 2>/dev/null || true
[ -f "$K8S_STATE/sysctl.saved-net" ] || {
	printf 'net.ipv4.ip_forward=%s\n' "$(sysctl -n net.ipv4.ip_forward)"
	[ ! -e /proc/sys/net/bridge/bridge-nf-call-iptables ] ||
		printf 'net.bridge.bridge-nf-call-iptables=%s\n' "$(sysctl -n net.bridge.bridge-nf-call-iptables)"
} >"$K8S_STATE/sysctl.saved-net"
sysctl -qw net.ipv4.ip_forward=1
[ ! -e /proc/sys/net/bridge/bridge-nf-call-iptables ] || sysctl -qw net.bridge.bridge-nf-call-iptables=1

# --- certificates and keys ---
pki="$K8S_STATE/pki"
# cert NAME CN O SAN makes NAME.crt and NAME.key in $pki, signed by its CA.
cert() (
	local n=$1 cn=$2 o=$3 san=$4 ext
	cd "$pki"
	umask 077
	ext=$(mktemp)
	{
		echo "basicConstraints=CA:FALSE"
		echo "keyUsage=digitalSignature,keyEncipherment"
		echo "extendedKeyUsage=serverAuth,clientAuth"
		[ -z "$san" ] || echo "subjectAltName=$san"
	} >"$ext"
	local subj="/CN=$cn"
	[ -z "$o" ] || subj="/O=$o/CN=$cn"
	openssl req -newkey rsa:2048 -nodes -keyout "$n.key" -out "$n.csr" -subj "$subj" 2>/dev/null
	openssl x509 -req -in "$n.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$n.crt" -days 3650 -extfile "$ext" 2>/dev/null
	rm -f "$n.csr" "$ext"
)
if [ ! -f "$pki/done" ]; then
	log "kubernetes: generating certificates in $pki"
	rm -rf "$pki"
	mkdir -p "$pki"
	(
		cd "$pki"
		umask 077
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj "/CN=ssebench-test-ca" 2>/dev/null
		openssl genrsa -out sa.key 2048 2>/dev/null
		openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
	)
	node_ip=$(k8s_node_ip)
	cert apiserver kube-apiserver "" "IP:127.0.0.1,IP:$K8S_SERVICE_IP,IP:$node_ip,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
	cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters ""
	cert admin ssebench-admin system:masters ""
	cert controller-manager system:kube-controller-manager "" ""
	cert scheduler system:kube-scheduler "" ""
	cert kubelet "system:node:$K8S_NODE" system:nodes "IP:127.0.0.1,IP:$node_ip,DNS:$K8S_NODE"
	touch "$pki/done"
fi
# kube-proxy's, added to a pki made before it ran here (the bootstrap
# policy binds system:node-proxier to the user system:kube-proxy).
[ -f "$pki/kube-proxy.crt" ] || cert kube-proxy system:kube-proxy "" ""
kubeconfig() { # NAME USER-CERT
	local out="$K8S_STATE/$1.kubeconfig"
	cat >"$out.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: ssebench-test
  cluster:
    server: https://127.0.0.1:$K8S_APISERVER_PORT
    certificate-authority: $pki/ca.crt
users:
- name: $1
  user:
    client-certificate: $pki/$2.crt
    client-key: $pki/$2.key
contexts:
- name: ssebench-test
  context: {cluster: ssebench-test, user: $1}
current-context: ssebench-test
EOF
	chmod 600 "$out.tmp"
	mv "$out.tmp" "$out"
}
kubeconfig admin admin
kubeconfig controller-manager controller-manager
kubeconfig scheduler scheduler
kubeconfig kubelet kubelet
kubeconfig kube-proxy kube-proxy

# --- etcd ---
probe_etcd() { curl -fs --max-time 2 "http://127.0.0.1:$K8S_ETCD_PORT/health" | grep -q '"health":"true"'; }
if ! probe_etcd; then
	start_daemon k8s-etcd etcd --name ssebench-test --data-dir "$K8S_STATE/etcd" \
		--listen-client-urls "http://127.0.0.1:$K8S_ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$K8S_ETCD_PORT" \
		--listen-peer-urls "http://127.0.0.1:$K8S_ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$K8S_ETCD_PEER_PORT" \
		--initial-cluster "ssebench-test=http://127.0.0.1:$K8S_ETCD_PEER_PORT" --listen-metrics-urls ""
	wait_ready k8s-etcd probe_etcd
	log "etcd: started on 127.0.0.1:$K8S_ETCD_PORT"
fi

# --- control plane ---
probe_apiserver() { curl -fs --max-time 2 --cacert "$pki/ca.crt" "https://127.0.0.1:$K8S_APISERVER_PORT/readyz" >/dev/null; }
if ! probe_apiserver; then
	start_daemon k8s-apiserver "$K8S_BIN/kube-apiserver" \
		--bind-address 127.0.0.1 --advertise-address "$(k8s_node_ip)" --secure-port "$K8S_APISERVER_PORT" \
		--etcd-servers "http://127.0.0.1:$K8S_ETCD_PORT" \
		--service-cluster-ip-range "$K8S_SERVICE_CIDR" \
		--client-ca-file "$pki/ca.crt" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
		--kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
		--service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
		--service-account-issuer https://kubernetes.default.svc \
		--authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
		--kubelet-preferred-address-types InternalIP,Hostname \
		--allow-privileged=false --profiling=false
	# The API server takes a while to create its bootstrap objects.
	SSEBENCH_DEV_START_TIMEOUT=120 wait_ready k8s-apiserver probe_apiserver
	log "kube-apiserver: started on 127.0.0.1:$K8S_APISERVER_PORT"
fi
if ! pid_alive k8s-controller-manager; then
	start_daemon k8s-controller-manager "$K8S_BIN/kube-controller-manager" \
		--kubeconfig "$K8S_STATE/controller-manager.kubeconfig" \
		--authentication-kubeconfig "$K8S_STATE/controller-manager.kubeconfig" \
		--authorization-kubeconfig "$K8S_STATE/controller-manager.kubeconfig" \
		--bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials \
		--service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
		--cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
		--controllers '*,-bootstrapsigner,-tokencleaner' --profiling=false
	log "kube-controller-manager: started"
fi
if ! pid_alive k8s-scheduler; then
	start_daemon k8s-scheduler "$K8S_BIN/kube-scheduler" \
		--kubeconfig "$K8S_STATE/scheduler.kubeconfig" \
		--authentication-kubeconfig "$K8S_STATE/scheduler.kubeconfig" \
		--authorization-kubeconfig "$K8S_STATE/scheduler.kubeconfig" \
		--bind-address 127.0.0.1 --leader-elect=false --profiling=false
	log "kube-scheduler: started"
fi

# --- the pause image, in the local registry ---
pause_ref="$SSEBENCH_DEV_REGISTRY_ADDR/ssebench/k8s/pause:1"
if ! curl -fs -o /dev/null --max-time 5 -H 'Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' \
	"http://$SSEBENCH_DEV_REGISTRY_ADDR/v2/ssebench/k8s/pause/manifests/1"; then
	(cd "$SSEBENCH_ROOT" && go run ./tools/pause --push "$pause_ref" >/dev/null) || die "building the pause image failed"
	log "pause image: pushed $pause_ref"
fi

# --- containerd with CRI, its own instance ---
mkdir -p "$K8S_STATE/cni" "$K8S_STATE/certs.d"
for host in "$SSEBENCH_DEV_REGISTRY_ADDR" "localhost:${SSEBENCH_DEV_REGISTRY_ADDR##*:}"; do
	mkdir -p "$K8S_STATE/certs.d/$host"
	cat >"$K8S_STATE/certs.d/$host/hosts.toml" <<EOF
server = "http://$host"
[host."http://$host"]
  capabilities = ["pull", "resolve"]
EOF
done
cat >"$K8S_STATE/cni/10-ssebench.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "ssebench-test",
  "plugins": [
    {"type": "bridge", "bridge": "$K8S_BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$K8S_POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}],
              "dataDir": "$K8S_STATE/cni-ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
cat >"$K8S_STATE/containerd.toml" <<EOF
version = 2
root = "$K8S_STATE/containerd"
state = "$K8S_RUN/containerd"
[grpc]
  address = "$K8S_CONTAINERD_SOCKET"
[ttrpc]
  address = "$K8S_RUN/containerd.ttrpc.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$pause_ref"
  # Root here lacks CAP_SYS_RESOURCE: without this every sandbox fails
  # with "can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$K8S_STATE/cni"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$K8S_STATE/certs.d"
EOF
probe_k8s_containerd() { [ -S "$K8S_CONTAINERD_SOCKET" ] && timeout 5 ctr --address "$K8S_CONTAINERD_SOCKET" version >/dev/null 2>&1; }
if ! probe_k8s_containerd; then
	start_daemon k8s-containerd containerd --config "$K8S_STATE/containerd.toml"
	wait_ready k8s-containerd probe_k8s_containerd
	log "containerd (CRI): started on $K8S_CONTAINERD_SOCKET"
fi

# --- kubelet ---
cat >"$K8S_STATE/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# The host is cgroup v1 (hybrid); kubelet 1.35+ refuses it unless told.
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$K8S_CONTAINERD_SOCKET
address: 0.0.0.0
port: 10250
healthzBindAddress: 127.0.0.1
healthzPort: 10248
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: $pki/kubelet.crt
tlsPrivateKeyFile: $pki/kubelet.key
failSwapOn: false
podLogsDir: $K8S_STATE/pod-logs
resolvConf: ""
registerNode: true
# A shared development disk fills up; tests must not be evicted for it.
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
maxPods: 30
# A run's results come back through its log, base64: rotating it while
# ssebench follows it must stay rare.
containerLogMaxSize: 100Mi
EOF
probe_kubelet() { curl -fs --max-time 2 "http://127.0.0.1:10248/healthz" >/dev/null; }
if ! probe_kubelet; then
	start_daemon k8s-kubelet "$K8S_BIN/kubelet" --config "$K8S_STATE/kubelet.yaml" \
		--kubeconfig "$K8S_STATE/kubelet.kubeconfig" --root-dir "$K8S_STATE/kubelet" \
		--hostname-override "$K8S_NODE" --node-ip "$(k8s_node_ip)"
	wait_ready k8s-kubelet probe_kubelet
	log "kubelet: started (node $K8S_NODE)"
fi

# --- kube-proxy: Services' cluster addresses (the model gateway's) ---
# iptables mode, masquerading what reaches a Service from outside the pod
# network. It would size conntrack's tables, which root here may not do:
# they are left as they are.
# The file is replaced only when its content changes: a running kube-proxy
# watches it and panics ("send on closed channel") on any event, so a
# second run of this script must not touch it.
cat >"$K8S_STATE/kube-proxy.yaml.new" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: $K8S_STATE/kube-proxy.kubeconfig
hostnameOverride: $K8S_NODE
clusterCIDR: $K8S_POD_CIDR
conntrack:
  maxPerCore: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
EOF
if cmp -s "$K8S_STATE/kube-proxy.yaml.new" "$K8S_STATE/kube-proxy.yaml"; then
	rm -f "$K8S_STATE/kube-proxy.yaml.new"
else
	mv -f "$K8S_STATE/kube-proxy.yaml.new" "$K8S_STATE/kube-proxy.yaml"
	pid_alive k8s-kube-proxy && stop_daemon k8s-kube-proxy
fi
probe_kube_proxy() { curl -fs --max-time 2 "http://127.0.0.1:10256/healthz" >/dev/null; }
# A kube-proxy whose pid is alive but that does not answer is restarted.
if pid_alive k8s-kube-proxy && ! probe_kube_proxy; then
	stop_daemon k8s-kube-proxy
fi
for attempt in 1 2; do
	if ! pid_alive k8s-kube-proxy; then
		start_daemon k8s-kube-proxy "$K8S_BIN/kube-proxy" --config "$K8S_STATE/kube-proxy.yaml"
		wait_ready k8s-kube-proxy probe_kube_proxy
		log "kube-proxy: started (iptables mode)"
	fi
	# It can still die on a late event of its config watcher: look again.
	sleep 2
	pid_alive k8s-kube-proxy && probe_kube_proxy && break
	[ "$attempt" = 2 ] && die "kube-proxy does not stay up: see $LOG_DIR/k8s-kube-proxy.log"
done

export KUBECONFIG="$K8S_STATE/admin.kubeconfig"
node_ready() { kubectl get node "$K8S_NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -q True; }
deadline=$(($(now_s) + 120))
until node_ready; do
	if [ "$(now_s)" -ge "$deadline" ]; then
		show_log_tail "$LOG_DIR/k8s-kubelet.log"
		die "node $K8S_NODE did not become Ready within 120s (see $LOG_DIR/k8s-kubelet.log)"
	fi
	sleep 1
done
# Pods wait for their namespace's default service account.
until kubectl get serviceaccount default -n default >/dev/null 2>&1; do
	[ "$(now_s)" -lt "$deadline" ] || die "the default service account did not appear within 120s"
	sleep 1
done
# NetworkPolicies need an agent that enforces them; kube-network-policies
# needs nftables' queue expression, which not every kernel has.
rm -f "$K8S_STATE/netpol-enforced"
if nft_queue_works; then
	bash "$here/k8s-netpol.sh"
	touch "$K8S_STATE/netpol-enforced"
else
	# The fallback: tools/podfilter, iptables chains for the policies
	# ssebench creates, fail-closed.
	kubectl -n kube-system delete pod kube-network-policies --ignore-not-found --wait=false >/dev/null 2>&1 || true
	if ! pid_alive k8s-podfilter; then
		mkdir -p "$K8S_STATE/bin"
		(cd "$SSEBENCH_ROOT" && CGO_ENABLED=0 go build -trimpath -o "$K8S_STATE/bin/podfilter" ./tools/podfilter) || die "building tools/podfilter failed"
		start_daemon k8s-podfilter "$K8S_STATE/bin/podfilter" --kubeconfig "$K8S_STATE/admin.kubeconfig" --pod-cidr "$K8S_POD_CIDR"
		probe_podfilter() { iptables -C FORWARD -s "$K8S_POD_CIDR" -j SSEBENCH-NETPOL 2>/dev/null; }
		wait_ready k8s-podfilter probe_podfilter
		log "warning: this kernel has no nftables queue expression (CONFIG_NFT_QUEUE), which kube-network-policies needs; tools/podfilter enforces ssebench's NetworkPolicies with iptables instead"
	fi
	touch "$K8S_STATE/netpol-enforced"
fi
cp "$K8S_STATE/admin.kubeconfig" "$K8S_KUBECONFIG.tmp"
mv "$K8S_KUBECONFIG.tmp" "$K8S_KUBECONFIG"
log "kubernetes $K8S_VERSION: node $K8S_NODE Ready in $(($(now_s) - start))s; KUBECONFIG=$K8S_KUBECONFIG"
