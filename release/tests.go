package release

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/results"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// testRuns are the test outcomes of a task's two verification runs, as
// their grades wrote them at the end of test.log and intent_test.log:
// the buggy tree (the dummy agent) and the patched tree (the reference
// agent), each without and with the hidden tests.
type testRuns struct {
	plainBefore, before, plainAfter, after []contract.TestResult
	// stubbed: before is the stubs run's, whose stubs panic.
	stubbed bool
}

// failsBefore says whether the test id does not pass on the buggy tree
// with the hidden tests. A test that has no result there was kept from
// running: a panic of an earlier test (the bug's, or a stub's) or a
// timeout ended the test binary. It did not fail for the bug itself, so
// its run without the hidden tests tells: one that passes there is not
// failing before the fix (go-2023-1930's crash took 338 such tests down,
// which counted as fail_to_pass).
func (r testRuns) failsBefore(id string) bool {
	if passes(r.before, id) {
		return false
	}
	if !slices.ContainsFunc(r.before, func(t contract.TestResult) bool { return t.Matches(id) }) {
		return !passes(r.plainBefore, id)
	}
	return true
}

// passesBefore says whether the test id passes on the buggy tree with the
// hidden tests (or was kept from running and passes without them).
func (r testRuns) passesBefore(id string) bool { return !r.failsBefore(id) }

// split derives a task's lists from its runs, SWE-bench style:
// fail_to_pass are the tests that pass on the patched tree with the hidden
// tests and did not pass on the buggy tree with them (failed, skipped or
// did not run); pass_to_pass pass in all four runs, so that the test
// check, which runs without the hidden tests, finds them too. A name is
// the test's own unless two groups (Go packages, JUnit classes) have a test
// of that name: then it is GROUP.NAME. Both lists are sorted.
func (r testRuns) split() (failToPass, passToPass []string) {
	groups := map[string]map[string]bool{}
	for _, run := range [][]contract.TestResult{r.plainBefore, r.before, r.plainAfter, r.after} {
		for _, t := range run {
			if groups[t.Name] == nil {
				groups[t.Name] = map[string]bool{}
			}
			groups[t.Name][t.Group] = true
		}
	}
	name := func(t contract.TestResult) string {
		if len(groups[t.Name]) > 1 {
			return t.ID()
		}
		return t.Name
	}
	for _, t := range r.after {
		if !passes(r.after, t.ID()) {
			continue
		}
		n := name(t)
		switch {
		case r.failsBefore(t.ID()):
			failToPass = append(failToPass, n)
		case passes(r.plainBefore, t.ID()) && passes(r.plainAfter, t.ID()):
			passToPass = append(passToPass, n)
		}
	}
	slices.Sort(failToPass)
	slices.Sort(passToPass)
	return slices.Compact(failToPass), slices.Compact(passToPass)
}

// notRunBefore are the groups (Go packages, JUnit classes) that have
// tests after the fix and none on the buggy tree with the hidden tests:
// their tests did not compile there, sorted.
func (r testRuns) notRunBefore() []string {
	ran := map[string]bool{}
	for _, t := range r.before {
		ran[t.Group] = true
	}
	var out []string
	for _, t := range r.after {
		if !ran[t.Group] && !slices.Contains(out, t.Group) {
			out = append(out, t.Group)
		}
	}
	slices.Sort(out)
	return out
}

// whyNoPassToPass says why split found no pass_to_pass test.
func (r testRuns) whyNoPassToPass() string {
	if len(r.plainBefore) == 0 {
		return "the affected packages have no test besides the hidden ones"
	}
	return "none of the packages' other tests passes in all four runs (buggy and fixed, with and without the hidden tests)"
}

// passes reports whether the listed name has a result in run, and every
// result it has is a pass: the grade's own rule.
func passes(run []contract.TestResult, listed string) bool {
	n := 0
	for _, t := range run {
		if t.Matches(listed) {
			if t.Outcome != contract.TestPass {
				return false
			}
			n++
		}
	}
	return n > 0
}

// readTestRuns reads the outcome blocks of the task's two runs.
func readTestRuns(t *task.Task, done map[string]*results.Run) (testRuns, error) {
	var r testRuns
	// With stubs, the buggy tree's hidden tests are the stubs run's:
	// without them they do not compile.
	before := DummyAgent
	if _, ok := done[evaluate.Job{Task: t.ID, Agent: StubsAgent, Attempt: 1}.Key()]; ok {
		before, r.stubbed = StubsAgent, true
	}
	for _, x := range []struct {
		agent, check string
		into         *[]contract.TestResult
	}{
		{DummyAgent, contract.CheckTest, &r.plainBefore}, {before, contract.CheckIntentTest, &r.before},
		{ReferenceAgent, contract.CheckTest, &r.plainAfter}, {ReferenceAgent, contract.CheckIntentTest, &r.after},
	} {
		run, ok := done[evaluate.Job{Task: t.ID, Agent: x.agent, Attempt: 1}.Key()]
		if !ok {
			return r, fmt.Errorf("the %s run did not finish", x.agent)
		}
		log := filepath.Join(run.Dir, contract.CheckLog(x.check))
		f, err := os.Open(log)
		if err != nil {
			return r, fmt.Errorf("the %s run has no %s: %w", x.agent, contract.CheckLog(x.check), err)
		}
		tests, ok, err := contract.ReadTestOutcomes(f)
		f.Close()
		if err != nil {
			return r, fmt.Errorf("reading %s: %w", log, err)
		}
		if !ok {
			return r, fmt.Errorf("the %s run's %s has no test report: does the test script write one to $%s?", x.agent, contract.CheckLog(x.check), contract.EnvTestReport)
		}
		*x.into = tests
	}
	return r, nil
}

// judgeTests adds the "tests" findings of task t: with write, the lists
// the runs give are written into its config; without, the config's lists
// must be what the runs give, one finding per test that is not.
func (r *Report) judgeTests(t *task.Task, done map[string]*results.Run, write bool) {
	f := func(ok bool, why string) Finding {
		return Finding{Task: t.ID, Agent: "-", Check: "tests", OK: ok, Why: why}
	}
	tests := t.Config.Tests
	if tests == nil || tests.Format == "" {
		if write {
			r.Findings = append(r.Findings, f(false, "tests.format is not set: set it to the format the test script writes to $SSE_TEST_REPORT (one of "+strings.Join(contract.TestFormats, ", ")+")"))
		} else {
			r.Warnings = append(r.Warnings, t.ID+": no tests listed: its test checks are judged by the test script's exit code only (fill them with --write-tests)")
		}
		return
	}
	runs, err := readTestRuns(t, done)
	if err != nil {
		r.Findings = append(r.Findings, f(false, err.Error()))
		return
	}
	if groups := runs.notRunBefore(); len(groups) > 0 {
		stubbed := ""
		if _, ok := done[evaluate.Job{Task: t.ID, Agent: StubsAgent, Attempt: 1}.Key()]; ok {
			stubbed = ", even with the stubs of " + task.StubsFile
		}
		r.Findings = append(r.Findings, f(false, fmt.Sprintf("no hidden test of %s ran on the buggy tree%s: they do not compile without what the fix adds, so every one fails whatever the fix; name what they call in the task text and declare it in %s (docs/tasks.md), or import the task again", strings.Join(groups, ", "), stubbed, task.StubsFile)))
		return
	}
	f2p, p2p := runs.split()
	if write {
		if len(f2p) == 0 {
			r.Findings = append(r.Findings, f(false, "no test fails before the fix and passes after: the hidden tests do not test the fix"))
			return
		}
		if len(p2p) == 0 {
			r.Warnings = append(r.Warnings, t.ID+": no pass_to_pass test: "+runs.whyNoPassToPass()+"; the grade then sees no regression the fix makes")
		}
		if err := WriteTests(t.ConfigFile, f2p, p2p); err != nil {
			r.Findings = append(r.Findings, f(false, err.Error()))
			return
		}
		r.Findings = append(r.Findings, f(true, fmt.Sprintf("wrote %s and %s to %s", results.Plural(len(f2p), "fail_to_pass test", "fail_to_pass tests"), results.Plural(len(p2p), "pass_to_pass test", "pass_to_pass tests"), t.ConfigFile)))
		return
	}
	if !tests.Listed() {
		r.Warnings = append(r.Warnings, t.ID+": no tests listed: its test checks are judged by the test script's exit code only (fill them with --write-tests)")
		return
	}
	var bad []Finding
	check := func(list string, listed, want []string, what string, holds func(string) bool) {
		for _, n := range listed {
			if !holds(n) {
				bad = append(bad, f(false, fmt.Sprintf("tests.%s lists %s, but it does not %s", list, n, what)))
			}
		}
		exact := map[string]bool{}
		for _, l := range listed {
			exact[l] = true
		}
		for _, n := range want {
			// The same name first: comparing every listed name with
			// every wanted one through the run's results took minutes
			// for a list of hundreds.
			if !exact[n] && !slices.ContainsFunc(listed, func(l string) bool { return sameTest(runs.after, l, n) }) {
				bad = append(bad, f(false, fmt.Sprintf("tests.%s lacks %s, which does %s", list, n, what)))
			}
		}
	}
	check("fail_to_pass", tests.FailToPass, f2p, "fail before the fix and pass after", func(n string) bool {
		return passes(runs.after, n) && runs.failsBefore(n)
	})
	check("pass_to_pass", tests.PassToPass, p2p, "pass before and after the fix, with and without the hidden tests", func(n string) bool {
		return passes(runs.after, n) && runs.passesBefore(n) && passes(runs.plainBefore, n) && passes(runs.plainAfter, n)
	})
	if len(bad) == 0 {
		r.Findings = append(r.Findings, f(true, ""))
		return
	}
	r.Findings = append(r.Findings, bad...)
}

// sameTest reports whether two names name the same tests of run.
func sameTest(run []contract.TestResult, a, b string) bool {
	if a == b {
		return true
	}
	for _, t := range run {
		if t.Matches(a) != t.Matches(b) {
			return false
		}
	}
	return slices.ContainsFunc(run, func(t contract.TestResult) bool { return t.Matches(a) })
}

// WriteTests sets tests.fail_to_pass and tests.pass_to_pass in the config
// file, keeping tests.format and every other line as it was: the lines of
// the tests mapping are replaced (or added at the end).
func WriteTests(file string, failToPass, passToPass []string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("writing the tests: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return fmt.Errorf("writing the tests: %s is not a YAML mapping", file)
	}
	root := doc.Content[0]
	var cur task.Tests
	start, end := -1, -1 // 0-based lines of the tests mapping, end exclusive
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "tests" {
			continue
		}
		if err := root.Content[i+1].Decode(&cur); err != nil {
			return fmt.Errorf("writing the tests: %s: tests: %w", file, err)
		}
		start = root.Content[i].Line - 1
		if i+2 < len(root.Content) {
			end = root.Content[i+2].Line - 1
		}
	}
	cur.FailToPass, cur.PassToPass = failToPass, passToPass
	var block bytes.Buffer
	enc := yaml.NewEncoder(&block)
	enc.SetIndent(2)
	if err := enc.Encode(struct {
		Tests task.Tests `yaml:"tests"`
	}{cur}); err != nil {
		return err
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if start < 0 {
		start, end = len(lines), len(lines)
		if start > 0 && !strings.HasSuffix(lines[start-1], "\n") {
			lines[start-1] += "\n"
		}
	}
	if end < 0 || end > len(lines) {
		end = len(lines)
	}
	// Comments and blank lines just before the next key stay with it.
	for end > start+1 && isBlankOrComment(lines[end-1]) {
		end--
	}
	out := strings.Join(lines[:start], "") + block.String() + strings.Join(lines[end:], "")
	// What was wrong before stays wrong (validate says so); the lists
	// must add nothing.
	_, before := task.ParseConfig(file, data)
	if _, after := task.ParseConfig(file, []byte(out)); len(after) > len(before) {
		return fmt.Errorf("writing the tests would make %s invalid: %s", file, after[len(after)-1].Msg)
	}
	fi, err := os.Stat(file)
	if err != nil {
		return err
	}
	return safefile.WriteBytes(file, []byte(out), fi.Mode().Perm())
}

func isBlankOrComment(line string) bool {
	s := strings.TrimSpace(line)
	return s == "" || strings.HasPrefix(s, "#")
}
