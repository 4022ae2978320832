#!/usr/bin/env bash
# k8s-build.sh builds kube-apiserver, kube-controller-manager, kube-scheduler,
# kubelet and kube-proxy from the pinned tools/kubernetes module into
# $SSEBENCH_DEV_CACHE/k8s-<version>/bin, as root, and does nothing when they
# are cached. The cold build takes about half an hour on two cores (under
# nice, so that it yields to tests) and about 3.6 GB of Go build cache; the
# five stripped binaries (about 400 MB) are what is kept, keyed by the version
# and by a stamp of go.mod, go.sum and the Go version, so bumping any of them
# rebuilds.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
command -v go >/dev/null || die "go is not on PATH; it is needed to build Kubernetes"

K8S_BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)
moddir="$SSEBENCH_ROOT/tools/kubernetes"
cachedir="$SSEBENCH_DEV_CACHE/k8s-$K8S_VERSION"
stamp="$cachedir/stamp"
want=$(cat "$moddir/go.mod" "$moddir/go.sum" <(go version) | sha256sum | cut -d' ' -f1)

cached() {
	local b
	for b in "${K8S_BINARIES[@]}"; do
		[ -x "$K8S_BIN/$b" ] || return 1
	done
	[ "$(cat "$stamp" 2>/dev/null)" = "$want" ]
}

mkdir -p "$cachedir"
# A lock of its own: the build is long and must not hold setup's lock (the
# other services' start-up would wait half an hour for it).
exec 8>"$cachedir/.build.lock"
if ! flock -n 8; then
	log "kubernetes $K8S_VERSION: waiting for another build of it to finish"
	flock -w 3600 8 || die "another build of kubernetes $K8S_VERSION held $cachedir/.build.lock for an hour"
fi
if cached; then
	log "kubernetes $K8S_VERSION: cached in $K8S_BIN"
	exit 0
fi
log "kubernetes $K8S_VERSION: building ${K8S_BINARIES[*]} (about 30 minutes on two cores)"
start=$(now_s)
tmp=$(mktemp -d "$cachedir/bin.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pkgs=()
for b in "${K8S_BINARIES[@]}"; do
	pkgs+=("k8s.io/kubernetes/cmd/$b")
done
# -mod=readonly: the pinned go.sum must already cover everything. -s -w:
# the cache keeps binaries, not debug info (halves their size). The version
# is stamped the way Kubernetes' own build does, so the API server reports
# it and kubelet's version skew checks pass.
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=$(echo "${K8S_VERSION#v}" | cut -d. -f1) -X k8s.io/component-base/version.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2) -X k8s.io/component-base/version.gitTreeState=clean"
if ! (cd "$moddir" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" nice -n 10 go build -trimpath -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}"); then
	die "building kubernetes $K8S_VERSION failed"
fi
rm -rf "$K8S_BIN"
mv "$tmp" "$K8S_BIN"
echo "$want" >"$stamp"
log "kubernetes $K8S_VERSION: built in $(($(now_s) - start))s"
