package predictions

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// Agent is the agent folder that applies a prediction's patch
// (agents/prediction): the patch is the agent's change, made as model in
// the agent phase, and the grade is the one every agent gets.
const Agent = "prediction"

// Dir is the folder of a grade's evaluation folder that keeps the patches
// graded, one file per prediction.
const Dir = evaluate.GradeDir

// Exit statuses of agents/prediction's apply.sh.
const (
	applyEmpty    = 3
	applyRejected = 4
)

// backend runs each job as agents/prediction applying the job's patch,
// with the model's name as the agent's.
type backend struct {
	evaluate.Containerd
	patches map[string]*Prediction
}

var _ evaluate.Backend = (*backend)(nil)

// NewBackend returns a Backend that runs on c each job of patches (keyed
// by evaluate.Job.Key, the job's agent the model's name) as
// agents/prediction applying the job's patch.
func NewBackend(c evaluate.Containerd, patches map[string]*Prediction) evaluate.Backend {
	return &backend{Containerd: c, patches: patches}
}

// BuildAgent implements evaluate.Backend: every model's patches are
// applied by the same agent image of the task.
func (b *backend) BuildAgent(ctx context.Context, task, _ string, ti *pipeline.TaskImages) (*pipeline.RunImages, error) {
	return b.Containerd.BuildAgent(ctx, task, Agent, ti)
}

// Run implements evaluate.Backend.
func (b *backend) Run(ctx context.Context, job evaluate.Job, images *pipeline.RunImages, dir string) (string, error) {
	p := b.patches[job.Key()]
	r := b.Request
	r.Task, r.Agent, r.AgentName, r.Patch = job.Task, Agent, job.Agent, p.PatchFile
	r.Images, r.RunsDir, r.Attempt = images, dir, job.Attempt
	r.Labels = map[string]string{evaluate.EvalLabel: b.EvalID}
	res, err := b.Env.Run(ctx, r)
	if err != nil {
		return "", err
	}
	if res.Summary.Status == "stopped" {
		return "", fmt.Errorf("run %s was stopped", res.Summary.RunID)
	}
	return res.Dir, noteApplied(res.Dir, p)
}

// noteApplied records what became of the patch: prediction.json (which
// gives a patch that was not applied its own verdict in every report),
// and result.json's notes when it was not applied. The agent's exit
// status is the entrypoint's record of apply.sh (root's script; the
// patch is only its input).
func noteApplied(dir string, p *Prediction) error {
	r, err := contract.ReadRunResult(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	if err := results.WritePrediction(dir, appliedOutcome(r.AgentExit, p)); err != nil {
		return err
	}
	note := Note(r.AgentExit, p)
	if note == "" {
		return nil
	}
	r.Notes = append(r.Notes, note)
	return contract.WriteRunResult(dir, r)
}

// appliedOutcome is prediction.json for a patch apply.sh ended with exit.
func appliedOutcome(exit int, p *Prediction) results.Prediction {
	switch {
	case exit == applyEmpty:
		return results.Prediction{Patch: results.PatchEmpty}
	case exit == applyRejected && p.Kind == KindNotDiff:
		return results.Prediction{Patch: results.PatchNotApplied, Why: KindNotDiff}
	case exit == applyRejected:
		return results.Prediction{Patch: results.PatchNotApplied, Why: "the patch does not apply"}
	}
	return results.Prediction{Patch: results.PatchApplied}
}

// Note is the note result.json gets for p's patch, which apply.sh (the
// agent of the run) ended with exit: "" when the patch was applied, else
// "prediction: " and what became of it.
func Note(exit int, p *Prediction) string {
	switch {
	case exit == applyEmpty:
		return "prediction: " + KindEmpty + ": nothing applied; graded on the unchanged source"
	case exit == applyRejected && p.Kind == KindNotDiff:
		return "prediction: " + KindNotDiff + ": not applied; graded on the unchanged source"
	case exit == applyRejected:
		return "prediction: the patch does not apply: not applied; graded on the unchanged source (agent.log has patch's output)"
	case exit != 0:
		return fmt.Sprintf("prediction: applying the patch ended with status %d: graded on what it left", exit)
	}
	return ""
}
