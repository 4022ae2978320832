#!/usr/bin/env bash
# main.sh is the project's main job, end to end, on embedded defaults: the
# local image store and the example dataset. On a fresh machine it sets up
# the services (scripts/setup.sh), builds ssebench, the runtime image, the
# base images and the example case images, assembles the tool and agent
# images without Docker, checks them, and runs the dummy agent on one task in
# containerd, printing where the results are.
#
# Usage: scripts/main.sh [TASK]   (default: the first task of datasets/examples)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(dirname "$here")

bash "$here/setup.sh"
# shellcheck source=scripts/env.sh
source "$here/env.sh"
cd "$root"

mkdir -p bin
go build -o bin/ssebench ./cmd/ssebench
ssebench=$root/bin/ssebench
dataset=datasets/examples
task=${1:-$(ls -1 "$dataset" | grep -v '\.' | head -n 1)}

step() { printf '\n== %s\n' "$*" >&2; }

step "runtime image (entrypoint and daemon, for linux/amd64 and linux/arm64)"
"$ssebench" runtime build

step "base images (BuildKit, from $SSEBENCH_TEST_OS_IMAGE)"
"$ssebench" base-images --os-image "$SSEBENCH_TEST_OS_IMAGE"

step "case images of $dataset"
"$ssebench" dataset validate "$dataset"
"$ssebench" build-case --benchmarks "$dataset"

step "tool and agent images of $task (assembled, no Docker)"
tool=$("$ssebench" assemble tool --case "$("$ssebench" names --task "$task" --json | sed -n 's/.*"case": "\(.*\)".*/\1/p')" --task "$task")
"$ssebench" verify "${tool%@*}"
"$ssebench" assemble agent --tool "${tool%@*}" --agent dummy --task "$task"

step "run the dummy agent on $task in containerd"
# The dummy agent changes nothing, so the bug is still there: its grade is
# FAILED, which `ssebench run` says with exit status 2 (0 is PASSED).
rc=0
"$ssebench" run --task "$task" --agent dummy --local "$dataset" --timeout 600 || rc=$?
[ "$rc" -eq 2 ] || { echo "main.sh: expected the dummy agent's grade FAILED (exit 2), got exit $rc" >&2; exit 1; }

run_dir=$(ls -1td runs/*/ | head -n 1)
step "results in $root/$run_dir"
cat "$run_dir/result.json"
