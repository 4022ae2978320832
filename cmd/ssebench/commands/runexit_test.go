package commands

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// TestRunExit: the exit status of `ssebench run` says the grade.
func TestRunExit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		result *contract.RunResult
		want   int
	}{
		{"passed", &contract.RunResult{Passed: true}, 0},
		{"failed", &contract.RunResult{Passed: false, PoC: &contract.Check{}}, ExitFailed},
		{"grade error", &contract.RunResult{GradeError: "daemon gone"}, ExitNotGraded},
		{"no result", nil, ExitNotGraded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runExit(&cobra.Command{}, &results.Run{Summary: &results.Summary{}, Result: tc.result})
			got := 0
			var ee *ExitError
			if errors.As(err, &ee) {
				got = ee.Code
			} else if err != nil {
				t.Fatalf("runExit() = %v", err)
			}
			if got != tc.want {
				t.Errorf("exit status %d, want %d", got, tc.want)
			}
		})
	}
}

// TestJudgedNote: a run judged by exit status says how to judge it by
// name; one judged by name says nothing more.
func TestJudgedNote(t *testing.T) {
	for _, tc := range []struct {
		judged string
		note   bool
	}{{contract.JudgedExitStatus, true}, {contract.JudgedByName, false}, {contract.JudgedByNameNoCanary, false}, {"", false}} {
		got := judgedNote(&results.Run{Summary: &results.Summary{}, Result: &contract.RunResult{Judged: tc.judged}})
		if want := "ssebench dataset verify --write-tests"; tc.note != strings.Contains(got, want) {
			t.Errorf("judgedNote(judged %q) = %q, want a note: %t", tc.judged, got, tc.note)
		}
	}
	if got := judgedNote(&results.Run{Summary: &results.Summary{}}); got != "" {
		t.Errorf("judgedNote(no result) = %q, want none", got)
	}
}
