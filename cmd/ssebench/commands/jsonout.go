package commands

import (
	"errors"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/images/casebuild"
	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// addJSONFlag adds --json to cmd: with it the command prints one JSON
// document on stdout, and its progress and notes go to stderr as before.
func addJSONFlag(cmd *cobra.Command, p *bool) {
	cmd.Flags().BoolVar(p, "json", false, "print one JSON document on stdout instead of lines")
}

// datasetOutput is `dataset validate --json`.
type datasetOutput struct {
	Dataset  string        `json:"dataset"`
	OK       bool          `json:"ok"`
	Tasks    int           `json:"tasks"`
	Problems []problemJSON `json:"problems"`
}

type problemJSON struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

func problemsJSON(ps task.Problems) []problemJSON {
	out := []problemJSON{}
	for _, p := range ps {
		out = append(out, problemJSON{File: p.File, Line: p.Line, Message: p.Msg})
	}
	return out
}

// caseJSON is one line of `build-case --json`.
type caseJSON struct {
	Task   string `json:"task"`
	Image  string `json:"image"`
	Action string `json:"action"`
	Digest string `json:"digest,omitempty"`
	Error  string `json:"error,omitempty"`
}

func casesJSON(out []casebuild.CaseOutcome) []caseJSON {
	rows := []caseJSON{}
	for _, oc := range out {
		r := caseJSON{Task: oc.Task, Image: oc.Image, Action: oc.Action}
		if oc.Digest != (v1.Hash{}) {
			r.Digest = oc.Digest.String()
		}
		if oc.Err != nil {
			r.Action, r.Error = "failed", Redact(oc.Err.Error())
		}
		rows = append(rows, r)
	}
	return rows
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
	out := &datasetOutput{Dataset: dir, Problems: []problemJSON{}}
	var ps task.Problems
	switch {
	case err == nil:
		out.OK, out.Tasks = true, len(d.Tasks)
	case errors.As(err, &ps):
		out.Problems = problemsJSON(ps)
	default:
		return err
	}
	if jerr := writeJSONTo(cmd.OutOrStdout(), out); jerr != nil {
		return jerr
	}
	if !out.OK {
		cmd.SilenceErrors = true
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", dir, units.Plural(len(ps), "problem"))
		return errProblems
	}
	return nil
}
