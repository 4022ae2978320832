package predictions

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// Outcome is one prediction's line of `ssebench grade`, and its entry
// of --json.
type Outcome struct {
	InstanceID string `json:"instance_id"`
	Model      string `json:"model_name_or_path"`
	Where      string `json:"where"`
	// Status is PASSED, FAILED, NOT APPLIED (the patch is no diff or does
	// not apply: the unchanged source was graded), FORGED (an integrity
	// verdict: the grade's evidence was forged; Reason says which), "not
	// graded" (the
	// run left no grade), refused (not graded: Reason says why), error
	// (an infrastructure failure: grade again) or "not run" (interrupted
	// first).
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	RunID  string `json:"run_id,omitempty"`
	// Flags are what a reader must not miss beyond the status: "flagged
	// by the audit (2 findings)", "judged by exit status", ...; Audit is
	// the audit's findings (`ssebench runs show` prints them).
	Flags []string                `json:"flags,omitempty"`
	Audit []contract.AuditFinding `json:"audit,omitempty"`
}

// Outcomes are the outcomes of g's predictions, in the file's order, and
// those of the graded ones by their job's key, each "not run" until
// graded ("refused" when it is not graded).
func (g *Grading) Outcomes() ([]*Outcome, map[string]*Outcome) {
	var outcomes []*Outcome
	byKey := map[string]*Outcome{}
	for _, p := range g.Selected {
		out := &Outcome{InstanceID: p.ID, Model: p.Model, Where: p.Where, Status: "not run"}
		outcomes = append(outcomes, out)
		if p.Refused != "" {
			out.Status, out.Reason = "refused", p.Refused
			continue
		}
		byKey[Job(p).Key()] = out
	}
	return outcomes, byKey
}

// Line is the prediction's one line of output.
func (o *Outcome) Line() string {
	s := fmt.Sprintf("%s %s (%s): %s", quote(o.InstanceID), quote(o.Model), o.Where, o.Status)
	if o.Reason != "" {
		s += ": " + o.Reason
	}
	if len(o.Flags) > 0 {
		s += " [" + strings.Join(o.Flags, "; ") + "]"
	}
	return s
}

// Progress is the evaluate.Progress of a grade: it fills in the outcome
// of each prediction graded and prints its line, and says each retry.
type Progress struct {
	mu       sync.Mutex
	w        io.Writer
	patches  map[string]*Prediction
	outcomes map[string]*Outcome
}

// NewProgress prints the lines of g's predictions to w as they are
// graded; byKey are their outcomes (Outcomes).
func NewProgress(w io.Writer, g *Grading, byKey map[string]*Outcome) *Progress {
	return &Progress{w: w, patches: g.Patches, outcomes: byKey}
}

var _ evaluate.Progress = (*Progress)(nil)

// Begin, Start and End implement evaluate.Progress: a grade says nothing
// of them.
func (p *Progress) Begin(int, int, int) {}
func (p *Progress) Start(evaluate.Job)  {}
func (p *Progress) End()                {}

// Retry implements evaluate.Progress.
func (p *Progress) Retry(j evaluate.Job, err error, again bool, _ time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	what := "giving up"
	if again {
		what = "trying again"
	}
	fmt.Fprintf(p.w, "%s %s: %v (an infrastructure failure: %s)\n", quote(j.Task), quote(j.Agent), err, what)
}

// Finish implements evaluate.Progress.
func (p *Progress) Finish(j evaluate.Job, r *results.Run) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.outcomes[j.Key()]
	out.RunID = r.ID
	switch r.Verdict() {
	case results.VerdictPassed:
		out.Status = "PASSED"
	case results.VerdictForged:
		out.Status = "FORGED"
	case results.VerdictNotGraded:
		out.Status = "not graded"
	case results.VerdictNotApplied:
		out.Status = results.VerdictNotApplied
	default:
		out.Status = "FAILED"
	}
	e := r.Entry()
	out.Flags, out.Audit = e.Flags(), e.Audit
	if r.Result != nil {
		if r.Forged() {
			out.Reason = r.Integrity()
		} else if n := Note(r.Result.AgentExit, p.patches[j.Key()]); n != "" {
			out.Reason = strings.TrimPrefix(n, "prediction: ")
		} else if !r.Passed() {
			// The verdict without the status the line already gives.
			if _, why, ok := strings.Cut(r.Grade(), ": "); ok {
				out.Reason = why
			}
		}
	}
	fmt.Fprintln(p.w, out.Line())
}
