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

# Each phase's wall time, printed as a table at the end.
ms() { date +%s%3N; }
secs() { printf '%d.%01d' $(($1 / 1000)) $(($1 % 1000 / 100)); }
phases=() t_phase=$(ms) t_all=$(ms)
phase_end() {
	local now
	now=$(ms)
	phases+=("$(printf '%-38s %7s s' "$1" "$(secs $((now - t_phase)))")")
	t_phase=$now
}

bash "$here/setup.sh"
# shellcheck source=scripts/env.sh
source "$here/env.sh"
cd "$root"
phase_end "setup (packages, BuildKit, OS image)"

mkdir -p bin
go build -o bin/ssebench ./cmd/ssebench
phase_end "ssebench"
ssebench=$root/bin/ssebench
dataset=datasets/examples
task=${1:-$(ls -1 "$dataset" | grep -v '\.' | head -n 1)}

step() { printf '\n== %s\n' "$*" >&2; }

step "runtime image (entrypoint and daemon, for linux/amd64 and linux/arm64)"
"$ssebench" runtime build
phase_end "runtime image"

step "base images (BuildKit, from $SSEBENCH_TEST_OS_IMAGE)"
"$ssebench" base-images --os-image "$SSEBENCH_TEST_OS_IMAGE"
phase_end "base images (at once)"

step "case images of $dataset"
"$ssebench" dataset validate "$dataset"
"$ssebench" build-case --benchmarks "$dataset"
phase_end "case images"

step "tool and agent images of $task (assembled, no Docker)"
tool=$("$ssebench" assemble tool --case "$("$ssebench" names --task "$task" --json | sed -n 's/.*"case": "\(.*\)".*/\1/p')" --task "$task")
"$ssebench" verify "${tool%@*}"
"$ssebench" assemble agent --tool "${tool%@*}" --agent dummy --task "$task"
phase_end "tool + agent images, verify"

step "run the dummy agent on $task in containerd"
# The dummy agent changes nothing, so the bug is still there: its grade is
# FAILED, which `ssebench run` says with exit status 2 (0 is PASSED).
rc=0
"$ssebench" run --task "$task" --agent dummy --local "$dataset" --timeout 600 || rc=$?
[ "$rc" -eq 2 ] || { echo "main.sh: expected the dummy agent's grade FAILED (exit 2), got exit $rc" >&2; exit 1; }
phase_end "run (agent + grading)"

run_dir=$(ls -1td runs/*/ | head -n 1)
step "results in $root/$run_dir"
cat "$run_dir/result.json"

step "time per phase"
printf '%s\n' "${phases[@]}" >&2
printf '%-38s %7s s\n' "total" "$(secs $(($(ms) - t_all)))" >&2
