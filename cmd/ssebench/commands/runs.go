package commands

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/results"
)

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
			return results.WriteList(cmd.OutOrStdout(), runs)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the runs as a JSON array")
	return cmd
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
			r.Show(cmd.OutOrStdout())
			return nil
		},
	}
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
			rep, _, err := evaluate.Report(args[0], failOnAudit)
			if err != nil {
				return err
			}
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
