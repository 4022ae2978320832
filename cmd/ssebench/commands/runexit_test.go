package commands

import (
	"errors"
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
