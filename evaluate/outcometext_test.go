package evaluate

import (
	"errors"
	"testing"
)

// TestOutcomeText: how an evaluation ended, the runs not started named
// only when there are some; the builds of a build-only one.
func TestOutcomeText(t *testing.T) {
	o := &Outcome{Dir: "runs/eval-x", Ran: 1, Kept: 2, Failed: map[string]error{"a/b/1": errors.New("pull")}}
	if got, want := o.String(), "1 run now, 2 kept from before, 1 failed; results in runs/eval-x"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	o.NotStarted = []Job{{}, {}}
	if got, want := o.String(), "1 run now, 2 kept from before, 1 failed, 2 not started (budget spent); results in runs/eval-x"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	o.Builds = map[string]int{"task:t": 1, "agent:t/a": 1}
	if got, want := o.Built(), "every image of the plan is built (2 builds)"; got != want {
		t.Errorf("Built() = %q, want %q", got, want)
	}
}

// TestJobsAtOnce: --jobs given wins, then the plan's, then the machine's.
func TestJobsAtOnce(t *testing.T) {
	p := &Plan{Jobs: 3}
	if n, why := p.JobsAtOnce(5, true); n != 5 || why != "--jobs" {
		t.Errorf("JobsAtOnce(given) = %d, %q", n, why)
	}
	if n, why := p.JobsAtOnce(0, false); n != 3 || why != "--jobs of the evaluation's start" {
		t.Errorf("JobsAtOnce(resumed) = %d, %q", n, why)
	}
	p.Jobs = 0
	if n, why := p.JobsAtOnce(0, false); n < 1 || why == "--jobs" || why == "--jobs of the evaluation's start" {
		t.Errorf("JobsAtOnce(default) = %d, %q", n, why)
	}
}
