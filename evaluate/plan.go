package evaluate

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/results"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// Files and folders of an evaluation folder.
const (
	PlanFile   = "plan.json"
	RunsDir    = "runs"
	PartialDir = ".partial"
	// EvaluationFile is what an evaluation with a budget spent and left
	// unstarted (results.Evaluation).
	EvaluationFile = results.EvaluationFile
)

// Plan is what an evaluation runs: plan.json.
type Plan struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	// Agents are agent folders, Tasks task ids; every pair runs Attempts
	// times.
	Agents   []string `json:"agents"`
	Tasks    []string `json:"tasks"`
	Attempts int      `json:"attempts"`
	// Dataset (--local) or Catalog is where the tasks come from; neither
	// means the dataset under the home that has each task.
	Dataset string `json:"dataset,omitempty"`
	Catalog string `json:"catalog,omitempty"`
	// The settings of every run.
	Model      string `json:"model"`
	Timeout    int    `json:"timeout"`
	Difficulty int    `json:"difficulty"`
	Prebuilt   bool   `json:"prebuilt"`
	// Mode is sandbox ("" means it too) or sidecar; OSImage the OS image
	// of tool-sidecar-agent.
	Mode    string `json:"mode,omitempty"`
	OSImage string `json:"os_image,omitempty"`
	// Budget is what all runs together may spend on the model (--budget).
	Budget *gateway.Budget `json:"budget,omitempty"`
	// Jobs is the runs at once the evaluation was started with (--jobs);
	// 0 means the machine's default. --resume keeps it unless given
	// another.
	Jobs int `json:"jobs,omitempty"`
	// Network, Resources and AllowNoSandbox are what every run was
	// started with (--egress, the limits, --allow-no-sandbox): a verdict
	// depends on them, so --resume keeps them. Empty in a plan written
	// before they were kept: the flags of the resume then say.
	Network        runner.Network   `json:"network,omitempty"`
	Resources      *contract.Limits `json:"resources,omitempty"`
	AllowNoSandbox bool             `json:"allow_no_sandbox,omitempty"`
	// Runs are the jobs, in the order they start.
	Runs []Job `json:"runs"`
}

// Job is one run of a plan.
type Job struct {
	Task    string `json:"task"`
	Agent   string `json:"agent"`
	Attempt int    `json:"attempt"`
}

// Key names the job.
func (j Job) Key() string { return fmt.Sprintf("%s/%s/%d", j.Task, j.Agent, j.Attempt) }

// NewPlan plans every (task, agent, attempt). Attempts come outermost, so
// the first results cover every task and agent early.
func NewPlan(agents, tasks []string, attempts int) (*Plan, error) {
	switch {
	case len(agents) == 0:
		return nil, errors.New("no agents: pass --agents a,b")
	case len(tasks) == 0:
		return nil, errors.New("no tasks: the dataset has none, or --tasks named none")
	case attempts < 1:
		return nil, fmt.Errorf("--attempts %d: want at least 1", attempts)
	}
	p := &Plan{ID: newID(time.Now()), Created: time.Now().UTC().Truncate(time.Second), Agents: agents, Tasks: tasks, Attempts: attempts}
	for a := 1; a <= attempts; a++ {
		for _, t := range tasks {
			for _, ag := range agents {
				p.Runs = append(p.Runs, Job{Task: t, Agent: ag, Attempt: a})
			}
		}
	}
	return p, nil
}

// PlanOf plans exactly jobs, in their order: the runs of `ssebench
// grade`, one per prediction, which are no product of agents and tasks.
// Agents and Tasks list the names the jobs use, first seen first.
func PlanOf(jobs []Job) *Plan {
	p := &Plan{ID: newID(time.Now()), Created: time.Now().UTC().Truncate(time.Second), Attempts: 1, Runs: jobs}
	seen := map[string]bool{}
	for _, j := range jobs {
		if !seen["a"+j.Agent] {
			seen["a"+j.Agent] = true
			p.Agents = append(p.Agents, j.Agent)
		}
		if !seen["t"+j.Task] {
			seen["t"+j.Task] = true
			p.Tasks = append(p.Tasks, j.Task)
		}
	}
	return p
}

func newID(t time.Time) string {
	b := make([]byte, 3)
	rand.Read(b)
	return t.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b)
}

// FolderName is the evaluation folder's name: eval-<id>.
func (p *Plan) FolderName() string { return "eval-" + p.ID }

// WritePlan writes dir/plan.json atomically, creating dir; an existing plan
// is an error (resume it instead).
func WritePlan(dir string, p *Plan) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating the evaluation folder: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, PlanFile)); err == nil {
		return fmt.Errorf("%s already has a plan: resume it with --resume %s", dir, dir)
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	// Synced: after a reboot the plan is whole or absent.
	return safefile.WriteBytes(filepath.Join(dir, PlanFile), append(b, '\n'), 0o644, safefile.Sync())
}

// ReadPlan reads dir/plan.json.
func ReadPlan(dir string) (*Plan, error) {
	b, err := os.ReadFile(filepath.Join(dir, PlanFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s is not an evaluation folder (no %s)", dir, PlanFile)
	} else if err != nil {
		return nil, fmt.Errorf("reading the plan: %w", err)
	}
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, PlanFile), err)
	}
	return &p, nil
}

// SplitList splits a comma-separated flag value, dropping empty items.
func SplitList(s []string) []string {
	var out []string
	for _, v := range s {
		for _, x := range strings.Split(v, ",") {
			if x = strings.TrimSpace(x); x != "" {
				out = append(out, x)
			}
		}
	}
	return out
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return safefile.WriteBytes(path, append(b, '\n'), 0o644, safefile.Sync())
}

// NewLedger returns the ledger of the plan's budget, with what the runs
// already in dir spent (a resumed evaluation); nil when the plan has no
// budget.
func NewLedger(dir string, p *Plan) (*gateway.Ledger, error) {
	if p.Budget == nil || p.Budget.IsZero() {
		return nil, nil
	}
	done, err := Done(dir)
	if err != nil {
		return nil, err
	}
	var tokens int64
	var usd float64
	for _, r := range done {
		if u := r.Summary.ModelUsage; u != nil {
			tokens += u.TotalTokens
			usd += u.CostUSD
		}
	}
	return gateway.NewLedger(*p.Budget, tokens, usd)
}
