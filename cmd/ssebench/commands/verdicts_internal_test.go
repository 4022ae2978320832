package commands

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/runtest"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// loadRun writes a run folder with result.json res and loads it.
func loadRun(t *testing.T, res *contract.RunResult) *results.Run {
	return runtest.Load(t, results.Summary{RunID: "r1", Task: "t1", Agent: "m", Status: "ok"}, res)
}

var testAudit = []contract.AuditFinding{{Path: "x.go", Line: 3, Rule: "init added"}}

// TestFailOnAuditExit: under --fail-on-audit eval exits ExitFailed once
// every run is done and one was flagged; not otherwise.
func TestFailOnAuditExit(t *testing.T) {
	plain := loadRun(t, &contract.RunResult{Passed: true})
	flagged := loadRun(t, &contract.RunResult{Passed: true, Audit: testAudit})
	for _, tt := range []struct {
		name string
		runs []*results.Run
		want int
	}{
		{"none flagged", []*results.Run{plain}, 0},
		{"one flagged", []*results.Run{plain, flagged}, ExitFailed},
	} {
		var stderr bytes.Buffer
		cmd := &cobra.Command{}
		cmd.SetErr(&stderr)
		err := failOnAuditExit(cmd, tt.runs)
		var exit *ExitError
		got := 0
		if errors.As(err, &exit) {
			got = exit.Code
		} else if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got != tt.want {
			t.Errorf("%s: exit %d, want %d", tt.name, got, tt.want)
		}
		if tt.want != 0 && !strings.Contains(stderr.String(), "1 run flagged by the audit, counted as failed (--fail-on-audit)") {
			t.Errorf("%s: stderr = %q", tt.name, stderr.String())
		}
	}
	if f := newCmdEval(nil).Flags().Lookup("fail-on-audit"); f == nil {
		t.Error("eval has no --fail-on-audit")
	}
}
