#!/usr/bin/env bash
# setup.sh prepares a Debian 12 machine (as root) for ssebench's integration
# tests and local development, idempotently:
#   1. install-deps.sh  Debian packages; buildkitd/buildctl built and cached
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
bash "$here/install-deps.sh"
bash "$here/dev-up.sh" all
bash "$here/os-image.sh" >/dev/null
log "setup done in $(($(now_s) - start))s; the services are found through:"
# shellcheck source=scripts/env.sh
source "$here/env.sh"
for v in SSEBENCH_TEST_REGISTRY SSEBENCH_TEST_OS_IMAGE BUILDKIT_HOST CONTAINERD_ADDRESS; do
	printf '  export %s=%s\n' "$v" "${!v}" >&2
done
