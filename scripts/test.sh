#!/usr/bin/env bash
# test.sh is the project's test command: it runs scripts/setup.sh (packages,
# BuildKit, registry, containerd, OS image; fast when already done), exports
# the service variables from scripts/env.sh and runs the whole Go test suite,
# integration tests included, with the test cluster of the Kubernetes
# backend (scripts/k8s-up.sh). It prints the table of the hostile-input
# suite (class, cases, passed), then the time each phase took.
#
# The cluster's binaries take about half an hour to compile on a fresh
# machine (scripts/k8s-build.sh, cached afterwards): they compile, niced, while
# every test that needs no cluster runs; the cluster then comes up and its
# tests run last.
#
# Usage: scripts/test.sh [go test packages or flags]   (default ./...)
# With arguments the cluster comes up first and `go test ARGS` runs once.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Each phase's wall time, printed as a table at the end.
ms() { date +%s%3N; }
secs() { printf '%d.%01d' $(($1 / 1000)) $(($1 % 1000 / 100)); }
phases=() t_all=$(ms)
# phase NAME START: a row for NAME, from START (ms) to now.
phase() { phases+=("$(printf '%-44s %8s s' "$1" "$(secs $(($(ms) - $2)))")"); }
print_phases() {
	echo
	echo "== time per phase"
	printf '%s\n' "${phases[@]}"
	printf '%-44s %8s s\n' "total" "$(secs $(($(ms) - t_all)))"
}

t=$(ms)
bash "$here/setup.sh"
phase "setup (packages, buildkitd, services, OS)" "$t"
# SSEBENCH_K8S=0 leaves the cluster out (its tests then skip, or fail
# under CI=true).
k8s=${SSEBENCH_K8S:-1}

# shellcheck source=scripts/env.sh
source "$here/env.sh"
cd "$SSEBENCH_ROOT"

# The hostile-input suite (TestHostile* across packages) records each case
# here; its table (class, cases, passed) is printed at the end, then the
# red team's: each attack, what stopped it, and what the run said.
summary=$(mktemp -d)
build_pid=
trap 'rm -rf "$summary"; [ -z "$build_pid" ] || kill -- "-$build_pid" 2>/dev/null || true' EXIT
export SSEBENCH_HOSTILE_SUMMARY="$summary"
# 45m: the evaluation test (evaluate/) runs 12 runs of the example tasks,
# then kills and resumes an evaluation of them.
gotest() { go test -count=1 -timeout 45m "$@"; }

rc=0
if [ $# -gt 0 ] || [ "$k8s" = 0 ]; then
	if [ "$k8s" != 0 ]; then
		t=$(ms)
		bash "$here/k8s-up.sh"
		phase "test cluster (k8s-up.sh)" "$t"
		# shellcheck source=scripts/env.sh
		source "$here/env.sh"
	fi
	[ $# -gt 0 ] || set -- ./...
	t=$(ms)
	gotest "$@" || rc=$?
	phase "go test $*" "$t"
else
	# The cluster's tests are those of the test files that use
	# runner/kube/kubetest; every other test runs while the cluster's
	# binaries compile.
	mapfile -t kube_files < <(grep -rl --include='*_test.go' 'kubetest\.' . | sort)
	kube_tests=() kube_pkgs=()
	for f in "${kube_files[@]}"; do
		kube_pkgs+=("./$(dirname "${f#./}")")
		mapfile -t -O "${#kube_tests[@]}" kube_tests < <(sed -n 's/^func \(Test[A-Za-z0-9_]*\)(t \*testing\.T).*/\1/p' "$f")
	done
	[ ${#kube_tests[@]} -gt 0 ] || { echo "test.sh: found no test of the cluster (files using kubetest)" >&2; exit 1; }
	# -skip and -run match names in every package: a name used twice
	# would be skipped in one pass and not run in the other.
	for n in "${kube_tests[@]}"; do
		c=$(grep -rh --include='*_test.go' -c "^func $n(" . | awk '{ s += $1 } END { print s }')
		[ "$c" -eq 1 ] || { echo "test.sh: $n is defined in $c test files; give the cluster test a name of its own" >&2; exit 1; }
	done
	names=$(IFS='|'; echo "${kube_tests[*]}")
	mapfile -t kube_pkgs < <(printf '%s\n' "${kube_pkgs[@]}" | sort -u)

	# setsid: the compile and its go build are one process group, stopped
	# together when the tests end early.
	t_build=$(ms)
	build_log="$SSEBENCH_DEV_STATE/logs/k8s-build.log" build_end="$summary/k8s-build.end"
	mkdir -p "$(dirname "$build_log")"
	# shellcheck disable=SC2016 # the inner shell expands them
	setsid bash -c 'rc=0; bash "$1" >"$2" 2>&1 || rc=$?; date +%s%3N >"$3"; exit $rc' _ \
		"$here/k8s-build.sh" "$build_log" "$build_end" &
	build_pid=$!
	echo "== the cluster's binaries compile in the background (log: $build_log)"
	echo "== tests that need no cluster (all but ${kube_tests[*]})"
	t=$(ms)
	gotest ./... -skip "^($names)\$" || rc=$?
	phase "tests without the cluster" "$t"

	t=$(ms)
	b_rc=0
	wait "$build_pid" || b_rc=$?
	build_pid=
	phase "waiting for the cluster's binaries after them" "$t"
	if [ -s "$build_end" ]; then
		phases+=("$(printf '%-44s %8s s' "  (their compile, beside the tests)" "$(secs $(($(cat "$build_end") - t_build)))")")
	fi
	if [ "$b_rc" -ne 0 ]; then
		tail -n 30 "$build_log" >&2
		echo "test.sh: building the cluster's binaries failed (exit $b_rc): see $build_log" >&2
		exit 1
	fi
	t=$(ms)
	bash "$here/k8s-up.sh"
	phase "test cluster up (k8s-up.sh)" "$t"
	# shellcheck source=scripts/env.sh
	source "$here/env.sh"
	echo "== tests of the cluster: ${kube_tests[*]}"
	t=$(ms)
	gotest "${kube_pkgs[@]}" -run "^($names)\$" || rc=$?
	phase "tests of the cluster" "$t"
fi
echo
if ! go run ./tools/hostile-summary "$summary" && [ "$rc" -eq 0 ]; then
	rc=1
fi
print_phases
exit "$rc"
