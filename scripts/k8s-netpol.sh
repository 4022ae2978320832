#!/usr/bin/env bash
# k8s-netpol.sh gives the test cluster an enforcing NetworkPolicy agent, as
# root: the bridge CNI plugin enforces no NetworkPolicy, so a restricted
# run's policy would be a dead letter. kube-network-policies (pinned in
# tools/netpol) filters the pods' new connections with nftables and
# nfqueue. It is built once into $SSEBENCH_DEV_CACHE/netpol-<version>/bin,
# packaged FROM scratch and pushed to the local registry (tools/pause
# --binary), and runs as a host-network pod of kube-system with NET_ADMIN.
# Called by scripts/k8s-up.sh once the node is Ready.
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=scripts/lib.sh
source "$here/lib.sh"
# shellcheck source=scripts/k8s-lib.sh
source "$here/k8s-lib.sh"

require_root
moddir="$SSEBENCH_ROOT/tools/netpol"
version=$(awk '$1 == "require" && $2 == "sigs.k8s.io/kube-network-policies" { print $3; exit }; $1 == "sigs.k8s.io/kube-network-policies" { print $2; exit }' "$moddir/go.mod")
cachedir="$SSEBENCH_DEV_CACHE/netpol-$version"
bin="$cachedir/bin/kube-network-policies"
want=$(cat "$moddir/go.mod" "$moddir/go.sum" <(go version) | sha256sum | cut -d' ' -f1)
if [ ! -x "$bin" ] || [ "$(cat "$cachedir/stamp" 2>/dev/null)" != "$want" ]; then
	log "kube-network-policies $version: building (a few minutes)"
	start=$(now_s)
	mkdir -p "$cachedir"
	tmp=$(mktemp -d "$cachedir/bin.tmp.XXXXXX")
	if ! (cd "$moddir" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" nice -n 10 go build -trimpath -ldflags "-s -w" \
		-o "$tmp/kube-network-policies" sigs.k8s.io/kube-network-policies/cmd); then
		rm -rf "$tmp"
		die "building kube-network-policies $version failed"
	fi
	rm -rf "$cachedir/bin"
	mv "$tmp" "$cachedir/bin"
	echo "$want" >"$cachedir/stamp"
	log "kube-network-policies $version: built in $(($(now_s) - start))s"
fi
# The image's tag is the binary's hash: a rebuild is a new image.
tag=$(sha256sum "$bin" | cut -c1-16)
image="$SSEBENCH_DEV_REGISTRY_ADDR/ssebench/k8s/kube-network-policies:$tag"
if ! curl -fs -o /dev/null --max-time 5 -H 'Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' \
	"http://$SSEBENCH_DEV_REGISTRY_ADDR/v2/ssebench/k8s/kube-network-policies/manifests/$tag"; then
	(cd "$SSEBENCH_ROOT" && go run ./tools/pause --push "$image" --binary "$bin" >/dev/null) || die "pushing the kube-network-policies image failed"
fi

export KUBECONFIG="$K8S_STATE/admin.kubeconfig"
kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ServiceAccount
metadata: {name: kube-network-policies, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: kube-network-policies}
rules:
- apiGroups: [""]
  resources: [pods, namespaces, nodes]
  verbs: [list, watch]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: kube-network-policies}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kube-network-policies}
subjects:
- {kind: ServiceAccount, name: kube-network-policies, namespace: kube-system}
---
apiVersion: v1
kind: Pod
metadata:
  name: kube-network-policies
  namespace: kube-system
  labels: {app: kube-network-policies}
spec:
  serviceAccountName: kube-network-policies
  nodeName: $K8S_NODE
  hostNetwork: true
  restartPolicy: Always
  containers:
  - name: agent
    image: $image
    args: [--hostname-override=$K8S_NODE, --disable-nri, --metrics-bind-address=127.0.0.1:9080, --netfilter-bug-1766-fix=false, --v=2]
    env:
    # No kube-proxy here: the API server's Service address routes nowhere,
    # its own address does (the host network is the pod's).
    - {name: KUBERNETES_SERVICE_HOST, value: "127.0.0.1"}
    - {name: KUBERNETES_SERVICE_PORT, value: "$K8S_APISERVER_PORT"}
    securityContext:
      capabilities: {add: [NET_ADMIN]}
EOF
deadline=$(($(now_s) + 120))
until [ "$(kubectl -n kube-system get pod kube-network-policies -o 'jsonpath={.status.containerStatuses[0].ready}' 2>/dev/null)" = true ]; do
	if [ "$(now_s)" -ge "$deadline" ]; then
		kubectl -n kube-system logs kube-network-policies --tail 20 >&2 || true
		die "kube-network-policies did not become ready within 120s"
	fi
	sleep 1
done
log "kube-network-policies $version: enforcing NetworkPolicies"
