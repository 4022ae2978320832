#!/usr/bin/env bash
# install-deps.sh installs what the tests and the development daemons need on
# a Debian 12 machine, as root:
#   - Debian packages: containerd, runc, the registry, mmdebstrap and friends;
#     for tests only, chromium (the HTML report test), libxml2-utils (xmllint,
#     the JUnit one), skopeo and umoci (apt is skipped entirely when they are
#     all present);
#   - buildkitd, built from the pinned tools/buildkit module
#     into $SSEBENCH_DEV_CACHE/buildkit-<version>/bin (skipped when cached).
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
take_lock

# Three groups, so that the first run waits for no more than it needs:
# BUILD_PACKAGES are what buildkitd's compile needs (cgo), installed first
# so that the compile starts at once; APT_PACKAGES what the services, the
# OS image and the main job need; TEST_PACKAGES what only tests use (the
# HTML report's browser, xmllint for JUnit, skopeo and umoci reading the
# store), left out of main.sh's set-up.
BUILD_PACKAGES=(
	gcc
	libc6-dev
)
APT_PACKAGES=(
	"${BUILD_PACKAGES[@]}"
	ca-certificates
	containerd
	curl
	debootstrap
	docker-registry
	mmdebstrap
	runc
	uidmap
)
TEST_PACKAGES=(
	chromium
	libxml2-utils
	skopeo
	umoci
)

# build_buildkit builds buildkitd (the only BuildKit program ssebench and
# its scripts use) from tools/buildkit. The cache
# is keyed by the BuildKit version in its directory name and by a stamp of
# go.mod, go.sum and the Go version, so bumping any of them rebuilds.
build_buildkit() {
	command -v go >/dev/null || die "go is not on PATH; it is needed to build BuildKit"
	local moddir="$SSEBENCH_ROOT/tools/buildkit"
	local stamp want
	stamp="$SSEBENCH_DEV_CACHE/buildkit-$BUILDKIT_VERSION/stamp"
	want=$(cat "$moddir/go.mod" "$moddir/go.sum" <(go version) | sha256sum | cut -d' ' -f1)
	if [ -x "$BUILDKIT_BIN/buildkitd" ] &&
		[ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
		log "buildkit $BUILDKIT_VERSION: cached in $BUILDKIT_BIN"
		return 0
	fi
	log "buildkit $BUILDKIT_VERSION: building buildkitd (takes a few minutes)"
	local start tmp
	start=$(now_s)
	mkdir -p "$SSEBENCH_DEV_CACHE/buildkit-$BUILDKIT_VERSION"
	tmp=$(mktemp -d "$SSEBENCH_DEV_CACHE/buildkit-$BUILDKIT_VERSION/bin.tmp.XXXXXX")
	# -mod=readonly: the pinned go.sum must already cover everything; a
	# build must never rewrite it. cgo stays on: buildkitd's OCI worker uses
	# it (seccomp, user namespaces).
	# -s -w: no symbol tables, a shorter link.
	if ! (cd "$moddir" && GOFLAGS="-mod=readonly -buildvcs=false" go build -trimpath -ldflags="-s -w" -o "$tmp/" \
		github.com/moby/buildkit/cmd/buildkitd); then
		rm -rf "$tmp"
		die "building buildkit $BUILDKIT_VERSION failed"
	fi
	rm -rf "$BUILDKIT_BIN"
	mv "$tmp" "$BUILDKIT_BIN"
	echo "$want" >"$stamp"
	log "buildkit $BUILDKIT_VERSION: built in $(($(now_s) - start))s"
}

# With an argument, only that part: build (the compile's packages), apt
# (the services' and main job's), test (the tests' own), buildkit.
case "${1:-all}" in
build) install_apt_packages "${BUILD_PACKAGES[@]}" ;;
apt) install_apt_packages "${APT_PACKAGES[@]}" ;;
test) install_apt_packages "${TEST_PACKAGES[@]}" ;;
buildkit) build_buildkit ;;
all)
	install_apt_packages "${APT_PACKAGES[@]}" "${TEST_PACKAGES[@]}"
	build_buildkit
	;;
*) die "usage: install-deps.sh [all|build|apt|test|buildkit]" ;;
esac
