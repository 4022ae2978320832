package results

import (
	"fmt"
	"io"
)

// WriteEnd writes to w how the run ended, as `ssebench run` ends: its
// id, the container's status and exit (s, the summary the run returned)
// and where its results are, then the model's use when a gateway counted
// it, the grade and how its tests were judged.
func (r *Run) WriteEnd(w io.Writer, s *Summary) {
	fmt.Fprintf(w, "\nrun %s: container %s (exit %d); results in %s\n", s.RunID, s.Status, s.ExitCode, r.Dir)
	if r.Tokens >= 0 {
		fmt.Fprintf(w, "model: %s\n", r.UsageText())
	}
	fmt.Fprintln(w, r.Grade())
	if n := r.JudgedNote(); n != "" {
		fmt.Fprintln(w, n)
	}
}

// UpstreamError is the error of a run whose model upstream answered none
// of its requests (see ModelUnreachable), whose grade says nothing of the
// agent; nil for any other run.
func (r *Run) UpstreamError() error {
	if down, n, why := r.ModelUnreachable(); down {
		return fmt.Errorf("the model upstream answered none of the run's %s (first: %s): the grade says nothing of the agent; check the upstream and run again", Plural(n, "request", "requests"), why)
	}
	return nil
}

// CountFlagged counts the runs the audit flagged (Run.Flagged).
func CountFlagged(runs []*Run) int {
	n := 0
	for _, r := range runs {
		if r.Flagged() {
			n++
		}
	}
	return n
}
