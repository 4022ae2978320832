package commands

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// showLogLines is how much of each check's log `runs show` prints.
const showLogLines = 15

func newCmdRuns(g *options.Global) *cobra.Command {
	var runsDir string
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, show and report on the runs in a runs folder",
		Long: `Read the run folders that "ssebench run" and "ssebench eval" leave (runs/<run-id>/
and runs/eval-<id>/runs/<run-id>/): list them, show one with its grade,
its checks' logs and the agent's patch, or report on many.`,
		Example: `  ssebench runs ls
  ssebench runs show kvconf-12-afb9ee1-dummy-20261201-120000
  ssebench runs report runs/eval-20261201-120000 --format html > report.html`,
	}
	groupCommand(cmd)
	cmd.PersistentFlags().StringVar(&runsDir, "runs-dir", "runs", "the runs folder")
	cmd.AddCommand(newCmdRunsLs(&runsDir), newCmdRunsShow(&runsDir), newCmdRunsReport())
	return cmd
}

func newCmdRunsLs(runsDir *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "ls [--runs-dir DIR] [--json]",
		Short: "List the runs, oldest first",
		Example: `  ssebench runs ls
  ssebench runs ls --runs-dir runs/eval-20261201-2130-ab12cd --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			runs, err := results.List(*runsDir)
			if err != nil {
				return err
			}
			if len(runs) == 0 && !asJSON {
				fmt.Fprintf(cmd.ErrOrStderr(), "no runs under %s: `ssebench run` and `ssebench eval` write them there (--runs-dir names another folder)\n", *runsDir)
				return nil
			}
			if asJSON {
				entries := make([]results.Entry, 0, len(runs))
				for _, r := range runs {
					entries = append(entries, r.Entry())
				}
				return writeJSONTo(cmd.OutOrStdout(), entries)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTASK\tAGENT\tMODEL\tVERDICT\tCHECKS\tFLAGS\tDURATION\tAGENT TIME\tTOKENS\tCOST")
			for _, r := range runs {
				e := r.Entry()
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Task, e.Agent, e.Model, lsVerdict(r), r.Marks(), lsFlags(e),
					r.Duration().Round(100*time.Millisecond), r.AgentTime().Round(100*time.Millisecond), tokenText(e.Tokens), costText(e.CostUSD))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the runs as a JSON array")
	return cmd
}

// lsVerdict is a run's verdict in the list: PASSED, FAILED, NOT GRADED,
// or its integrity verdict in full ("FORGED: report forged"), which is
// neither a pass nor a failure.
func lsVerdict(r *results.Run) string {
	if r.Forged() {
		return results.VerdictForged + ": " + printable(r.Integrity())
	}
	return r.Verdict()
}

// lsFlags marks what a reader of a run must not miss, in a word each:
// "audit:3" (the audit's findings), "exit-status" (the tests judged by
// the test script's exit status alone), "dropped:1" (protected paths the
// agent changed); "-" when none. `runs show` says what they are.
func lsFlags(e results.Entry) string {
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

func newCmdRunsShow(runsDir *string) *cobra.Command {
	return &cobra.Command{
		Use:     "show ID",
		Short:   "Show a run: its grade, each check with its log's tail, and the patch",
		Example: `  ssebench runs show 20261201-213000-kvconf-12-afb9ee1-dummy-1a2b3c`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := results.Find(*runsDir, args[0])
			if err != nil {
				return err
			}
			showRun(cmd.OutOrStdout(), r)
			return nil
		},
	}
}

func showRun(w io.Writer, r *results.Run) {
	s := r.Summary
	fmt.Fprintf(w, "run      %s\ntask     %s\nagent    %s\nmodel    %s\n", r.ID, s.Task, s.Agent, s.Config.Model)
	if s.Attempt > 0 {
		fmt.Fprintf(w, "attempt  %d\n", s.Attempt)
	}
	fmt.Fprintf(w, "folder   %s\nstarted  %s\nduration %s (building %s, agent %s, grading %s)\ncontainer %s (exit %d)\n", r.Dir, s.Started.Format(time.RFC3339),
		r.Duration().Round(100*time.Millisecond), r.BuildTime().Round(100*time.Millisecond), r.AgentTime().Round(100*time.Millisecond), r.GradeTime().Round(100*time.Millisecond),
		s.Status, s.ExitCode)
	fmt.Fprintf(w, "usage    %s\n", usageText(r))
	if r.Result != nil && r.Result.CaseImage != "" {
		fmt.Fprintf(w, "case     %s\n", r.Result.CaseImage)
	}
	showVerdict(w, r)
	for _, c := range r.Checks() {
		fmt.Fprintf(w, "\n== %s: %s (exit %d, %.1f s)\n", c.Name, c.Status, c.Exit, c.Seconds)
		if c.SkipReason != "" {
			fmt.Fprintf(w, "skipped: %s\n", c.SkipReason)
		}
		if c.Log != "" {
			fmt.Fprint(w, indent(results.Tail(filepath.Join(r.Dir, c.Log), showLogLines)))
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
func showVerdict(w io.Writer, r *results.Run) {
	if r.Forged() {
		// Framed: this run is not a failed fix but a forged grade.
		bar := strings.Repeat("!", 72)
		fmt.Fprintf(w, "\n%s\n%s\n%s\n%s\n", bar, printable(r.Grade()), wrap(results.IntegrityText(r.Integrity()), 72), bar)
	} else {
		fmt.Fprintf(w, "\n%s\n", printable(r.Grade()))
	}
	if j := r.Judged(); j != "" {
		fmt.Fprintf(w, "judged   %s\n", printable(results.JudgedText(j)))
	}
	if r.Result == nil {
		return
	}
	if d := r.Result.DroppedPaths; len(d) > 0 {
		fmt.Fprintf(w, "dropped  %s the agent changed, reset to pristine before the grade:\n", results.Plural(len(d), "protected path", "protected paths"))
		for _, p := range d {
			fmt.Fprintf(w, "  %s\n", results.PathText(p))
		}
	}
	if a := r.Result.Audit; len(a) > 0 {
		fmt.Fprintf(w, "audit    flagged: the patch holds what a fix never needs (docs/results.md, \"audit\"):\n")
		for _, f := range a {
			fmt.Fprintf(w, "  %s\n", results.FindingText(f))
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

// usageText is the run's model use in one line: tokens, cost, requests.
func usageText(r *results.Run) string {
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
		t += fmt.Sprintf(", %s (%d failed, %d refused)", results.Plural(u.Requests, "request", "requests"), u.Failed, u.Refused)
		if u.Estimated > 0 {
			t += fmt.Sprintf(", %d counted by estimate", u.Estimated)
		}
		if u.LimitReached != "" {
			t += ", limit reached: " + u.LimitReached
		}
	}
	return t
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}

func newCmdRunsReport() *cobra.Command {
	var format, out string
	var failOnAudit bool
	cmd := &cobra.Command{
		Use:   "report DIR [--format md|json|junit|html] [-o FILE]",
		Short: "Report on the runs in DIR: pass rates, checks, a task matrix, tokens and cost",
		Long: `Report on every run in DIR (an evaluation folder, or any runs folder): the
pass rate of each agent and model with a 95% confidence interval over its
attempts (Wilson's), each check's rate, a task-by-agent matrix, the tokens
and cost (at the model file's prices) per agent and per task, and the time
split into building (images and the container's start), the agent and
grading. An evaluation with --budget also says what was spent of it and
which runs were not started. Runs with an integrity verdict ("FORGED: report
forged") are counted apart from the failed ones, and the runs to read
(forged, flagged by the audit of their patch, judged by exit status) are
listed with their findings; --fail-on-audit counts a flagged run as failed,
as "ssebench eval --fail-on-audit" did. Formats: md (the default), json, junit (one testcase per
run; failures carry the failed checks) and html (one self-contained page with
charts, viewable without a network).`,
		Example: `  ssebench runs report runs/eval-20261201-2130-ab12cd
  ssebench runs report runs/eval-20261201-2130-ab12cd --format html -o report.html
  ssebench runs report runs --format junit -o junit.xml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := results.List(args[0])
			if err != nil {
				return err
			}
			if len(runs) == 0 {
				return fmt.Errorf("no runs in %s: pass an evaluation folder or a runs folder", args[0])
			}
			if failOnAudit {
				results.FailOnAudit(runs)
			}
			abs, _ := filepath.Abs(args[0])
			rep := results.NewReport(filepath.Base(abs), runs)
			if rep.Evaluation, err = results.ReadEvaluation(args[0]); err != nil {
				return err
			}
			rep.Partial = evalPartial(args[0])
			if out == "" || out == "-" {
				return results.Write(cmd.OutOrStdout(), rep, format)
			}
			return safefile.WriteFile(out, 0o644, func(f *os.File) error { return results.Write(f, rep, format) })
		},
	}
	cmd.Flags().StringVar(&format, "format", "md", "report format: "+strings.Join(results.Formats, ", "))
	cmd.Flags().StringVarP(&out, "output", "o", "", "write the report to FILE (default stdout)")
	cmd.Flags().BoolVar(&failOnAudit, "fail-on-audit", false, "count a run the audit flagged as failed (its patch holds what a fix never needs)")
	return cmd
}
