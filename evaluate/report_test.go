package evaluate_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// TestReportPartial: the report of an evaluation folder with runs of its
// plan missing is partial, with the command that finishes it; a grade's
// folder is graded again, so it gets no such command.
func TestReportPartial(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "eval-x")
	plan, err := evaluate.NewPlan([]string{"one", "two"}, []string{"task-a", "task-b", "task-c"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := evaluate.WritePlan(dir, plan); err != nil {
		t.Fatal(err)
	}
	for i, j := range plan.Runs[:2] {
		s := results.Summary{RunID: fmt.Sprint("run-", i), Task: j.Task, Agent: j.Agent, Attempt: j.Attempt, Status: "ok", Timings: map[string]float64{"total": 1}}
		b, _ := json.Marshal(s)
		run := filepath.Join(dir, "runs", s.RunID)
		if err := os.MkdirAll(run, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(run, results.SummaryFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, runs, err := evaluate.Report(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || rep.Title != "eval-x" {
		t.Errorf("Report read %d runs titled %q, want 2 titled eval-x", len(runs), rep.Title)
	}
	want := results.Partial{Planned: 6, Missing: 4, Resume: "ssebench eval --resume " + dir}
	if rep.Partial == nil || *rep.Partial != want {
		t.Errorf("Partial = %+v, want %+v", rep.Partial, want)
	}
	if err := os.Mkdir(filepath.Join(dir, evaluate.GradeDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if p := evaluate.Partial(dir); p == nil || p.Resume != "" {
		t.Errorf("Partial of a grade's folder = %+v, want one without a resume command", p)
	}
	if _, _, err := evaluate.Report(t.TempDir(), false); err == nil {
		t.Error("Report of a folder without runs did not fail")
	}
}
