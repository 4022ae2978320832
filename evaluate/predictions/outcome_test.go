package predictions

import (
	"bytes"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/runtest"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// loadRun writes a run folder with result.json res and loads it.
func loadRun(t *testing.T, res *contract.RunResult) *results.Run {
	return runtest.Load(t, results.Summary{RunID: "r1", Task: "t1", Agent: "m", Status: "ok"}, res)
}

var testAudit = []contract.AuditFinding{{Path: "x.go", Line: 3, Rule: "init added"}}

// TestGradeLineVerdicts: a grade's line of a prediction says FORGED for an
// integrity verdict, and what the audit flagged.
func TestGradeLineVerdicts(t *testing.T) {
	for _, tt := range []struct {
		name string
		res  *contract.RunResult
		want string
	}{
		{"forged", &contract.RunResult{Test: &contract.Check{}, Integrity: contract.IntegrityReportForged, Audit: testAudit},
			`"t1" "m" (line 1): FORGED: report forged [flagged by the audit (1 finding)]`},
		{"flagged", &contract.RunResult{Test: &contract.Check{OK: true}, Passed: true, Audit: testAudit},
			`"t1" "m" (line 1): PASSED [flagged by the audit (1 finding)]`},
		{"judged by exit status", &contract.RunResult{Test: &contract.Check{OK: true}, Passed: true, Judged: contract.JudgedExitStatus},
			`"t1" "m" (line 1): PASSED [judged by exit status]`},
	} {
		j := evaluate.Job{Task: "t1", Agent: "m", Attempt: 1}
		var w bytes.Buffer
		out := &Outcome{InstanceID: "t1", Model: "m", Where: "line 1"}
		p := &Progress{w: &w, patches: map[string]*Prediction{j.Key(): {}}, outcomes: map[string]*Outcome{j.Key(): out}}
		p.Finish(j, loadRun(t, tt.res))
		if got := strings.TrimSpace(w.String()); got != tt.want {
			t.Errorf("%s: line = %q, want %q", tt.name, got, tt.want)
		}
	}
}
