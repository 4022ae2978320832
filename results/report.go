package results

import (
	"math"
	"sort"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// z95 is the normal quantile of a two-sided 95% interval.
const z95 = 1.959963984540054

// Report is what a set of runs says about the agents that ran.
type Report struct {
	// Title names the runs (their folder).
	Title string `json:"title"`
	// Runs is how many runs; Tasks the tasks, sorted.
	Runs  int      `json:"runs"`
	Tasks []string `json:"tasks"`
	// Agents are the agent and model pairs, sorted.
	Agents []AgentStats `json:"agents"`
	// Matrix has a row per task, a cell per agent (as in Agents).
	Matrix []TaskRow `json:"matrix"`
	// Started and Finished span the runs.
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// Entries are the runs, in the order of List.
	Entries []Entry `json:"runs_list"`
	// Evaluation is the evaluation's budget and the runs it left
	// unstarted (evaluation.json); nil without a budget.
	Evaluation *Evaluation `json:"evaluation,omitempty"`
	// Partial says the runs are part of what their evaluation planned;
	// nil when every planned run is there (or there is no plan).
	Partial *Partial `json:"partial,omitempty"`
	// FailOnAudit says the runs the audit flagged count as failed
	// (--fail-on-audit; see FailOnAudit).
	FailOnAudit bool `json:"fail_on_audit,omitempty"`
	// Startup is the runs' median start-up; nil when no run recorded one.
	Startup *StartupStats `json:"startup,omitempty"`
}

// AgentStats is one agent with one model over every attempt.
type AgentStats struct {
	Agent string `json:"agent"`
	Model string `json:"model"`
	// Attempts counts runs, Passed those that passed, NotGraded those
	// that left no grade.
	Attempts  int `json:"attempts"`
	Passed    int `json:"passed"`
	NotGraded int `json:"not_graded"`
	// Forged counts the runs with an integrity verdict (their grade's
	// evidence was forged): attempts that neither passed nor failed.
	// Flagged counts the runs the audit flagged, whatever their grade.
	Forged  int `json:"forged"`
	Flagged int `json:"flagged"`
	// NotApplied counts the graded predictions whose patch was not
	// applied (Run.NotApplied): attempts that did not pass, told apart
	// from failed fixes.
	NotApplied int `json:"not_applied,omitempty"`
	// Rate is Passed/Attempts; Low and High bound it: the Wilson score
	// interval at 95%, which stays inside [0, 1] and is honest for few
	// attempts.
	Rate float64 `json:"pass_rate"`
	Low  float64 `json:"ci95_low"`
	High float64 `json:"ci95_high"`
	// Checks is each check's rate.
	Checks []CheckRate `json:"checks"`
	// Seconds is the runs' total wall time, MeanSeconds per run.
	Seconds     float64 `json:"seconds"`
	MeanSeconds float64 `json:"mean_seconds"`
	// BuildSeconds, AgentSeconds and GradeSeconds split Seconds: images
	// built and imported, the agent, the checks (see Run.BuildTime).
	BuildSeconds float64 `json:"build_seconds"`
	AgentSeconds float64 `json:"agent_seconds"`
	GradeSeconds float64 `json:"grade_seconds"`
	// MeanAgentSeconds is the agent's time per run.
	MeanAgentSeconds float64 `json:"mean_agent_seconds"`
	Spend
}

// Spend is what runs used of the model.
type Spend struct {
	// Tokens is the tokens the model gateway counted; null when no run
	// has a record. CostUSD is their price; null when no run's model had
	// a price.
	Tokens  *int64   `json:"tokens"`
	CostUSD *float64 `json:"cost_usd"`
	// Unpriced counts the runs that used tokens at no known price (their
	// model file has none): CostUSD leaves them out, so it is a lower
	// bound when Unpriced is not 0.
	Unpriced int `json:"unpriced_runs,omitempty"`
}

func (s *Spend) add(r *Run) {
	if r.Tokens >= 0 {
		if s.Tokens == nil {
			s.Tokens = new(int64)
		}
		*s.Tokens += r.Tokens
	}
	if r.Tokens > 0 && !r.Priced {
		s.Unpriced++
	}
	if r.Priced {
		if s.CostUSD == nil {
			s.CostUSD = new(float64)
		}
		*s.CostUSD = round(*s.CostUSD+r.CostUSD, 6)
	}
}

// Label is "agent" or "agent (model)" when a model is set.
func (a AgentStats) Label() string {
	if a.Model == "" || a.Model == "none" {
		return a.Agent
	}
	return a.Agent + " (" + a.Model + ")"
}

// CheckRate is how often a check passed of the runs that had it.
type CheckRate struct {
	Name   string  `json:"name"`
	Passed int     `json:"passed"`
	Of     int     `json:"of"`
	Rate   float64 `json:"rate"`
}

// TaskRow is a task's line of the matrix, with what all agents spent on
// it.
type TaskRow struct {
	Task  string `json:"task"`
	Cells []Cell `json:"cells"`
	Spend
}

// Cell is one agent (with its model) on one task: it names both, so a
// reader of the JSON needs no column order.
type Cell struct {
	Task     string `json:"task"`
	Agent    string `json:"agent"`
	Model    string `json:"model"`
	Passed   int    `json:"passed"`
	Attempts int    `json:"attempts"`
	// Forged counts the attempts with an integrity verdict.
	Forged int `json:"forged,omitempty"`
	// NotApplied counts the attempts whose patch was not applied.
	NotApplied int `json:"not_applied,omitempty"`
	Spend
}

// NewReport computes the report of runs.
func NewReport(title string, runs []*Run) *Report {
	rep := &Report{Title: title, Runs: len(runs), Tasks: []string{}, Agents: []AgentStats{}, Matrix: []TaskRow{}, Entries: []Entry{}, Startup: newStartupStats(runs)}
	type key struct{ agent, model string }
	agents := map[key]*AgentStats{}
	checks := map[key]map[string]*CheckRate{}
	tasks := map[string]bool{}
	cells := map[string]map[key]*Cell{}
	for _, r := range runs {
		k := key{r.Agent(), r.Model()}
		a := agents[k]
		if a == nil {
			a = &AgentStats{Agent: k.agent, Model: k.model}
			agents[k] = a
			checks[k] = map[string]*CheckRate{}
		}
		// A run stopped before its grade is no attempt: the user ended
		// it, not the agent.
		if !r.Stopped() {
			a.Attempts++
		}
		if r.Passed() && r.Graded() {
			a.Passed++
		}
		if !r.Graded() {
			a.NotGraded++
		}
		if r.Forged() {
			a.Forged++
		}
		if r.NotApplied() {
			a.NotApplied++
		}
		if r.Flagged() {
			a.Flagged++
		}
		if r.FailOnAudit {
			rep.FailOnAudit = true
		}
		a.Seconds += r.Duration().Seconds()
		a.BuildSeconds += r.BuildTime().Seconds()
		a.AgentSeconds += r.AgentTime().Seconds()
		a.GradeSeconds += r.GradeTime().Seconds()
		a.Spend.add(r)
		for _, c := range r.Checks() {
			if c.Status == "skipped" {
				continue
			}
			cr := checks[k][c.Name]
			if cr == nil {
				cr = &CheckRate{Name: c.Name}
				checks[k][c.Name] = cr
			}
			cr.Of++
			if c.OK() {
				cr.Passed++
			}
		}
		tasks[r.Task()] = true
		if cells[r.Task()] == nil {
			cells[r.Task()] = map[key]*Cell{}
		}
		c := cells[r.Task()][k]
		if c == nil {
			c = &Cell{Task: r.Task(), Agent: k.agent, Model: k.model}
			cells[r.Task()][k] = c
		}
		c.Spend.add(r)
		c.Attempts++
		if r.Passed() {
			c.Passed++
		}
		if r.Forged() {
			c.Forged++
		}
		if r.NotApplied() {
			c.NotApplied++
		}
		if rep.Started.IsZero() || r.Summary.Started.Before(rep.Started) {
			rep.Started = r.Summary.Started
		}
		if r.Summary.Finished.After(rep.Finished) {
			rep.Finished = r.Summary.Finished
		}
		rep.Entries = append(rep.Entries, r.Entry())
	}
	var keys []key
	for k := range agents {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].agent != keys[j].agent {
			return keys[i].agent < keys[j].agent
		}
		return keys[i].model < keys[j].model
	})
	for _, k := range keys {
		a := agents[k]
		a.Rate = float64(a.Passed) / float64(a.Attempts)
		a.Low, a.High = Wilson(a.Passed, a.Attempts, z95)
		a.Rate, a.Low, a.High = round(a.Rate, 4), round(a.Low, 4), round(a.High, 4)
		a.MeanSeconds = round(a.Seconds/float64(a.Attempts), 3)
		a.MeanAgentSeconds = round(a.AgentSeconds/float64(a.Attempts), 3)
		a.Seconds = round(a.Seconds, 3)
		a.BuildSeconds, a.AgentSeconds, a.GradeSeconds = round(a.BuildSeconds, 3), round(a.AgentSeconds, 3), round(a.GradeSeconds, 3)
		a.Checks = []CheckRate{}
		for _, n := range contract.Checks {
			if cr := checks[k][n]; cr != nil {
				cr.Rate = round(float64(cr.Passed)/float64(cr.Of), 4)
				a.Checks = append(a.Checks, *cr)
			}
		}
		rep.Agents = append(rep.Agents, *a)
	}
	for t := range tasks {
		rep.Tasks = append(rep.Tasks, t)
	}
	sort.Strings(rep.Tasks)
	for _, t := range rep.Tasks {
		row := TaskRow{Task: t}
		for _, k := range keys {
			c := cells[t][k]
			if c == nil {
				c = &Cell{Task: t, Agent: k.agent, Model: k.model}
			}
			row.Cells = append(row.Cells, *c)
			row.Spend.merge(c.Spend)
		}
		rep.Matrix = append(rep.Matrix, row)
	}
	return rep
}

func (s *Spend) merge(o Spend) {
	s.Unpriced += o.Unpriced
	if o.Tokens != nil {
		if s.Tokens == nil {
			s.Tokens = new(int64)
		}
		*s.Tokens += *o.Tokens
	}
	if o.CostUSD != nil {
		if s.CostUSD == nil {
			s.CostUSD = new(float64)
		}
		*s.CostUSD = round(*s.CostUSD+*o.CostUSD, 6)
	}
}

// Wilson is the Wilson score interval of k successes in n trials at normal
// quantile z: (0, 0) when n is 0.
func Wilson(k, n int, z float64) (low, high float64) {
	if n == 0 {
		return 0, 0
	}
	p := float64(k) / float64(n)
	fn := float64(n)
	z2 := z * z
	centre := (p + z2/(2*fn)) / (1 + z2/fn)
	half := z / (1 + z2/fn) * math.Sqrt(p*(1-p)/fn+z2/(4*fn*fn))
	return math.Max(0, centre-half), math.Min(1, centre+half)
}
