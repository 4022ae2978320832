package commands

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// addJSONFlag adds --json to cmd: with it the command prints one JSON
// document on stdout, and its progress and notes go to stderr as before.
func addJSONFlag(cmd *cobra.Command, p *bool) {
	cmd.Flags().BoolVar(p, "json", false, "print one JSON document on stdout instead of lines")
}

// printImage prints name@digest, or the JSON of v with asJSON.
func printResult(w io.Writer, asJSON bool, v any, line string) error {
	if asJSON {
		return writeJSONTo(w, v)
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// validateJSON prints `dataset validate --json`: the dataset's problems
// (err as task.Problems) or its task count; it fails, silently, when there
// is a problem.
func validateJSON(cmd *cobra.Command, dir string, d *task.Dataset, err error) error {
	out, err := task.NewValidateReport(dir, d, err)
	if err != nil {
		return err
	}
	if jerr := writeJSONTo(cmd.OutOrStdout(), out); jerr != nil {
		return jerr
	}
	if !out.OK {
		cmd.SilenceErrors = true
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", dir, units.Plural(len(out.Problems), "problem"))
		return errProblems
	}
	return nil
}
