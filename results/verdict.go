package results

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// A run's verdict in one word (Run.Verdict): what `runs ls`, the
// progress lines and grade's lines print.
const (
	VerdictPassed    = "PASSED"
	VerdictFailed    = "FAILED"
	VerdictNotGraded = "NOT GRADED"
	// VerdictForged: the run has an integrity verdict (result.json's
	// integrity): the grade found its evidence forged. It is neither
	// passed nor failed, and reports count it apart.
	VerdictForged = "FORGED"
	// VerdictNotApplied: the run graded a prediction whose patch does
	// not apply (or is no diff), as SWE-bench's harness reports it apart:
	// the unchanged source was graded, so it is not passed, but it is no
	// failed fix either.
	VerdictNotApplied = "NOT APPLIED"
)

// ruleAudit is the name a failed audit takes among the failed checks of
// Grade, under FailOnAudit.
const ruleAudit = "audit"

// FailOnAudit marks runs so that each one the audit flagged counts as
// failed (`eval --fail-on-audit`, `runs report --fail-on-audit`): Passed
// is then false, Grade says "FAILED: audit", and a report of them says
// the flag was given.
func FailOnAudit(runs []*Run) {
	for _, r := range runs {
		r.FailOnAudit = true
	}
}

// Integrity is the run's integrity verdict (contract.IntegrityReportForged,
// ...), "" when it has none or was stopped before its grade.
func (r *Run) Integrity() string {
	if r.Result == nil || r.Stopped() {
		return ""
	}
	return r.Result.Integrity
}

// Forged says the run has an integrity verdict.
func (r *Run) Forged() bool { return r.Integrity() != "" }

// Flagged says the audit of the run's patch found something a fix never
// needs (result.json's audit is not empty).
func (r *Run) Flagged() bool { return r.Result != nil && len(r.Result.Audit) > 0 }

// Judged is how the run's test checks were judged (contract.JudgedByName,
// ...), "" when no test check ran.
func (r *Run) Judged() string {
	if r.Result == nil {
		return ""
	}
	return r.Result.Judged
}

// FailedByAudit says the run passed its checks and FailOnAudit turns it
// into a failure.
func (r *Run) FailedByAudit() bool {
	return r.FailOnAudit && r.Flagged() && r.Result.Passed && r.Integrity() == ""
}

// Verdict is the run's verdict in one word: VerdictPassed,
// VerdictFailed, VerdictNotGraded, VerdictForged or VerdictNotApplied.
func (r *Run) Verdict() string {
	switch {
	case r.Forged():
		return VerdictForged
	case !r.Graded():
		return VerdictNotGraded
	case r.NotApplied():
		return VerdictNotApplied
	case r.Passed():
		return VerdictPassed
	}
	return VerdictFailed
}

// IntegrityText says what an integrity verdict means, for a reader who
// does not know the grader.
func IntegrityText(v string) string {
	switch v {
	case contract.IntegrityReportForged:
		return "the test report got the grader's canary tests wrong: the test binary, which holds the agent's code, rewrote its own report. The run is not a failed fix but a forged grade; read its patch."
	case "":
		return ""
	}
	if strings.HasPrefix(v, contract.IntegrityTreeTooLarge) {
		return "the agent's tree went past what a fix ever changes (the caps on changed bytes, one file's size and changed files) or could not be read within the snapshot's deadline: nothing was graded, and the run counts as an attempt that did not pass. Its logs are kept; read agent.log."
	}
	return "the grade found the run's evidence untrustworthy because of what the agent did; read its patch."
}

// JudgedText says how the tests were judged, and what that is worth.
func JudgedText(j string) string {
	switch j {
	case contract.JudgedByName:
		return "by name, from the test tool's report, checked with the grader's canary"
	case contract.JudgedByNameNoCanary:
		return "by name, from the test tool's report; the report format has no canary, so a report the test binary forged would not be caught"
	case contract.JudgedExitStatus:
		return "by the test script's exit status alone: the task lists no tests, so code that exits 0 under the test tool passes (`ssebench dataset verify --write-tests` writes the lists)"
	case "":
		return ""
	}
	return j
}

// FindingText is an audit finding in one line: "path:line  rule", "path
// rule" for a whole path (line 0), or the rule alone (the note that
// findings were left out). The path is PathText's.
func FindingText(f contract.AuditFinding) string {
	switch {
	case f.Path == "":
		return PathText(f.Rule)
	case f.Line == 0:
		return fmt.Sprintf("%s  %s", PathText(f.Path), PathText(f.Rule))
	}
	return fmt.Sprintf("%s:%d  %s", PathText(f.Path), f.Line, PathText(f.Rule))
}

// PathText is a path of the agent's tree as a report or a terminal may
// show it: unchanged when every character is printable, else quoted with
// Go's escapes. The agent names its files, and a newline, an escape
// sequence or a right-to-left override in a name would otherwise forge a
// line of the report or hide another name.
func PathText(p string) string {
	if strings.IndexFunc(p, func(c rune) bool { return !unicode.IsPrint(c) || c == utf8.RuneError }) < 0 {
		return p
	}
	return strconv.Quote(p)
}

// auditCount is "3 findings" for an audit, the note of findings left out
// not counted as one.
func auditCount(audit []contract.AuditFinding) string {
	n := 0
	for _, f := range audit {
		if f.Path != "" {
			n++
		}
	}
	if len(audit) > 0 && audit[len(audit)-1].Path == "" {
		return Plural(n, "finding", "findings") + " (and more not listed)"
	}
	return Plural(n, "finding", "findings")
}

// Flags are the marks of an entry a reader should not miss, in a few
// words each: "flagged by the audit (3 findings)", "judged by exit
// status", "2 protected paths dropped". Empty when there are none.
func (e Entry) Flags() []string {
	var out []string
	if len(e.Audit) > 0 {
		out = append(out, "flagged by the audit ("+auditCount(e.Audit)+")")
	}
	if e.Judged == contract.JudgedExitStatus {
		out = append(out, "judged by exit status")
	}
	if n := len(e.DroppedPaths); n > 0 {
		out = append(out, Plural(n, "protected path", "protected paths")+" dropped")
	}
	// "none: why" (sserun.SandboxNone): the user allowed the grade to run
	// without its sandbox (--allow-no-sandbox).
	if strings.HasPrefix(e.Sandbox, "none") {
		out = append(out, "graded without a sandbox ("+strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(e.Sandbox, "none"), ":"))+")")
	}
	return out
}

// ToRead are the entries a reader of a report must look at: forged
// runs, runs the audit flagged, runs judged by exit status alone, and
// runs whose protected paths were dropped, in report order.
func (rep *Report) ToRead() []Entry {
	var out []Entry
	for _, e := range rep.Entries {
		if e.Integrity != "" || len(e.Flags()) > 0 {
			out = append(out, e)
		}
	}
	return out
}

// attentionMarkdown writes the runs of ToRead as a Markdown section.
func attentionMarkdown(b *strings.Builder, rep *Report) {
	read := rep.ToRead()
	if len(read) == 0 {
		return
	}
	b.WriteString("\n## Runs to read\n\n")
	b.WriteString("Forged runs have an integrity verdict: the grade found their evidence forged; they are counted apart from the failed ones. " +
		"Flagged runs' patches hold what a fix never needs (the audit); a run judged by exit status had no test list, so its test check is weak.")
	if rep.FailOnAudit {
		b.WriteString(" Flagged runs count as failed here (--fail-on-audit).")
	}
	b.WriteString("\n\n")
	for _, e := range read {
		fmt.Fprintf(b, "- **%s** %s, %s: %s", e.ID, caseName(e), e.Agent, e.Grade)
		if f := e.Flags(); len(f) > 0 {
			b.WriteString("; " + strings.Join(f, "; "))
		}
		b.WriteString("\n")
		for _, p := range e.DroppedPaths {
			fmt.Fprintf(b, "  - dropped: `%s`\n", mdCode(PathText(p)))
		}
		for _, f := range e.Audit {
			fmt.Fprintf(b, "  - `%s`\n", mdCode(FindingText(f)))
		}
	}
}

// mdCode keeps a text of PathText's inside one Markdown code span: a
// backtick would end it.
func mdCode(s string) string { return strings.ReplaceAll(s, "`", "'") }

// Verdicts counts what the runs' verdicts say beyond pass and fail: "1
// run forged (an integrity verdict, ...); 2 runs flagged by the audit; 1
// run judged by exit status". "" when there is nothing to say.
func (rep *Report) Verdicts() string { return verdictsLine(rep) }

func verdictsLine(rep *Report) string {
	var forged, flagged, exitStatus, notApplied int
	for _, e := range rep.Entries {
		if e.Integrity != "" {
			forged++
		}
		if e.NotApplied {
			notApplied++
		}
		if e.Flagged {
			flagged++
		}
		if e.Judged == contract.JudgedExitStatus {
			exitStatus++
		}
	}
	var parts []string
	if forged > 0 {
		parts = append(parts, Plural(forged, "run", "runs")+" forged (an integrity verdict, counted apart from the failed runs)")
	}
	if flagged > 0 {
		p := Plural(flagged, "run", "runs") + " flagged by the audit"
		if rep.FailOnAudit {
			p += " (counted as failed: --fail-on-audit)"
		}
		parts = append(parts, p)
	}
	if exitStatus > 0 {
		parts = append(parts, Plural(exitStatus, "run", "runs")+" judged by exit status")
	}
	if notApplied > 0 {
		parts = append(parts, Plural(notApplied, "patch", "patches")+" not applied (no diff, or a hunk that does not apply: the unchanged source was graded, not passed)")
	}
	return strings.Join(parts, "; ")
}
