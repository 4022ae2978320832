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
# 45m: the evaluation test (evaluate/) runs 12 runs of the example tasks,
# then kills and resumes an evaluation of them: about 15–35 min on 2 cores.
exec go test -count=1 -timeout 45m "$@"
