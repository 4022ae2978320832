package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/42-b3yond-6ug/ssebench/gateway"
)

// EvaluationFile is an evaluation folder's account of what its budget
// allowed: what was spent of it and which runs it left unstarted. Only an
// evaluation with --budget has one.
const EvaluationFile = "evaluation.json"

// ReasonBudgetSpent is why a run was not started once the evaluation's
// budget was spent.
const ReasonBudgetSpent = "budget spent"

// Evaluation is evaluation.json.
type Evaluation struct {
	Budget     *BudgetUse   `json:"budget,omitempty"`
	NotStarted []NotStarted `json:"not_started"`
}

// BudgetUse is the budget (--budget) and what the runs spent of it.
type BudgetUse struct {
	gateway.Budget
	SpentTokens int64   `json:"spent_tokens"`
	SpentUSD    float64 `json:"spent_usd"`
}

// Text is "1200345 of 2000000 tokens" or "$4.9812 of $5.00".
func (b *BudgetUse) Text() string {
	if b.USD > 0 {
		return fmt.Sprintf("$%.4f of %s", b.SpentUSD, b.Budget)
	}
	return fmt.Sprintf("%d of %s", b.SpentTokens, b.Budget)
}

// Partial says a report covers part of what its evaluation planned: the
// evaluation was interrupted (or its runs failed for an infrastructure
// reason) before every run of its plan was done.
type Partial struct {
	// Planned is how many runs the plan has; Missing how many of them
	// have no finished run.
	Planned int `json:"planned"`
	Missing int `json:"missing"`
	// Resume is the command that runs the missing ones ("ssebench eval
	// --resume DIR"), "" when there is none.
	Resume string `json:"resume,omitempty"`
}

// Text is "Partial: 4 of 6 planned runs are missing; `ssebench eval
// --resume DIR` runs them."
func (p *Partial) Text() string {
	verb := "are"
	if p.Missing == 1 {
		verb = "is"
	}
	s := fmt.Sprintf("Partial: %d of %s %s missing", p.Missing, Plural(p.Planned, "planned run", "planned runs"), verb)
	if p.Resume != "" {
		s += "; `" + p.Resume + "` runs them"
	}
	return s + "."
}

// NotStarted is a run of the plan that never started, and why.
type NotStarted struct {
	Task    string `json:"task"`
	Agent   string `json:"agent"`
	Attempt int    `json:"attempt"`
	Reason  string `json:"reason"`
}

// ReadEvaluation reads dir/evaluation.json; nil when there is none.
func ReadEvaluation(dir string) (*Evaluation, error) {
	b, err := os.ReadFile(filepath.Join(dir, EvaluationFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading the evaluation's %s: %w", EvaluationFile, err)
	}
	var e Evaluation
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, EvaluationFile), err)
	}
	return &e, nil
}
