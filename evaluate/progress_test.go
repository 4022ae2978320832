package evaluate

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/runtest"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// TestPrinterTokens: a finished run's progress line carries the tokens
// and cost its gateway counted, as the run folder holds them.
func TestPrinterTokens(t *testing.T) {
	dir := t.TempDir()
	s := results.Summary{RunID: "r", Task: "t1", Agent: "loop", Status: "ok", Started: time.Now(),
		ModelUsage: &gateway.Totals{Requests: 2, Usage: gateway.Usage{InputTokens: 4000, OutputTokens: 700, TotalTokens: 4700}, CostUSD: 0.0211}}
	if err := writeJSONFile(filepath.Join(dir, results.SummaryFile), s); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, results.ModelLog), []byte(`{"seq":1,"status":200,"input_tokens":4000,"output_tokens":700,"total_tokens":4700,"cost_usd":0.0211}`+"\n"), 0o644)
	r, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	p := NewPrinter(&b)
	p.Begin(1, 0, 1)
	p.Finish(Job{Task: "t1", Agent: "loop", Attempt: 1}, r)
	if !strings.Contains(b.String(), "tokens 4700 ($0.0211)") {
		t.Errorf("progress line = %q, want tokens 4700 ($0.0211)", b.String())
	}
}

// TestPrinterExpectFailing: a run meant to fail (a verification's dummy)
// that failed is marked ✓ and said to fail as it should; one that passed
// is marked ✗ and said to pass; another agent's failed run keeps ✗.
func TestPrinterExpectFailing(t *testing.T) {
	run := func(testOK bool) *results.Run {
		now := time.Now()
		s := results.Summary{RunID: "r", Task: "t1", Agent: "dummy", Status: "ok", Started: now, Finished: now.Add(time.Second)}
		return runtest.Load(t, s, &contract.RunResult{TaskID: "t1", Build: &contract.Check{OK: true}, Test: &contract.Check{OK: testOK}, Passed: testOK})
	}
	line := func(agent string, r *results.Run) string {
		var b bytes.Buffer
		p := NewPrinter(&b, ExpectFailing("dummy"))
		p.Begin(1, 0, 1)
		p.Finish(Job{Task: "t1", Agent: agent, Attempt: 1}, r)
		return b.String()
	}
	if got := line("dummy", run(false)); !strings.HasPrefix(got, "✓ t1 dummy") || !strings.Contains(got, "dummy failed, as it should") {
		t.Errorf("failed dummy: %q", got)
	}
	if got := line("dummy", run(true)); !strings.HasPrefix(got, "✗ t1 dummy") || !strings.Contains(got, "dummy passed") {
		t.Errorf("passed dummy: %q", got)
	}
	if got := line("reference", run(false)); !strings.HasPrefix(got, "✗ t1 reference") || strings.Contains(got, "as it should") {
		t.Errorf("failed reference: %q", got)
	}
}
