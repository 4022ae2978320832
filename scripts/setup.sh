#!/usr/bin/env bash
# setup.sh prepares a Debian 12 machine (as root) for ssebench's integration
# tests and local development, idempotently:
#   1. install-deps.sh  Debian packages; buildkitd built and cached (alongside 3)
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

require_root
take_lock
start=$(now_s)
bash "$here/install-deps.sh" apt
# Compiling buildkitd is CPU work; the OS image (mmdebstrap) is mostly
# downloads and unpacking: on a fresh machine they overlap.
bash "$here/install-deps.sh" buildkit &
bk=$!
bash "$here/dev-up.sh" registry containerd
os_rc=0
bash "$here/os-image.sh" >/dev/null || os_rc=$?
bk_rc=0
wait "$bk" || bk_rc=$?
[ "$bk_rc" -eq 0 ] || die "building buildkitd failed (exit $bk_rc)"
[ "$os_rc" -eq 0 ] || die "making the OS image failed (exit $os_rc)"
bash "$here/dev-up.sh" buildkitd
log "setup done in $(($(now_s) - start))s; the services are found through:"
# shellcheck source=scripts/env.sh
source "$here/env.sh"
for v in SSEBENCH_TEST_REGISTRY SSEBENCH_TEST_OS_IMAGE BUILDKIT_HOST CONTAINERD_ADDRESS; do
	printf '  export %s=%s\n' "$v" "${!v}" >&2
done
