package sserun

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// testScript runs the test script in s. When the task has a tests.format,
// the script writes a report to $SSE_TEST_REPORT, which is read once it
// ended: the tests' own text (go test -json carries it) and, for a check of
// the grade, every test's outcome are added to the output, and the check
// passes only when every test of lists passed. The exit status alone is
// not enough: the script runs the agent's code, which can exit 0 before
// any test runs (an init, a TestMain).
//
// Nor is a report that parses: the test binary that writes it holds the
// agent's code. So when the task's lists are judged from go-test-json, the
// grader's canary (canary.go) is added to each package the hidden tests
// touch before the script runs, and taken out after it: the check then
// passes only when the listed tests passed and every canary behaved, and
// the exit status is not judged (the canary's test that must fail makes
// it non-zero). A report that got a canary wrong is forged: the check
// fails with Failed "report forged" and the verdict says so. Without a
// canary the script must also exit 0.
//
// check is the grade's check (contract.CheckTest, contract.CheckIntentTest),
// or "" for the agent's test tool, which is not judged and never gets a
// canary. testCheck says how the check was judged too.
func (d *Daemon) testScript(ctx context.Context, s *scratch, check string, lists ...NamedList) Result {
	r, _ := d.testCheck(ctx, s, check, lists...)
	return r
}

// testCheck is testScript, and says how the check was judged.
func (d *Daemon) testCheck(ctx context.Context, s *scratch, check string, lists ...NamedList) (Result, testVerdict) {
	if s.report != "" {
		// The build ran in the same copy, with the agent's code: what it
		// left there is not this run's report.
		_ = os.Remove(s.report)
	}
	var v testVerdict
	var extra bytes.Buffer
	var cs []*canary
	if check != "" && d.canaryApplies() {
		dirs, err := d.canaryDirs()
		var notes []string
		if err == nil {
			uid, gid := d.runnerIDs()
			// The test check adds no test file: intent_test, which
			// judges both lists, has the hidden tests' files to add the
			// canary to, and a package whose only tests are hidden would
			// get a test binary for nothing but the canary.
			cs, notes, err = plantCanaries(s.src, dirs, uid, gid, check == contract.CheckIntentTest)
		}
		if err != nil {
			// Judged without it, the report would be taken on the word
			// of the agent's code.
			return Result{Exit: -1, Failed: "the grader could not add its tests",
				Output: fmt.Sprintf("[ssebench: %s failed: %v]\n", check, err)}, v
		}
		for _, n := range notes {
			fmt.Fprintf(&extra, "[ssebench: no grader's tests in %s]\n", n)
		}
		v.canary = len(cs) > 0
	}
	r := d.script(ctx, s, d.cfg.Scripts.Test)
	// The tree goes on to the proofs of concept as the agent left it.
	if err := unplantCanaries(s.src, cs); err != nil {
		fmt.Fprintf(&extra, "[ssebench: taking the grader's tests out of the tree: %v]\n", err)
	}
	if s.report == "" || r.Skipped != "" {
		return r, v
	}
	listed := 0
	for _, l := range lists {
		listed += len(l.Names)
	}
	uid, _ := d.runnerIDs()
	rep, err := ReadTestReport(s.report, d.cfg.Tests.Format, DefaultReportLimit, uid)
	switch {
	case err != nil && check != "" && (listed > 0 || len(cs) > 0):
		fmt.Fprintf(&extra, "\n[ssebench: %s failed: %v]\n", check, err)
		if r.OK || len(cs) > 0 {
			r.OK, r.Failed = false, "no usable test report"
		}
	case err != nil:
		fmt.Fprintf(&extra, "\n[ssebench: %v]\n", err)
	default:
		if rep.Format == FormatGoTestJSON {
			extra.WriteString(rep.Output.String())
		}
		if check == "" {
			break
		}
		var cv canaryVerdict
		if len(cs) > 0 {
			cv = judgeCanaries(rep, cs)
			rep.Tests = withoutCanaries(rep.Tests, cs)
		}
		extra.WriteString("\n")
		rep.WriteOutcomes(&extra)
		if listed == 0 && len(cs) == 0 {
			break
		}
		j := rep.Judge(lists...)
		fmt.Fprintf(&extra, "[ssebench: %s judged by name: %d of %s passed]\n", check, j.Passed, plural(j.Listed, "listed test", "listed tests"))
		for _, p := range j.Problems {
			extra.WriteString(p + "\n")
		}
		if len(cs) == 0 {
			if !j.OK && r.OK {
				r.OK, r.Failed = false, plural(j.Listed-j.Passed, "listed test", "listed tests")+" did not pass"
			}
			break
		}
		for _, l := range cv.Lines {
			extra.WriteString(l + "\n")
		}
		r.OK = j.OK && cv.OK && !r.TimedOut
		// Said only of a check that passed: of one that failed, the
		// exit status would read as the reason, which the last line
		// states instead.
		if r.Exit != 0 && r.OK {
			fmt.Fprintf(&extra, "[ssebench: the test script exited %d, which is not judged: the grader's test that must fail makes it non-zero by design]\n", r.Exit)
		}
		switch {
		case cv.Forged != "":
			fmt.Fprintf(&extra, "[ssebench: the report is forged: %s]\n", cv.Forged)
			r.Failed = contract.IntegrityReportForged
			v.forged = true
		case r.TimedOut:
		case !j.OK:
			r.Failed = plural(j.Listed-j.Passed, "listed test", "listed tests") + " did not pass"
		case !cv.OK:
			r.Failed = cv.Failed
		}
		if !r.OK && r.Failed != "" && cv.Forged == "" {
			fmt.Fprintf(&extra, "[ssebench: %s failed: %s]\n", check, r.Failed)
		}
	}
	if extra.Len() > 0 {
		t := newTailBuffer(d.o.outputLimit)
		_, _ = t.Write([]byte(r.Output))
		_, _ = t.Write(extra.Bytes())
		r.Output, r.OutputCut = t.String(), r.OutputCut+t.cut()
	}
	return r, v
}

// testVerdict is how testScript judged a check of the grade.
type testVerdict struct {
	// canary: the run carried the grader's canary.
	canary bool
	// forged: the report got the canary wrong.
	forged bool
}

// judged sums up how the test checks that ran were judged (verdicts, by
// check) for the grade: Judged and Integrity. A task that lists no test is
// judged by exit status. Otherwise intent_test decides when it ran: it
// judges both lists, so a test check without a canary (the packages the
// hidden tests touch have no test file without them) leaves a forger
// nothing to gain.
func (d *Daemon) judged(verdicts map[string]testVerdict) (judged, integrity string) {
	if len(verdicts) == 0 {
		return "", ""
	}
	for _, v := range verdicts {
		if v.forged {
			integrity = contract.IntegrityReportForged
		}
	}
	if !d.cfg.Tests.Listed() {
		return contract.JudgedExitStatus, integrity
	}
	v, ok := verdicts[contract.CheckIntentTest]
	if !ok {
		v = verdicts[contract.CheckTest]
	}
	if v.canary {
		return contract.JudgedByName, integrity
	}
	return contract.JudgedByNameNoCanary, integrity
}

// canaryApplies reports whether the grade's test checks carry the
// grader's canary: the task's tests are listed and read from go-test-json
// (canary.go says why only that format). noCanary switches it off for the
// benchmark that measures its cost.
func (d *Daemon) canaryApplies() bool {
	return !noCanary && d.cfg.Tests.Format == FormatGoTestJSON && d.cfg.Tests.Listed()
}

// noCanary is a test seam: BenchmarkGradeCanary grades without the canary
// to measure what it costs.
var noCanary bool

// plural is "1 proof" or "n proofs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
