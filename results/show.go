package results

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// showLogLines is how much of each check's log Show prints.
const showLogLines = 15

// WriteList writes runs as the table of `ssebench runs ls`, one line a
// run.
func WriteList(w io.Writer, runs []*Run) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTASK\tAGENT\tMODEL\tVERDICT\tCHECKS\tFLAGS\tDURATION\tAGENT TIME\tTOKENS\tCOST")
	for _, r := range runs {
		e := r.Entry()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Task, e.Agent, e.Model, r.listVerdict(), r.Marks(), e.listFlags(),
			r.Duration().Round(100*time.Millisecond), r.AgentTime().Round(100*time.Millisecond), tokenText(e.Tokens), costText(e.CostUSD))
	}
	return tw.Flush()
}

// listVerdict is a run's verdict in the list: PASSED, FAILED, NOT GRADED,
// or its integrity verdict in full ("FORGED: report forged"), which is
// neither a pass nor a failure.
func (r *Run) listVerdict() string {
	if r.Forged() {
		return VerdictForged + ": " + PathText(r.Integrity())
	}
	return r.Verdict()
}

// listFlags marks what a reader of a run must not miss, in a word each:
// "audit:3" (the audit's findings), "exit-status" (the tests judged by
// the test script's exit status alone), "dropped:1" (protected paths the
// agent changed); "-" when none. Show says what they are.
func (e Entry) listFlags() string {
	var f []string
	if n := len(e.Audit); n > 0 {
		f = append(f, fmt.Sprintf("audit:%d", n))
	}
	if e.Judged == contract.JudgedExitStatus {
		f = append(f, "exit-status")
	}
	if n := len(e.DroppedPaths); n > 0 {
		f = append(f, fmt.Sprintf("dropped:%d", n))
	}
	if len(f) == 0 {
		return "-"
	}
	return strings.Join(f, " ")
}

func tokenText(t *int64) string {
	if t == nil {
		return "-"
	}
	return fmt.Sprint(*t)
}

// costText is "$0.0123", or "-" when the model has no price.
func costText(c *float64) string {
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("$%.4f", *c)
}

// Show writes the run as `ssebench runs show` prints it: its grade, each
// check with its log's tail, and the patch.
func (r *Run) Show(w io.Writer) {
	s := r.Summary
	fmt.Fprintf(w, "run      %s\ntask     %s\nagent    %s\nmodel    %s\n", r.ID, s.Task, s.Agent, s.Config.Model)
	if s.Attempt > 0 {
		fmt.Fprintf(w, "attempt  %d\n", s.Attempt)
	}
	fmt.Fprintf(w, "folder   %s\nstarted  %s\nduration %s (building %s, agent %s, grading %s)\ncontainer %s (exit %d)\n", r.Dir, s.Started.Format(time.RFC3339),
		r.Duration().Round(100*time.Millisecond), r.BuildTime().Round(100*time.Millisecond), r.AgentTime().Round(100*time.Millisecond), r.GradeTime().Round(100*time.Millisecond),
		s.Status, s.ExitCode)
	fmt.Fprintf(w, "usage    %s\n", r.UsageText())
	if r.Result != nil && r.Result.CaseImage != "" {
		fmt.Fprintf(w, "case     %s\n", r.Result.CaseImage)
	}
	r.showVerdict(w)
	for _, c := range r.Checks() {
		fmt.Fprintf(w, "\n== %s: %s (exit %d, %.1f s)\n", c.Name, c.Status, c.Exit, c.Seconds)
		if c.SkipReason != "" {
			fmt.Fprintf(w, "skipped: %s\n", c.SkipReason)
		}
		if c.Log != "" {
			fmt.Fprint(w, indent(Tail(filepath.Join(r.Dir, c.Log), showLogLines)))
		}
	}
	patch, err := os.ReadFile(filepath.Join(r.Dir, contract.PatchFile))
	switch {
	case err != nil:
		fmt.Fprintf(w, "\n== patch: none (%s missing)\n", contract.PatchFile)
	case len(patch) == 0:
		fmt.Fprintf(w, "\n== patch: empty (the agent changed nothing)\n")
	default:
		fmt.Fprintf(w, "\n== patch (%s, %d bytes)\n%s", contract.PatchFile, len(patch), patch)
		if !strings.HasSuffix(string(patch), "\n") {
			fmt.Fprintln(w)
		}
	}
}

// showVerdict prints the grade and, below it, what a reader must see
// before the checks: an integrity verdict and what it means, how the
// tests were judged, the protected paths dropped and the audit's
// findings.
func (r *Run) showVerdict(w io.Writer) {
	if r.Forged() {
		// Framed: this run is not a failed fix but a forged grade.
		bar := strings.Repeat("!", 72)
		fmt.Fprintf(w, "\n%s\n%s\n%s\n%s\n", bar, PathText(r.Grade()), wrap(IntegrityText(r.Integrity()), 72), bar)
	} else {
		fmt.Fprintf(w, "\n%s\n", PathText(r.Grade()))
	}
	if j := r.Judged(); j != "" {
		fmt.Fprintf(w, "judged   %s\n", PathText(JudgedText(j)))
	}
	if r.Result == nil {
		return
	}
	if d := r.Result.DroppedPaths; len(d) > 0 {
		fmt.Fprintf(w, "dropped  %s the agent changed, reset to pristine before the grade:\n", Plural(len(d), "protected path", "protected paths"))
		for _, p := range d {
			fmt.Fprintf(w, "  %s\n", PathText(p))
		}
	}
	if a := r.Result.Audit; len(a) > 0 {
		fmt.Fprintf(w, "audit    flagged: the patch holds what a fix never needs (docs/results.md, \"audit\"):\n")
		for _, f := range a {
			fmt.Fprintf(w, "  %s\n", FindingText(f))
		}
		if r.FailedByAudit() {
			fmt.Fprintln(w, "  (counted as failed: --fail-on-audit)")
		}
	}
}

// wrap breaks s into lines of at most width bytes, at spaces.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(s) {
		if i > 0 && n+1+len(word) > width {
			b.WriteString("\n")
			n = 0
		} else if i > 0 {
			b.WriteString(" ")
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}

// UsageText is the run's model use in one line: tokens, cost, requests.
func (r *Run) UsageText() string {
	e := r.Entry()
	if e.Tokens == nil {
		return "no model (no model gateway record)"
	}
	t := fmt.Sprintf("%d tokens", *e.Tokens)
	if u := r.Summary.ModelUsage; u != nil {
		t = fmt.Sprintf("%d tokens (%d in, %d out)", u.TotalTokens, u.InputTokens, u.OutputTokens)
	}
	if e.CostUSD != nil {
		t += fmt.Sprintf(", $%.4f", *e.CostUSD)
	} else {
		t += ", cost unknown (no price in the model file)"
	}
	if u := r.Summary.ModelUsage; u != nil {
		t += fmt.Sprintf(", %s (%d failed, %d refused)", Plural(u.Requests, "request", "requests"), u.Failed, u.Refused)
		if u.Estimated > 0 {
			t += fmt.Sprintf(", %d counted by estimate", u.Estimated)
		}
		if u.LimitReached != "" {
			t += ", limit reached: " + u.LimitReached
		}
	}
	return t
}

// JudgedNote is what a run's end adds to its verdict about how the tests
// were judged: a task that lists no tests was judged by the test script's
// exit status, which the agent's code decides (an init that exits 0
// passes); "" otherwise.
func (r *Run) JudgedNote() string {
	if r.Result == nil || r.Result.Judged != contract.JudgedExitStatus {
		return ""
	}
	return "note: the tests were judged by the test script's exit status (the task lists no tests), which the agent's code can forge: an init that exits 0 passes; write the lists with `ssebench dataset verify --write-tests`"
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}
