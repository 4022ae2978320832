#!/usr/bin/env bash
# test.sh is the project's test command: it runs scripts/setup.sh (packages,
# BuildKit, registry, containerd, OS image; fast when already done), exports
# the service variables from scripts/env.sh and runs the whole Go test suite,
# integration tests included.
#
# Usage: scripts/test.sh [go test packages or flags]   (default ./...)
set -euo pipefail
here=$(dirname "${BASH_SOURCE[0]}")

bash "$here/setup.sh"
# shellcheck source=scripts/env.sh
source "$here/env.sh"

cd "$SSEBENCH_ROOT"
if [ $# -eq 0 ]; then
	set -- ./...
fi
exec go test -count=1 -timeout 25m "$@"
