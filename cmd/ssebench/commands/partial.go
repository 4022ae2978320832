package commands

import (
	"os"
	"path/filepath"

	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/evaluate/predictions"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// evalPartial says what of the plan of the evaluation folder dir has no
// finished run: nil when every run is done, or dir has no plan (a plain
// runs folder). A report of an interrupted evaluation said "2 runs of 2
// agents on 1 task" with 4 of its 6 planned runs missing.
func evalPartial(dir string) *results.Partial {
	plan, err := evaluate.ReadPlan(dir)
	if err != nil {
		return nil
	}
	done, err := evaluate.Done(dir)
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
	if _, err := os.Stat(filepath.Join(dir, predictions.Dir)); err != nil {
		p.Resume = "ssebench eval --resume " + dir
	}
	return p
}
