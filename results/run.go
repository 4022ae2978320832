package results

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// Files of a run folder read here besides result.json.
const (
	SummaryFile = "summary.json"
	// ModelLog is the model gateway's record of every request, one JSON
	// object a line; the tokens of a run are summed from it.
	ModelLog = "model.jsonl"
)

// Run is one run folder read back.
type Run struct {
	// ID is the run id, Dir its folder.
	ID, Dir string
	// Summary is summary.json (the host's record); Result is result.json
	// (the grade), nil when the container wrote none.
	Summary *Summary
	Result  *contract.RunResult
	// Tokens is the tokens the model gateway counted; -1 when the run
	// has no record of them. CostUSD is their price, Priced says the
	// model file had one (else the cost is unknown, not 0).
	Tokens  int64
	CostUSD float64
	Priced  bool
	// FailOnAudit counts the run as failed when the audit flagged it
	// (see FailOnAudit, the function).
	FailOnAudit bool
	// Prediction is prediction.json: what became of the patch of a
	// prediction `ssebench grade` graded; nil for an agent's run.
	Prediction *Prediction
}

// CheckOutcome is one check of a run.
type CheckOutcome struct {
	Name string `json:"name"`
	// Status is "ok", "failed", "timeout" or "skipped".
	Status     string  `json:"status"`
	Exit       int     `json:"exit"`
	Seconds    float64 `json:"seconds"`
	Log        string  `json:"log,omitempty"`
	SkipReason string  `json:"skipped,omitempty"`
}

// OK says the check passed.
func (c CheckOutcome) OK() bool { return c.Status == "ok" }

// ErrNotRun says a folder holds no run (no summary.json).
var ErrNotRun = errors.New("not a run folder")

// Load reads the run folder dir.
func Load(dir string) (*Run, error) {
	data, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s has no %s: %w", dir, SummaryFile, ErrNotRun)
	} else if err != nil {
		return nil, fmt.Errorf("reading run %s: %w", dir, err)
	}
	var s Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, SummaryFile), err)
	}
	r := &Run{ID: s.RunID, Dir: dir, Summary: &s, Tokens: -1}
	if r.ID == "" {
		r.ID = filepath.Base(dir)
	}
	if _, err := os.Stat(filepath.Join(dir, contract.ResultFile)); err == nil {
		if r.Result, err = contract.ReadRunResult(dir); err != nil {
			return nil, err
		}
	}
	r.Tokens, r.CostUSD, r.Priced = modelUse(dir, &s)
	if r.Prediction, err = readPrediction(dir); err != nil {
		return nil, err
	}
	return r, nil
}

// modelUse is the run's model use: the gateway's totals in summary.json,
// else the sum of its records in model.jsonl (a run folder written before
// the totals were), else none (-1 tokens).
func modelUse(dir string, s *Summary) (tokens int64, cost float64, priced bool) {
	if u := s.ModelUsage; u != nil {
		return u.TotalTokens, u.CostUSD, u.CostUSD > 0
	}
	return countTokens(filepath.Join(dir, ModelLog))
}

// List reads every run under root: its run folders, and those of the
// evaluation folders in it (eval-<id>/runs/). Runs come oldest first; folders
// that are not runs are passed over.
func List(root string) ([]*Run, error) {
	var runs []*Run
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		ents, err := os.ReadDir(dir)
		if depth == 0 && errors.Is(err, fs.ErrNotExist) {
			// No runs folder yet: no runs, which the caller says in its
			// own words.
			return nil
		}
		if err != nil {
			return fmt.Errorf("listing runs: %w", err)
		}
		for _, e := range ents {
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			sub := filepath.Join(dir, e.Name())
			r, err := Load(sub)
			switch {
			case err == nil:
				runs = append(runs, r)
			case errors.Is(err, ErrNotRun):
				if depth < 2 {
					if err := walk(sub, depth+1); err != nil {
						return err
					}
				}
			default:
				return err
			}
		}
		return nil
	}
	if err := walk(root, 0); err != nil {
		return nil, err
	}
	sort.SliceStable(runs, func(i, j int) bool {
		a, b := runs[i].Summary.Started, runs[j].Summary.Started
		if !a.Equal(b) {
			return a.Before(b)
		}
		return runs[i].ID < runs[j].ID
	})
	return runs, nil
}

// Find returns the run called id under root (a unique prefix will do).
func Find(root, id string) (*Run, error) {
	runs, err := List(root)
	if err != nil {
		return nil, err
	}
	var found []*Run
	for _, r := range runs {
		if r.ID == id {
			return r, nil
		}
		if strings.HasPrefix(r.ID, id) {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no run %q under %s: `ssebench runs ls` lists them", id, root)
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("%q names %d runs under %s: give more of the id", id, len(found), root)
}

// Task, Agent and Model say what ran.
func (r *Run) Task() string  { return r.Summary.Task }
func (r *Run) Agent() string { return r.Summary.Agent }
func (r *Run) Model() string { return r.Summary.Config.Model }

// Graded says the container wrote a grade. A run stopped before its grade
// (Ctrl-C, a stopped evaluation) was not graded, whatever result.json it
// left: its checks never ran. An integrity verdict is a grade, even when
// it left the checks unfinished.
func (r *Run) Graded() bool {
	return r.Result != nil && (r.Result.GradeError == "" || r.Result.Integrity != "") && !r.Stopped()
}

// Stopped says the run was cancelled (summary.json's status "stopped").
func (r *Run) Stopped() bool { return r.Summary != nil && r.Summary.Status == "stopped" }

// Passed says every check passed, the grade found nothing wrong with its
// evidence (no integrity verdict, whatever result.json's passed says),
// and, under FailOnAudit, the audit flagged nothing.
func (r *Run) Passed() bool {
	return r.Result != nil && r.Result.Passed && r.Result.Integrity == "" && !r.FailedByAudit() && !r.NotApplied()
}

// Duration is the run's wall time, from the first build step to the
// container's exit.
func (r *Run) Duration() time.Duration {
	if t, ok := r.Summary.Timings["total"]; ok {
		return time.Duration(t * float64(time.Second))
	}
	return r.Summary.Finished.Sub(r.Summary.Started)
}

// BuildTime is the run's time before its agent started: images built or
// found (case, tool, agent) and imported or pulled, and the container
// created (timings_seconds case, tool, agent and startup).
func (r *Run) BuildTime() time.Duration {
	var t float64
	for _, k := range []string{"case", "tool", "agent", "startup"} {
		t += r.Summary.Timings[k]
	}
	return time.Duration(t * float64(time.Second))
}

// AgentTime is how long the agent ran (result.json's agent_duration_ms);
// 0 without a result.
func (r *Run) AgentTime() time.Duration {
	if r.Result == nil {
		return 0
	}
	return time.Duration(r.Result.AgentDurationMS) * time.Millisecond
}

// GradeTime is the time of the checks, summed.
func (r *Run) GradeTime() time.Duration {
	var t time.Duration
	for _, c := range r.Checks() {
		t += time.Duration(c.Seconds * float64(time.Second))
	}
	return t
}

// ContainerTime is the time the container ran (after its start-up).
func (r *Run) ContainerTime() time.Duration {
	run := r.Summary.Timings["run"] - r.Summary.Timings["startup"]
	if run < 0 {
		run = 0
	}
	return time.Duration(run * float64(time.Second))
}

// Checks are the run's checks in contract.Checks order; a check the task
// does not have is left out.
func (r *Run) Checks() []CheckOutcome {
	if r.Result == nil {
		return nil
	}
	var out []CheckOutcome
	for _, name := range contract.Checks {
		c := r.Result.Check(name)
		if c == nil {
			continue
		}
		o := CheckOutcome{Name: name, Exit: c.Exit, Seconds: float64(c.DurationMS) / 1000, Log: c.Log, SkipReason: c.Skipped}
		switch {
		case c.Skipped != "":
			o.Status = "skipped"
		case c.OK:
			o.Status = "ok"
		case c.TimedOut:
			o.Status = "timeout"
		default:
			o.Status = "failed"
		}
		out = append(out, o)
	}
	return out
}

// FailedChecks are the names of the checks that did not pass.
func (r *Run) FailedChecks() []string {
	var out []string
	for _, c := range r.Checks() {
		if !c.OK() && c.Status != "skipped" {
			out = append(out, c.Name)
		}
	}
	return out
}

// Grade is the one-line verdict: "PASSED", "FAILED: poc, intent_test
// (build ✓ test ✓)", or "NOT GRADED: why".
func (r *Run) Grade() string {
	switch {
	case r.Result == nil && r.Stopped():
		return "NOT GRADED: stopped before its grade"
	case r.Result == nil:
		return fmt.Sprintf("NOT GRADED: the container wrote no %s (status %s, exit %d)", contract.ResultFile, r.Summary.Status, r.Summary.ExitCode)
	case r.Forged():
		// Before a grade error: the verdict is what the reader must see.
		return VerdictForged + ": " + r.Result.Integrity
	case r.Result.GradeError != "":
		return "NOT GRADED: " + r.Result.GradeError
	case r.Stopped():
		return "NOT GRADED: stopped before its grade"
	case r.NotApplied():
		why := r.Prediction.Why
		if why == "" {
			why = "the patch does not apply"
		}
		return VerdictNotApplied + ": " + why + " (graded on the unchanged source)"
	case r.Passed():
		return "PASSED"
	}
	var ok []string
	for _, c := range r.Checks() {
		if c.OK() {
			ok = append(ok, c.Name+" ✓")
		}
	}
	g := "FAILED"
	failed := r.FailedChecks()
	if r.FailedByAudit() {
		failed = append(failed, ruleAudit)
	}
	if len(failed) > 0 {
		g += ": " + strings.Join(failed, ", ")
	}
	if len(ok) > 0 {
		g += " (" + strings.Join(ok, " ") + ")"
	}
	return g
}

// Marks is the checks as "build ✓ test ✓ poc ✗ intent_test ✗".
func (r *Run) Marks() string {
	var parts []string
	for _, c := range r.Checks() {
		m := "✗"
		switch c.Status {
		case "ok":
			m = "✓"
		case "skipped":
			m = "-"
		}
		parts = append(parts, c.Name+" "+m)
	}
	if len(parts) == 0 {
		return "not graded"
	}
	return strings.Join(parts, " ")
}

// Entry is a run as `ssebench runs ls --json` and `ssebench run --json`
// print it.
type Entry struct {
	ID              string         `json:"id"`
	Task            string         `json:"task"`
	Agent           string         `json:"agent"`
	Model           string         `json:"model"`
	Attempt         int            `json:"attempt,omitempty"`
	Passed          bool           `json:"passed"`
	Graded          bool           `json:"graded"`
	Grade           string         `json:"grade"`
	Checks          []CheckOutcome `json:"checks"`
	Status          string         `json:"status"`
	ExitCode        int            `json:"exit_code"`
	DurationSeconds float64        `json:"duration_seconds"`
	// BuildSeconds, AgentSeconds and GradeSeconds split the duration:
	// images built and imported with the container's start, the agent,
	// the checks (see Run.BuildTime).
	BuildSeconds float64 `json:"build_seconds"`
	AgentSeconds float64 `json:"agent_seconds"`
	GradeSeconds float64 `json:"grade_seconds"`
	// Tokens is null when the run has no model record; CostUSD when the
	// model has no price.
	Tokens  *int64    `json:"tokens"`
	CostUSD *float64  `json:"cost_usd"`
	Started time.Time `json:"started"`
	Dir     string    `json:"dir"`
	// Judged is how the test checks were judged (result.json's judged:
	// "by name", "by name, no canary", "exit status").
	Judged string `json:"judged,omitempty"`
	// Integrity is the run's integrity verdict ("report forged"): Grade
	// is then "FORGED: ..." and reports count the run apart from the
	// failed ones.
	Integrity string `json:"integrity,omitempty"`
	// DroppedPaths are the protected paths the agent changed, reset to
	// pristine before the grade.
	DroppedPaths []string `json:"dropped_paths,omitempty"`
	// Audit is what the run's patch holds that a fix never needs; Flagged
	// says it is not empty.
	Audit   []contract.AuditFinding `json:"audit,omitempty"`
	Flagged bool                    `json:"flagged"`
	// NotApplied says the run graded a prediction whose patch was not
	// applied (Run.NotApplied): Grade is then "NOT APPLIED: ...".
	NotApplied bool `json:"not_applied,omitempty"`
	// Sandbox is how the grade's scripts ran (result.json's sandbox):
	// "none: why" when the user let them run without their sandbox.
	Sandbox string `json:"sandbox,omitempty"`
}

// Entry returns r as an Entry.
func (r *Run) Entry() Entry {
	e := Entry{
		ID: r.ID, Task: r.Task(), Agent: r.Agent(), Model: r.Model(), Attempt: r.Summary.Attempt,
		Passed: r.Passed(), Graded: r.Graded(), Grade: r.Grade(), Checks: r.Checks(),
		Status: r.Summary.Status, ExitCode: r.Summary.ExitCode,
		DurationSeconds: round(r.Duration().Seconds(), 3), Started: r.Summary.Started, Dir: r.Dir,
		BuildSeconds: round(r.BuildTime().Seconds(), 3), AgentSeconds: round(r.AgentTime().Seconds(), 3),
		GradeSeconds: round(r.GradeTime().Seconds(), 3),
		NotApplied:   r.NotApplied(),
	}
	if e.Checks == nil {
		e.Checks = []CheckOutcome{}
	}
	if r.Result != nil {
		e.Judged, e.Integrity = r.Judged(), r.Integrity()
		e.DroppedPaths, e.Audit, e.Flagged = r.Result.DroppedPaths, r.Result.Audit, r.Flagged()
		e.Sandbox = r.Result.Sandbox
	}
	if r.Tokens >= 0 {
		t := r.Tokens
		e.Tokens = &t
	}
	if r.Priced {
		c := round(r.CostUSD, 6)
		e.CostUSD = &c
	}
	return e
}

// countTokens sums the usage and cost of every request in a model
// gateway record. The gateway writes the counts at the top level of each
// line (input_tokens, output_tokens, total_tokens, cost_usd); a nested
// usage object (an upstream's reply kept as it was) is read too. -1
// tokens when there is no record.
func countTokens(path string) (tokens int64, cost float64, priced bool) {
	f, err := os.Open(path)
	if err != nil {
		return -1, 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var line struct {
			usage
			CostUSD  float64 `json:"cost_usd"`
			Usage    *usage  `json:"usage"`
			Response *struct {
				Usage *usage `json:"usage"`
			} `json:"response"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		u := &line.usage
		if line.Usage != nil {
			u = line.Usage
		} else if line.Response != nil && line.Response.Usage != nil {
			u = line.Response.Usage
		}
		tokens += u.total()
		if line.CostUSD > 0 {
			cost += line.CostUSD
			priced = true
		}
	}
	return tokens, cost, priced
}

type usage struct {
	Total      int64 `json:"total_tokens"`
	Prompt     int64 `json:"prompt_tokens"`
	Completion int64 `json:"completion_tokens"`
	Input      int64 `json:"input_tokens"`
	Output     int64 `json:"output_tokens"`
}

func (u *usage) total() int64 {
	if u.Total > 0 {
		return u.Total
	}
	return u.Prompt + u.Completion + u.Input + u.Output
}

// Plural is "1 run" or "3 runs".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func round(x float64, digits int) float64 {
	p := 1.0
	for i := 0; i < digits; i++ {
		p *= 10
	}
	return float64(int64(x*p+0.5)) / p
}
