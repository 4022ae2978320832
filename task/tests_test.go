package task

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConfigTests(t *testing.T) {
	for _, tt := range []struct {
		name, tests string
		want        []string
	}{
		{"valid", "tests:\n  format: go-test-json\n  fail_to_pass: [TestX/sub, example.com/kv.TestY]\n  pass_to_pass:\n  - TestZ\n", nil},
		{"format only", "tests: {format: libtest}\n", nil},
		{"unknown format", "tests: {format: tap, fail_to_pass: [a]}\n", []string{`c.yaml:23: tests.format: "tap" is not one of go-test-json, junit-xml, libtest`}},
		{"lists without format", "tests: {fail_to_pass: [a]}\n", []string{"c.yaml: tests.format: is required when tests are listed (one of go-test-json, junit-xml, libtest)"}},
		{"in both lists", "tests: {format: libtest, fail_to_pass: [a, b], pass_to_pass: [b, '']}\n", []string{
			`c.yaml:23: tests.pass_to_pass[0]: "b" is already listed as tests.fail_to_pass[1]`,
			"c.yaml:23: tests.pass_to_pass[1]: is empty",
		}},
		{"unknown key", "tests: {format: libtest, FAIL_TO_PASS: [a]}\n", []string{`c.yaml:23: unknown key "tests.FAIL_TO_PASS"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ps := ParseConfig("c.yaml", []byte(validConfig+tt.tests))
			if diff := cmp.Diff(tt.want, problemStrings(ps)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
	noFuture := edit(t, "  future_test: diffs/test.diff\n", "  future_test:\n") + "tests: {format: libtest, fail_to_pass: [a]}\n"
	if _, ps := ParseConfig("c.yaml", []byte(noFuture)); len(ps) != 1 || !strings.Contains(ps[0].Msg, "no files.future_test") {
		t.Errorf("fail_to_pass without future_test: %v", ps)
	}
}

// TestConfigWarnsExitCodeOnly: a task without lists is still valid, but
// said to be judged by exit code only; one with hidden tests is told that
// an init that exits 0 passes them, and how to write the lists.
func TestConfigWarnsExitCodeOnly(t *testing.T) {
	cfg, ps := ParseConfig("c.yaml", []byte(validConfig))
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	want := "judged by exit status: an init that exits 0 passes; write the lists with `ssebench dataset verify --write-tests`"
	if w := cfg.Warnings(); len(w) != 1 || w[0] != want {
		t.Errorf("Warnings() = %q, want %q", w, want)
	}
	cfg, ps = ParseConfig("c.yaml", []byte(edit(t, "  future_test: diffs/test.diff\n", "  future_test:\n")))
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	if w := cfg.Warnings(); len(w) != 1 || !strings.Contains(w[0], "judged by the test script's exit code only") {
		t.Errorf("Warnings() without future_test = %q", w)
	}
	cfg, _ = ParseConfig("c.yaml", []byte(validConfig+"tests: {format: libtest, pass_to_pass: [a]}\n"))
	if w := cfg.Warnings(); len(w) != 0 {
		t.Errorf("Warnings() with lists = %q", w)
	}
}
