package predictions

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// Grading is the evaluation of a predictions file: its folder, its plan
// (one run per prediction that can be graded, the model's name as the
// agent's), and what became of each prediction selected.
type Grading struct {
	// Dir is the evaluation folder, runs-dir/eval-<id>/; the patches are
	// in its Dir folder.
	Dir  string
	Plan *evaluate.Plan
	// Selected are the predictions graded or refused, in the file's
	// order; Patches the graded ones by their job's key (Job.Key).
	Selected []*Prediction
	Patches  map[string]*Prediction
	// Refused is evaluation.json's not_started: the refused predictions,
	// each with where it is and why.
	Refused []results.NotStarted
}

// Job is the run that grades p.
func Job(p *Prediction) evaluate.Job {
	return evaluate.Job{Task: p.ID, Agent: p.Model, Attempt: 1}
}

// NewGrading reads the predictions file path (see Read) into a new
// evaluation folder under runsDir (absolute: each run mounts its patch
// from there) and plans a run per prediction of the tasks only (every
// task when empty) that can be graded. Nothing is left behind when it
// fails. Call Write once the plan is filled in.
func NewGrading(path, runsDir string, known, only []string) (*Grading, error) {
	plan := evaluate.PlanOf(nil)
	dir := filepath.Join(runsDir, plan.FolderName())
	preds, err := Read(path, filepath.Join(dir, Dir), known)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	g := &Grading{Dir: dir, Patches: map[string]*Prediction{}, Refused: []results.NotStarted{}}
	var jobs []evaluate.Job
	for i := range preds {
		p := &preds[i]
		if len(only) > 0 && !slices.Contains(only, p.ID) {
			continue
		}
		g.Selected = append(g.Selected, p)
		if p.Refused != "" {
			g.Refused = append(g.Refused, results.NotStarted{Task: clip(p.ID), Agent: clip(p.Model), Attempt: 1, Reason: p.Where + ": " + p.Refused})
			continue
		}
		j := Job(p)
		jobs = append(jobs, j)
		g.Patches[j.Key()] = p
	}
	if len(g.Selected) == 0 {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("--tasks %s selects none of the predictions of %s", strings.Join(only, ","), path)
	}
	// The same id: it names the folder the patches are in.
	g.Plan = evaluate.PlanOf(jobs)
	g.Plan.ID = plan.ID
	return g, nil
}

// Write writes the plan, and evaluation.json when a prediction was
// refused.
func (g *Grading) Write() error {
	if err := evaluate.WritePlan(g.Dir, g.Plan); err != nil {
		return err
	}
	if len(g.Refused) == 0 {
		return nil
	}
	b, err := json.MarshalIndent(&results.Evaluation{NotStarted: g.Refused}, "", "  ")
	if err != nil {
		return err
	}
	return safefile.WriteBytes(filepath.Join(g.Dir, results.EvaluationFile), append(b, '\n'), 0o644, safefile.Sync())
}

// clip keeps a refused prediction's name printable and short for the
// reports.
func clip(s string) string {
	if isPrintable(s) && len(s) <= 80 {
		return s
	}
	return strings.Trim(quote(s), `"`)
}
