package evaluate

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/runtest"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// finished records the runs Progress hears of.
type finished struct {
	nopProgress
	mu   sync.Mutex
	runs map[string]*results.Run
}

func (f *finished) Finish(j Job, r *results.Run) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs[j.Agent] = r
}

// TestEvaluateFailOnAudit: with WithFailOnAudit a flagged run that passed
// its checks reaches Progress as failed; without it, as passed.
func TestEvaluateFailOnAudit(t *testing.T) {
	for _, on := range []bool{false, true} {
		dir := t.TempDir()
		p, err := NewPlan([]string{"good", "sly"}, []string{"t1"}, 1)
		if err != nil {
			t.Fatal(err)
		}
		WritePlan(dir, p)
		rec := &finished{runs: map[string]*results.Run{}}
		opts := []Option{WithJobs(1), WithProgress(rec)}
		if on {
			opts = append(opts, WithFailOnAudit())
		}
		if _, err := Evaluate(context.Background(), newFake(), dir, p, opts...); err != nil {
			t.Fatal(err)
		}
		if good := rec.runs["good"]; good == nil || !good.Passed() {
			t.Errorf("fail on audit %v: the unflagged run did not pass: %v", on, good)
		}
		sly := rec.runs["sly"]
		if sly == nil || sly.Passed() == on {
			t.Errorf("fail on audit %v: the flagged run passed = %v, want %v", on, sly != nil && sly.Passed(), !on)
		}
	}
}

// verdictRun writes a run folder with result.json res and loads it.
func verdictRun(t *testing.T, res *contract.RunResult) *results.Run {
	t.Helper()
	return runtest.Load(t, results.Summary{RunID: "r", Task: "t1", Agent: "sly", Status: "ok", Started: time.Now(), Timings: map[string]float64{"total": 2}}, res)
}

// TestPrinterVerdicts: a run's line says what its verdict holds beyond
// its checks, and its mark sets a forged run apart from a failed one.
func TestPrinterVerdicts(t *testing.T) {
	audit := []contract.AuditFinding{{Path: "x.go", Line: 3, Rule: "init added"}, {Path: "x_test.go", Rule: "protected path changed"}}
	check := &contract.Check{OK: true}
	tests := []struct {
		name        string
		res         *contract.RunResult
		failOnAudit bool
		want        string
	}{
		{"passed", &contract.RunResult{Test: check, Passed: true, Judged: contract.JudgedByName}, false, "✓ t1 sly #1  test ✓  2s  tokens -\n"},
		{"forged", &contract.RunResult{Test: &contract.Check{}, Integrity: contract.IntegrityReportForged, Audit: audit},
			false, "‼ t1 sly #1  test ✗  2s  tokens -  FORGED: report forged; flagged by the audit (2 findings)\n"},
		{"flagged", &contract.RunResult{Test: check, Passed: true, Audit: audit}, false, "✓ t1 sly #1  test ✓  2s  tokens -  flagged by the audit (2 findings)\n"},
		{"flagged, fail on audit", &contract.RunResult{Test: check, Passed: true, Audit: audit}, true,
			"✗ t1 sly #1  test ✓  2s  tokens -  FAILED: audit (test ✓); flagged by the audit (2 findings)\n"},
		{"judged by exit status", &contract.RunResult{Test: check, Passed: true, Judged: contract.JudgedExitStatus}, false,
			"✓ t1 sly #1  test ✓  2s  tokens -  judged by exit status\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := verdictRun(t, tt.res)
			r.FailOnAudit = tt.failOnAudit
			var b bytes.Buffer
			p := NewPrinter(&b)
			p.Begin(1, 0, 1)
			p.Finish(Job{Task: "t1", Agent: "sly", Attempt: 1}, r)
			if got := b.String(); got != tt.want {
				t.Errorf("progress line = %q, want %q", got, tt.want)
			}
		})
	}
}
