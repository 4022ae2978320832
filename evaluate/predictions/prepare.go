package predictions

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/agent"
	"github.com/42-b3yond-6ug/ssebench/internal/suggest"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
)

// Request is a grade as `ssebench grade` asks for it.
type Request struct {
	// Predictions is the predictions file (see Read).
	Predictions string
	// Dataset (--dataset) or Catalog is where the tasks come from
	// (neither: the home's datasets/examples); Tasks, when set, are the
	// only ones graded.
	Dataset, Catalog string
	Tasks            []string
	// RunsDir is where the evaluation folder eval-<id>/ goes.
	RunsDir string
	// Timeout is each run's, in seconds.
	Timeout int
	// Ready, when set, is asked once the request is checked and before
	// the evaluation folder is made: what stops every run (the daemons)
	// is said then, and leaves no folder behind.
	Ready func() error
}

// Prepare checks r against e's home (the agent folder that applies the
// patches, the tasks) and reads the predictions into a new evaluation
// folder, whose plan it writes (see NewGrading).
func Prepare(ctx context.Context, e *pipeline.Env, r Request) (*Grading, error) {
	if _, err := agent.Load(e.Home, Agent); err != nil {
		return nil, fmt.Errorf("ssebench grade applies patches with the agent folder agents/%s, which %s lacks: copy it there from the ssebench source", Agent, e.Home)
	}
	known, local, err := e.TaskIDs(ctx, r.Dataset, r.Catalog)
	if err != nil {
		return nil, err
	}
	if local != "" {
		if local, err = filepath.Abs(local); err != nil {
			return nil, err
		}
	}
	for _, id := range r.Tasks {
		if !slices.Contains(known, id) {
			return nil, fmt.Errorf("--tasks: %s", unknownTask(id, known))
		}
	}
	if r.Ready != nil {
		if err := r.Ready(); err != nil {
			return nil, err
		}
	}
	// Absolute, since each run mounts its patch from there and a mount's
	// host path must be (--runs-dir defaults to ./runs).
	runsDir, err := filepath.Abs(r.RunsDir)
	if err != nil {
		return nil, err
	}
	gr, err := NewGrading(r.Predictions, runsDir, known, r.Tasks)
	if err != nil {
		return nil, err
	}
	gr.Plan.Dataset, gr.Plan.Catalog, gr.Plan.Timeout = local, r.Catalog, r.Timeout
	if gr.Plan.Catalog != "" && !strings.Contains(gr.Plan.Catalog, "://") {
		if gr.Plan.Catalog, err = filepath.Abs(gr.Plan.Catalog); err != nil {
			return nil, err
		}
	}
	return gr, gr.Write()
}

// unknownTask says that id is none of the known tasks, with the closest
// one when there is one.
func unknownTask(id string, known []string) string {
	if s := suggest.Closest(id, known); s != "" {
		return fmt.Sprintf("unknown task %s: did you mean %q?", quote(id), s)
	}
	return fmt.Sprintf("unknown task %s: the dataset has no such task", quote(id))
}
