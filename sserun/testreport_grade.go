package sserun

import (
	"bytes"
	"context"
	"fmt"
	"os"
)

// testScript runs the test script in s. When the task has a tests.format,
// the script writes a report to $SSE_TEST_REPORT, which is read once it
// ended: the tests' own text (go test -json carries it) and, for a check of
// the grade, every test's outcome are added to the output, and the check
// passes only when the script exited 0 and every test of lists passed. The
// exit status alone is not enough: the script runs the agent's code, which
// can exit 0 before any test runs (an init, a TestMain).
//
// check is the grade's check (contract.CheckTest, contract.CheckIntentTest),
// or "" for the agent's test tool, which is not judged.
func (d *Daemon) testScript(ctx context.Context, s *scratch, check string, lists ...NamedList) Result {
	if s.report != "" {
		// The build ran in the same copy, with the agent's code: what it
		// left there is not this run's report.
		_ = os.Remove(s.report)
	}
	r := d.script(ctx, s, d.cfg.Scripts.Test)
	if s.report == "" || r.Skipped != "" {
		return r
	}
	listed := 0
	for _, l := range lists {
		listed += len(l.Names)
	}
	uid, _ := d.runnerIDs()
	var extra bytes.Buffer
	rep, err := ReadTestReport(s.report, d.cfg.Tests.Format, DefaultReportLimit, uid)
	switch {
	case err != nil && check != "" && listed > 0:
		fmt.Fprintf(&extra, "\n[ssebench: %s failed: %v]\n", check, err)
		if r.OK {
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
		extra.WriteString("\n")
		rep.WriteOutcomes(&extra)
		if listed == 0 {
			break
		}
		j := rep.Judge(lists...)
		fmt.Fprintf(&extra, "[ssebench: %s judged by name: %d of %s passed]\n", check, j.Passed, plural(j.Listed, "listed test", "listed tests"))
		for _, p := range j.Problems {
			extra.WriteString(p + "\n")
		}
		if !j.OK && r.OK {
			r.OK, r.Failed = false, plural(j.Listed-j.Passed, "listed test", "listed tests")+" did not pass"
		}
	}
	if extra.Len() > 0 {
		t := newTailBuffer(d.o.outputLimit)
		_, _ = t.Write([]byte(r.Output))
		_, _ = t.Write(extra.Bytes())
		r.Output, r.OutputCut = t.String(), r.OutputCut+t.cut()
	}
	return r
}

// plural is "1 proof" or "n proofs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
