package sserun

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// judgedTestScript runs tests/*.sh and writes one libtest line a test to
// $SSE_TEST_REPORT. Like `go test`, it first runs code of the tree
// (init/*.sh, sourced), which is the agent's.
const judgedTestScript = `set -e
test -f built.txt || "$(dirname "$0")/build.sh"
: >"$SSE_TEST_REPORT"
for f in init/*.sh; do [ -e "$f" ] || continue; . "./$f"; done
fail=0
for f in tests/*.sh; do
	n=$(basename "$f" .sh)
	if sh "$f"; then echo "test $n ... ok" >>"$SSE_TEST_REPORT"; else echo "test $n ... FAILED" >>"$SSE_TEST_REPORT"; fail=1; fi
done
exit $fail
`

// withTestLists gives the task of withFutureTest the lists: future (the
// hidden test) must fail before and pass after, base must always pass.
func (ft *fakeTask) withTestLists(t *testing.T) {
	t.Helper()
	ft.withFutureTest(t)
	write(t, filepath.Join(ft.root, "scripts", "test.sh"), judgedTestScript, 0o755)
	cfg := `id: fake-1
source: ` + ft.src + `
scripts: {build: scripts/build.sh, test: scripts/test.sh, run: scripts/run.sh}
files: {patch: diffs/patch.diff, poc: [pocs/crash.txt], future_test: diffs/future.diff}
tests: {format: libtest, fail_to_pass: [future], pass_to_pass: [base]}
`
	write(t, filepath.Join(ft.root, ConfigName), cfg, 0o644)
	c, err := ReadTaskConfig(ft.root)
	if err != nil {
		t.Fatal(err)
	}
	ft.cfg = c
}

// TestDaemonJudgesTestsByName: with tests listed, intent_test and test
// pass only when each listed test passed in the report; the agent's code
// that ends the test run with exit 0 before any test ran fails them, and
// their output names the tests.
func TestDaemonJudgesTestsByName(t *testing.T) {
	for _, tt := range []struct {
		name, main, init string
		intentOK, testOK bool
		want             []string // in intent_test's output
	}{
		{name: "fixed", main: "good fixed\n", intentOK: true, testOK: true,
			want: []string{"intent_test judged by name: 2 of 2 listed tests passed", "=== test pass: future"}},
		{name: "still buggy", main: "good bug\n", testOK: true,
			want: []string{"fail_to_pass future: failed"}},
		{name: "exit 0 before the tests", main: "good bug\n", init: "exit 0\n",
			want: []string{"fail_to_pass future: did not run", "pass_to_pass base: did not run"}},
		{name: "skips the hidden test", main: "good bug\n", init: `echo "test future ... ignored" >>"$SSE_TEST_REPORT"; exit 0` + "\n",
			want: []string{"fail_to_pass future: was skipped"}},
		{name: "removes the report", main: "good bug\n", init: `rm -f "$SSE_TEST_REPORT"; exit 0` + "\n",
			want: []string{"intent_test failed: the test script wrote no test report"}},
		{name: "links the report to a file of the grader", main: "good bug\n", init: `rm -f "$SSE_TEST_REPORT"; ln -s "$0" "$SSE_TEST_REPORT"; exit 0` + "\n",
			want: []string{"the test report is a symlink"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.init != "" {
				hostile.Attack(t, "hidden tests forged", "the report is read by name, where the grader put it, and must be the runner's regular file")
			}
			ft := newFakeTask(t, tt.main)
			ft.withTestLists(t)
			if tt.init != "" {
				write(t, filepath.Join(ft.src, "init", "cheat.sh"), tt.init, 0o644)
			}
			got := ft.daemon(t).Handle(context.Background(), Request{Op: OpGrade}, true)
			if got.Error != "" || got.Grade == nil || got.Grade.IntentTest == nil || got.Grade.Test == nil {
				t.Fatalf("grade = %+v", got)
			}
			// libtest has no canary: cargo test stops at the first test
			// target that fails.
			if got.Grade.Judged != contract.JudgedByNameNoCanary || got.Grade.Integrity != "" {
				t.Errorf("grade judged %q, integrity %q; want %q and none", got.Grade.Judged, got.Grade.Integrity, contract.JudgedByNameNoCanary)
			}
			it, te := got.Grade.IntentTest, got.Grade.Test
			if it.OK != tt.intentOK || te.OK != tt.testOK {
				t.Errorf("intent_test ok = %t, test ok = %t, want %t, %t\nintent_test:\n%s\ntest:\n%s", it.OK, te.OK, tt.intentOK, tt.testOK, it.Output, te.Output)
			}
			for _, w := range tt.want {
				if !strings.Contains(it.Output, w) {
					t.Errorf("intent_test's output does not say %q:\n%s", w, it.Output)
				}
			}
			if !it.OK && it.Exit == 0 && !strings.Contains(got.Output, "intent_test: failed (") {
				t.Errorf("the grade's summary does not say why intent_test failed:\n%s", got.Output)
			}
			ft.checkClean(t)
		})
	}
}
