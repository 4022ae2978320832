#!/bin/sh
# test.sh: build, then test the affected packages (project tree = cwd).
# Under the grader, $SSE_TEST_REPORT names the file for the test report
# (tests.format: go-test-json); the grader judges the listed tests by name.
# -vet=off: the tests judge the fix; a vet check newer than the module is
# not the task's bug, and vetting every run costs a build. -timeout 240s: a
# denial-of-service fix's test loops on the buggy tree; that is a failure,
# and it must not hold the grade for long.
set -eu
here=$(dirname "$0")
"$here/build.sh"
. "$here/env.sh"
if [ -n "${SSE_TEST_REPORT:-}" ]; then
	go test -count=1 -vet=off -timeout 240s -json './codec/dagcbor' >"$SSE_TEST_REPORT"
else
	go test -count=1 -vet=off -timeout 240s './codec/dagcbor'
fi
