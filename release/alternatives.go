package release

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/evaluate/predictions"
	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/results"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// The runs a verification adds for a task folder that carries their
// patches (an imported task does): both are graded as a prediction is,
// applied by agents/prediction in the agent phase.
const (
	// VariantAgent grades VariantFile, the reference fix as another
	// author could have written it: its private names renamed and its
	// new functions in another order. It must pass as the reference
	// does, or the hidden tests grade a name, not a fix.
	VariantAgent = "variant"
	// StubsAgent grades StubsFile, the buggy tree with compile stubs of
	// what the hidden tests call that the fix adds. Its run, not the
	// dummy's (whose hidden tests do not compile then), says which tests
	// fail before the fix and which pass.
	StubsAgent = "stubs"
)

// maxAlternativePatch bounds a stubs or variant patch read from a task
// folder: a fix is kilobytes, and the folder is not trusted to be
// reasonable.
const maxAlternativePatch = 16 << 20

// alternativesDir is the folder of a verification's evaluation folder
// that keeps the patches its stubs and variant runs apply.
const alternativesDir = "alternatives"

// alternatives are the extra jobs of the tasks ts: one per patch file a
// task folder has (the variant's only with variant), each patch copied
// from the folder (read inside it: a symlink out of it, a FIFO or a huge
// file is refused) into dir/alternatives, with the copies by job key, and
// a failed finding for each patch that was refused.
func alternatives(ts []*task.Task, dir string, variant bool) ([]evaluate.Job, map[string]*alternative, []Finding, error) {
	var jobs []evaluate.Job
	var refused []Finding
	alts := map[string]*alternative{}
	for _, t := range ts {
		for _, a := range []struct{ agent, file string }{{StubsAgent, task.StubsFile}, {VariantAgent, task.VariantFile}} {
			if a.agent == VariantAgent && !variant {
				continue
			}
			b, err := safefile.Read(t.Dir, a.file, maxAlternativePatch)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				continue
			case err != nil:
				refused = append(refused, Finding{Task: t.ID, Agent: a.agent, Check: "patch", Why: err.Error()})
				continue
			}
			j := evaluate.Job{Task: t.ID, Agent: a.agent, Attempt: 1}
			copyFile := filepath.Join(dir, alternativesDir, t.ID+"-"+a.agent+".diff")
			if err := os.MkdirAll(filepath.Dir(copyFile), 0o755); err != nil {
				return nil, nil, nil, err
			}
			if err := safefile.WriteBytes(copyFile, b, 0o644); err != nil {
				return nil, nil, nil, err
			}
			jobs = append(jobs, j)
			alts[j.Key()] = &alternative{
				pred:    &predictions.Prediction{Where: a.file, ID: t.ID, Model: a.agent, PatchFile: copyFile, Bytes: len(b)},
				renamed: preambleNote(b),
			}
		}
	}
	return jobs, alts, refused, nil
}

// alternative is one stubs or variant run's patch, and what the variant's
// preamble says it renamed.
type alternative struct {
	pred    *predictions.Prediction
	renamed string
}

// withAlternatives runs the alternatives' jobs (patches) as predictions on
// the containerd backend b, and every other job on b itself. A backend
// that is not containerd's (a test's) runs them all.
func withAlternatives(b evaluate.Backend, alts map[string]*alternative) evaluate.Backend {
	c, ok := b.(*evaluate.Containerd)
	if !ok || len(alts) == 0 {
		return b
	}
	patches := map[string]*predictions.Prediction{}
	for k, a := range alts {
		patches[k] = a.pred
	}
	return &altBackend{Backend: b, alt: predictions.NewBackend(*c, patches)}
}

type altBackend struct {
	evaluate.Backend
	alt evaluate.Backend
}

func isAlternative(agent string) bool { return agent == VariantAgent || agent == StubsAgent }

func (b *altBackend) BuildAgent(ctx context.Context, task, agent string, ti *pipeline.TaskImages) (*pipeline.RunImages, error) {
	if isAlternative(agent) {
		return b.alt.BuildAgent(ctx, task, agent, ti)
	}
	return b.Backend.BuildAgent(ctx, task, agent, ti)
}

func (b *altBackend) Run(ctx context.Context, job evaluate.Job, images *pipeline.RunImages, dir string) (string, error) {
	if isAlternative(job.Agent) {
		return b.alt.Run(ctx, job, images, dir)
	}
	return b.Backend.Run(ctx, job, images, dir)
}

// preambleNote is what a variant's preamble says it renamed: the rest of
// its VariantNote line, "" when it has none.
func preambleNote(patch []byte) string {
	for _, line := range strings.Split(string(patch), "\n") {
		if strings.HasPrefix(line, "diff --git ") || strings.HasPrefix(line, "--- ") {
			break
		}
		if s, ok := strings.CutPrefix(line, task.VariantNote); ok {
			if s = strings.TrimSpace(s); len(s) > 300 {
				s = s[:300] + "…"
			}
			return s
		}
	}
	return ""
}

// judgeVariant checks the variant's run as the reference's: the same
// checks must pass. A failure says the hidden tests depend on the
// reference's private names.
func judgeVariant(run *results.Run, checks []string, names string) []Finding {
	out := JudgeReference(run, checks)
	for i := range out {
		out[i].Agent = VariantAgent
		if out[i].OK {
			continue
		}
		why := "the hidden tests depend on the reference's private names"
		if names != "" {
			why += " (" + names + ")"
		}
		out[i].Why = fmt.Sprintf("%s: %s", why, out[i].Why)
	}
	return out
}

// judgeStubs checks the stubs' run: the stubs applied and the tree with
// them builds. Its tests are read by the tests finding.
func judgeStubs(run *results.Run) Finding {
	f := Finding{Task: run.Task(), Agent: StubsAgent, Check: "apply", OK: true}
	res := run.Result
	switch {
	case res == nil || res.GradeError != "":
		f.Check, f.OK, f.Why = "grade", false, strings.TrimPrefix(run.Grade(), "NOT GRADED: ")
	case res.AgentExit != 0:
		f.OK, f.Why = false, fmt.Sprintf("the stubs do not apply to the buggy tree (exit %d): import the task again", res.AgentExit)
	case res.Build != nil && !res.Build.OK:
		f.Check, f.OK, f.Why = contract.CheckBuild, false, "the buggy tree with the stubs does not build: "+checkWhy(run.Dir, res.Build)
	}
	return f
}
