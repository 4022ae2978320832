package evaluate

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/42-b3yond-6ug/ssebench/results"
)

// GradeDir is the folder of an evaluation folder that holds the patches of
// a grade (`ssebench grade`): such a folder is graded again, not resumed.
const GradeDir = "predictions"

// Report reads the runs of dir (an evaluation folder, or any runs folder)
// into a report, with the evaluation's budget and what of its plan has no
// finished run; failOnAudit counts a run the audit flagged as failed. It
// fails when dir holds no run.
func Report(dir string, failOnAudit bool) (*results.Report, []*results.Run, error) {
	runs, err := results.List(dir)
	if err != nil {
		return nil, nil, err
	}
	if len(runs) == 0 {
		return nil, nil, fmt.Errorf("no runs in %s: pass an evaluation folder or a runs folder", dir)
	}
	if failOnAudit {
		results.FailOnAudit(runs)
	}
	abs, _ := filepath.Abs(dir)
	rep := results.NewReport(filepath.Base(abs), runs)
	if rep.Evaluation, err = results.ReadEvaluation(dir); err != nil {
		return nil, nil, err
	}
	rep.Partial = Partial(dir)
	return rep, runs, nil
}

// Partial says what of the plan of the evaluation folder dir has no
// finished run: nil when every run is done, or dir has no plan (a plain
// runs folder). A report of an interrupted evaluation said "2 runs of 2
// agents on 1 task" with 4 of its 6 planned runs missing.
func Partial(dir string) *results.Partial {
	plan, err := ReadPlan(dir)
	if err != nil {
		return nil
	}
	done, err := Done(dir)
	if err != nil {
		return nil
	}
	p := &results.Partial{Planned: len(plan.Runs)}
	for _, j := range plan.Runs {
		if _, ok := done[j.Key()]; !ok {
			p.Missing++
		}
	}
	if p.Missing == 0 {
		return nil
	}
	// A grade's folder is graded again, not resumed (docs/results.md).
	if _, err := os.Stat(filepath.Join(dir, GradeDir)); err != nil {
		p.Resume = "ssebench eval --resume " + dir
	}
	return p
}
