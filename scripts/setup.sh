#!/usr/bin/env bash
# setup.sh prepares a Debian 12 machine (as root) for ssebench's integration
# tests and local development, idempotently:
#   1. install-deps.sh  Debian packages (the compile's two first, the tests'
#                       last); buildkitd built and cached (alongside 2 and 3)
#   2. dev-up.sh        registry, containerd and buildkitd started if needed
#   3. os-image.sh      Debian OS image built (cached) and pushed
# then prints the variables to export (or `source scripts/env.sh`).
#
# The first run takes a few minutes (BuildKit build, mmdebstrap); later runs
# take seconds. Caches: $SSEBENCH_DEV_CACHE (default /var/cache/ssebench-dev);
# state and logs: $SSEBENCH_DEV_STATE (default /var/lib/ssebench-dev).
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=scripts/lib.sh
source "$here/lib.sh"

# --cli PATH: also compile ssebench into PATH, right after buildkitd and in
# the same background job (main.sh uses it). The two modules pin the same
# versions of what they share (tools/buildkit's go.mod follows ssebench's),
# so the second compile finds most of its packages in Go's build cache.
# --main: only what the main job needs; the tests' own packages (chromium,
# xmllint, skopeo, umoci) wait for the first scripts/test.sh.
cli="" main=""
while [ $# -gt 0 ]; do
	case "$1" in
	--cli)
		cli=${2:?setup.sh: --cli needs a path}
		shift 2
		;;
	--main)
		main=1
		shift
		;;
	*) die "usage: setup.sh [--cli PATH] [--main]" ;;
	esac
done

require_root
take_lock
start=$(now_s)
# step NAME START logs how long a step took, for the profile of a first run.
step_took() { log "setup: $1 took $(($(now_s) - $2))s"; }

# compile builds buildkitd (cached by version) and, with --cli, ssebench:
# CPU work that needs only Go and a C compiler, while apt, the services and
# the OS image (mmdebstrap) are mostly downloads and unpacking. On a fresh
# machine the two sides overlap.
compile() {
	local t
	t=$(now_s)
	bash "$here/install-deps.sh" buildkit || return
	[ -z "$cli" ] || (cd "$SSEBENCH_ROOT" && mkdir -p "$(dirname "$cli")" &&
		go build -trimpath -o "$cli" ./cmd/ssebench) || die "compiling ssebench failed"
	step_took "compiling buildkitd${cli:+ and ssebench} (beside the rest)" "$t"
}
# cgo (buildkitd's OCI worker) needs gcc: the two packages it takes are
# installed first, alone, so the compile starts within seconds and the
# other packages install beside it.
t=$(now_s)
command -v gcc >/dev/null || bash "$here/install-deps.sh" build
compile &
bk=$!
bash "$here/install-deps.sh" apt
step_took "apt packages" "$t"
t=$(now_s)
bash "$here/dev-up.sh" registry containerd
step_took "registry and containerd" "$t"
t=$(now_s)
os_rc=0
bash "$here/os-image.sh" >/dev/null || os_rc=$?
step_took "OS image" "$t"
if [ -z "$main" ]; then
	t=$(now_s)
	bash "$here/install-deps.sh" test
	step_took "the tests' apt packages" "$t"
fi
t=$(now_s)
bk_rc=0
wait "$bk" || bk_rc=$?
step_took "waiting for the compile" "$t"
[ "$bk_rc" -eq 0 ] || die "building buildkitd${cli:+ or ssebench} failed (exit $bk_rc)"
[ "$os_rc" -eq 0 ] || die "making the OS image failed (exit $os_rc)"
bash "$here/dev-up.sh" buildkitd
log "setup done in $(($(now_s) - start))s; the services are found through:"
# shellcheck source=scripts/env.sh
source "$here/env.sh"
for v in SSEBENCH_TEST_REGISTRY SSEBENCH_TEST_OS_IMAGE BUILDKIT_HOST CONTAINERD_ADDRESS; do
	printf '  export %s=%s\n' "$v" "${!v}" >&2
done
