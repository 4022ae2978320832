package release

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/results"
	"github.com/42-b3yond-6ug/ssebench/sserun"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// block is a check log's end as the grader writes it, from "outcome name
// group" triples.
func block(tests ...string) string {
	rep := &sserun.TestReport{Format: "go-test-json"}
	for _, s := range tests {
		f := strings.Fields(s)
		rep.Tests = append(rep.Tests, sserun.TestResult{Outcome: f[0], Name: f[1], Group: f[2]})
	}
	var b strings.Builder
	b.WriteString("ok  \texample/kv\n")
	rep.WriteOutcomes(&b)
	return b.String()
}

// kvRuns are the logs of the example task's runs: the hidden test
// TestParseErrors/short panics on the buggy tree, which takes TestUnquote
// down with it; TestParse exists in two packages.
var kvRuns = map[string]map[string]string{
	DummyAgent: {
		"test.log":        block("pass TestParse ex/kv", "pass TestParse ex/kv/io", "pass TestUnquote ex/kv", "pass TestParseErrors ex/kv"),
		"intent_test.log": block("pass TestParse ex/kv", "pass TestParse ex/kv/io", "fail TestParseErrors/short ex/kv", "fail TestParseErrors ex/kv"),
	},
	ReferenceAgent: {
		"test.log":        block("pass TestParse ex/kv", "pass TestParse ex/kv/io", "pass TestUnquote ex/kv", "pass TestParseErrors ex/kv"),
		"intent_test.log": block("pass TestParse ex/kv", "pass TestParse ex/kv/io", "pass TestParseErrors/short ex/kv", "pass TestParseErrors ex/kv", "pass TestUnquote ex/kv"),
	},
}

func fakeRuns(t testing.TB, logs map[string]map[string]string) map[string]*results.Run {
	done := map[string]*results.Run{}
	for agent, files := range logs {
		dir := t.TempDir()
		for n, c := range files {
			if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		done[evaluate.Job{Task: "kv-1", Agent: agent, Attempt: 1}.Key()] = &results.Run{Dir: dir}
	}
	return done
}

const kvConfig = `id: kv-1
# the project
project: kv
scripts:
  build: scripts/build.sh
  test: scripts/test.sh
files:
  future_test: diffs/test.diff
tests:
  format: go-test-json
  fail_to_pass: [Stale]

# kept as it is
originality: crafted
`

func kvTask(t testing.TB, config string) *task.Task {
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, _ := task.ParseConfig(file, []byte(config))
	return &task.Task{ID: "kv-1", ConfigFile: file, Config: cfg}
}

// TestVerifyWritesTests: --write-tests fills the lists from the runs and
// keeps every other line of the config.
func TestVerifyWritesTests(t *testing.T) {
	tk := kvTask(t, kvConfig)
	r := &Report{}
	r.judgeTests(tk, fakeRuns(t, kvRuns), true)
	if f := r.Findings; len(f) != 1 || !f[0].OK {
		t.Fatalf("findings = %+v", f)
	}
	got, _ := os.ReadFile(tk.ConfigFile)
	// TestUnquote, which the panic kept from running on the buggy tree
	// and which passes there without the hidden tests, is no
	// fail_to_pass test.
	want := strings.Replace(kvConfig, "  fail_to_pass: [Stale]\n", `  fail_to_pass:
    - TestParseErrors
    - TestParseErrors/short
  pass_to_pass:
    - TestUnquote
    - ex/kv.TestParse
    - ex/kv/io.TestParse
`, 1)
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

// TestVerifyChecksTests: without --write-tests, a list that differs from
// what the runs give fails, one finding per test.
func TestVerifyChecksTests(t *testing.T) {
	done := fakeRuns(t, kvRuns)
	good := "  fail_to_pass: [TestParseErrors, TestParseErrors/short]\n  pass_to_pass: [TestUnquote, ex/kv.TestParse, ex/kv/io.TestParse]\n"
	for _, tt := range []struct {
		name, lists string
		want        []string
	}{
		{"as the runs give them", good, nil},
		{"a test that passes before in fail_to_pass, one missing",
			"  fail_to_pass: [TestParseErrors, ex/kv.TestParse]\n  pass_to_pass: [TestUnquote, ex/kv/io.TestParse]\n",
			[]string{
				"tests.fail_to_pass lists ex/kv.TestParse, but it does not fail before the fix and pass after",
				"tests.fail_to_pass lacks TestParseErrors/short, which does fail before the fix and pass after",
				"tests.pass_to_pass lacks ex/kv.TestParse, which does pass before and after the fix, with and without the hidden tests",
			}},
		{"a test the panic kept from running, in fail_to_pass", "  fail_to_pass: [TestParseErrors, TestParseErrors/short, TestUnquote]\n  pass_to_pass: [ex/kv.TestParse, ex/kv/io.TestParse]\n",
			[]string{
				"tests.fail_to_pass lists TestUnquote, but it does not fail before the fix and pass after",
				"tests.pass_to_pass lacks TestUnquote, which does pass before and after the fix, with and without the hidden tests",
			}},
		{"a test no run has", "  fail_to_pass: [TestParseErrors, TestParseErrors/short, TestGone]\n  pass_to_pass: [TestUnquote, ex/kv.TestParse, ex/kv/io.TestParse]\n",
			[]string{"tests.fail_to_pass lists TestGone, but it does not fail before the fix and pass after"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tk := kvTask(t, strings.Replace(kvConfig, "  fail_to_pass: [Stale]\n", tt.lists, 1))
			r := &Report{}
			r.judgeTests(tk, done, false)
			var got []string
			for _, f := range r.Findings {
				if !f.OK {
					got = append(got, f.Why)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("failed findings (-want +got):\n%s", diff)
			}
		})
	}
	// No lists: a warning, not a failure.
	r := &Report{}
	r.judgeTests(kvTask(t, strings.Replace(kvConfig, "  fail_to_pass: [Stale]\n", "", 1)), done, false)
	if len(r.Failed()) != 0 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "exit code only") {
		t.Errorf("without lists: findings %+v, warnings %q", r.Findings, r.Warnings)
	}
	// A run whose log has no report names the script.
	logs := map[string]map[string]string{DummyAgent: {"test.log": "ok\n", "intent_test.log": "ok\n"}, ReferenceAgent: kvRuns[ReferenceAgent]}
	r = &Report{}
	r.judgeTests(kvTask(t, kvConfig), fakeRuns(t, logs), false)
	if f := r.Failed(); len(f) != 1 || !strings.Contains(f[0].Why, "$"+contract.EnvTestReport) {
		t.Errorf("without a report: %+v", r.Findings)
	}
}

// TestVerifyHiddenTestsNotCompiled: a package whose hidden tests have no
// result on the buggy tree (they did not compile: they call what only the
// fix adds) fails the task, in both modes; with a stubs run, the lists come
// from it, and the package's other tests become pass_to_pass.
func TestVerifyHiddenTestsNotCompiled(t *testing.T) {
	logs := map[string]map[string]string{
		DummyAgent: {
			"test.log":        block("pass TestParse ex/kv", "pass TestUnquote ex/kv"),
			"intent_test.log": "# ex/kv [ex/kv.test]\n./kv_test.go:9:2: undefined: redactURL\n" + block(),
		},
		ReferenceAgent: {
			"test.log":        block("pass TestParse ex/kv", "pass TestUnquote ex/kv"),
			"intent_test.log": block("pass TestParse ex/kv", "pass TestUnquote ex/kv", "pass TestRedact ex/kv"),
		},
	}
	for _, write := range []bool{true, false} {
		r := &Report{}
		r.judgeTests(kvTask(t, kvConfig), fakeRuns(t, logs), write)
		if f := r.Failed(); len(f) != 1 || !strings.Contains(f[0].Why, "no hidden test of ex/kv ran on the buggy tree") {
			t.Errorf("write=%v: findings %+v", write, r.Findings)
		}
	}
	logs[StubsAgent] = map[string]string{
		"test.log": block("pass TestParse ex/kv", "pass TestUnquote ex/kv"),
		// TestRedact calls a stub, which panics: TestUnquote, after it,
		// did not run, and passes on the buggy tree without the hidden
		// tests: it is no fail_to_pass test.
		"intent_test.log": block("pass TestParse ex/kv", "fail TestRedact ex/kv"),
	}
	tk := kvTask(t, kvConfig)
	r := &Report{}
	r.judgeTests(tk, fakeRuns(t, logs), true)
	if f := r.Failed(); len(f) != 0 {
		t.Fatalf("with stubs: %+v", f)
	}
	got, _ := os.ReadFile(tk.ConfigFile)
	if !strings.Contains(string(got), "  fail_to_pass:\n    - TestRedact\n  pass_to_pass:\n    - TestParse\n    - TestUnquote\n") {
		t.Errorf("with stubs, config:\n%s", got)
	}
	if len(r.Warnings) != 0 {
		t.Errorf("with pass_to_pass tests, warnings %q", r.Warnings)
	}
	// Every other test fails with the stubs: no pass_to_pass, and a
	// warning that says so.
	logs[StubsAgent]["intent_test.log"] = block("fail TestParse ex/kv", "fail TestUnquote ex/kv", "fail TestRedact ex/kv")
	r = &Report{}
	r.judgeTests(kvTask(t, kvConfig), fakeRuns(t, logs), true)
	if len(r.Failed()) != 0 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "kv-1: no pass_to_pass test: none of the packages' other tests passes in all four runs") {
		t.Errorf("without pass_to_pass: findings %+v, warnings %q", r.Findings, r.Warnings)
	}
}

// TestWriteTestsDefersExitStatus: before the lists exist, a test that
// fails on both trees (it needs the network) fails the reference's and the
// dummy's function tests by the script's exit status; --write-tests still
// lists the task, leaving that test out, so that the next verify judges
// by name. Without --write-tests the failures stand.
func TestWriteTestsDefersExitStatus(t *testing.T) {
	logs := map[string]map[string]string{
		DummyAgent: {
			"test.log":        block("pass TestParse ex/kv", "fail TestNet ex/kv"),
			"intent_test.log": block("pass TestParse ex/kv", "fail TestNet ex/kv", "fail TestParseErrors ex/kv"),
		},
		ReferenceAgent: {
			"test.log":        block("pass TestParse ex/kv", "fail TestNet ex/kv"),
			"intent_test.log": block("pass TestParse ex/kv", "fail TestNet ex/kv", "pass TestParseErrors ex/kv"),
		},
	}
	failedCheck := func(log string) *contract.Check { return &contract.Check{Exit: 1, Log: log} }
	res := map[string]*contract.RunResult{
		DummyAgent: {Judged: contract.JudgedExitStatus, Build: &contract.Check{OK: true}, Test: failedCheck("test.log"), IntentTest: failedCheck("intent_test.log")},
		ReferenceAgent: {Judged: contract.JudgedExitStatus, Build: &contract.Check{OK: true}, Test: failedCheck("test.log"),
			IntentTest: failedCheck("intent_test.log")},
	}
	for _, write := range []bool{true, false} {
		done := fakeRuns(t, logs)
		for agent, r := range res {
			run := done[evaluate.Job{Task: "kv-1", Agent: agent, Attempt: 1}.Key()]
			b, _ := json.Marshal(results.Summary{RunID: agent, Task: "kv-1", Agent: agent, Status: "ok"})
			if err := os.WriteFile(filepath.Join(run.Dir, results.SummaryFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := contract.WriteRunResult(run.Dir, r); err != nil {
				t.Fatal(err)
			}
			loaded, err := results.Load(run.Dir)
			if err != nil {
				t.Fatal(err)
			}
			done[evaluate.Job{Task: "kv-1", Agent: agent, Attempt: 1}.Key()] = loaded
		}
		tk := kvTask(t, strings.Replace(kvConfig, "  fail_to_pass: [Stale]\n", "", 1))
		r := &Report{}
		r.judge(tk, &task.Manifest{}, done, nil, nil, write)
		var failedChecks []string
		for _, f := range r.Failed() {
			failedChecks = append(failedChecks, f.Agent+" "+f.Check)
		}
		got, _ := os.ReadFile(tk.ConfigFile)
		if write {
			if len(failedChecks) != 0 || !strings.Contains(string(got), "  fail_to_pass:\n    - TestParseErrors\n  pass_to_pass:\n    - TestParse\n") {
				t.Errorf("--write-tests: failed %q, config:\n%s", failedChecks, got)
			}
			continue
		}
		if want := []string{"reference function_test", "reference intent_test", "dummy function_test"}; !slices.Equal(failedChecks, want) {
			t.Errorf("verify: failed %q, want %q", failedChecks, want)
		}
	}
}

// BenchmarkJudgeTestsLongLists judges a task whose lists hold thousands
// of tests against runs of as many results (subtests), as verify does
// for go-2026-6629: the lists are the runs' own names, found at once.
func BenchmarkJudgeTestsLongLists(b *testing.B) {
	var results, p2p []string
	for i := range 3000 {
		results = append(results, fmt.Sprintf("pass TestCase%04d ex/kv", i))
		p2p = append(p2p, fmt.Sprintf("TestCase%04d", i))
	}
	before := block(append(slices.Clone(results), "fail TestFix ex/kv")...)
	after := block(append(slices.Clone(results), "pass TestFix ex/kv")...)
	logs := map[string]map[string]string{
		DummyAgent:     {"test.log": block(results...), "intent_test.log": before},
		ReferenceAgent: {"test.log": block(results...), "intent_test.log": after},
	}
	config := strings.Replace(kvConfig, "  fail_to_pass: [Stale]\n", "  fail_to_pass: [TestFix]\n  pass_to_pass: ["+strings.Join(p2p, ", ")+"]\n", 1)
	done := fakeRuns(b, logs)
	tk := kvTask(b, config)
	b.ResetTimer()
	for b.Loop() {
		r := &Report{}
		r.judgeTests(tk, done, false)
		if len(r.Failed()) != 0 {
			b.Fatalf("findings %+v", r.Failed()[0])
		}
	}
}
