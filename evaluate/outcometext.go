package evaluate

import (
	"fmt"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// String says how the evaluation went, as `ssebench eval` ends: the runs
// made now, kept from before, failed and not started (the budget spent),
// and where the results are.
func (o *Outcome) String() string {
	s := fmt.Sprintf("%s now, %d kept from before, %d failed", results.Plural(o.Ran, "run", "runs"), o.Kept, len(o.Failed))
	if len(o.NotStarted) > 0 {
		s += fmt.Sprintf(", %d not started (budget spent)", len(o.NotStarted))
	}
	return s + "; results in " + o.Dir
}

// Built says that an evaluation WithBuildOnly built every image of its
// plan, and how many builds that took.
func (o *Outcome) Built() string {
	return fmt.Sprintf("every image of the plan is built (%s)", units.Plural(len(o.Builds), "build"))
}

// JobsAtOnce is how many runs of p go at once, and why: n when given
// (--jobs), else what p was started with (a resumed evaluation keeps its
// --jobs), else the machine's default (DefaultJobs).
func (p *Plan) JobsAtOnce(n int, given bool) (int, string) {
	switch {
	case given:
		return n, "--jobs"
	case p.Jobs > 0:
		return p.Jobs, "--jobs of the evaluation's start"
	}
	return DefaultJobs()
}
