package release

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/evaluate/predictions"
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

// Where a task folder keeps the two patches. Both are under sse/, which
// the case image copies to /ssebench, out of the agent's sight.
const (
	VariantFile = "sse/diffs/variant.diff"
	StubsFile   = "sse/diffs/stubs.diff"
)

// VariantNote starts the line of a variant's preamble that names what it
// renamed ("renamed: redactURL→redactURLAlt, ..."); the verification
// quotes it when the variant fails.
const VariantNote = "renamed: "

// alternatives are the extra jobs of the tasks ts: one per patch file a
// task folder has (the variant's only with variant), with the patches by
// job key.
func alternatives(ts []*task.Task, variant bool) ([]evaluate.Job, map[string]*predictions.Prediction) {
	var jobs []evaluate.Job
	patches := map[string]*predictions.Prediction{}
	for _, t := range ts {
		for _, a := range []struct{ agent, file string }{{StubsAgent, StubsFile}, {VariantAgent, VariantFile}} {
			if a.agent == VariantAgent && !variant {
				continue
			}
			p := filepath.Join(t.Dir, filepath.FromSlash(a.file))
			fi, err := os.Stat(p)
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			j := evaluate.Job{Task: t.ID, Agent: a.agent, Attempt: 1}
			jobs = append(jobs, j)
			patches[j.Key()] = &predictions.Prediction{Where: a.file, ID: t.ID, Model: a.agent, PatchFile: p, Bytes: int(fi.Size())}
		}
	}
	return jobs, patches
}

// withAlternatives runs the alternatives' jobs (patches) as predictions on
// the containerd backend b, and every other job on b itself. A backend
// that is not containerd's (a test's) runs them all.
func withAlternatives(b evaluate.Backend, patches map[string]*predictions.Prediction) evaluate.Backend {
	c, ok := b.(*evaluate.Containerd)
	if !ok || len(patches) == 0 {
		return b
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

// variantRenames is what the variant of task folder dir renamed, from the
// VariantNote line of its preamble; "" when it says nothing.
func variantRenames(dir string) string {
	f, err := os.Open(filepath.Join(dir, filepath.FromSlash(VariantFile)))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "diff --git ") || strings.HasPrefix(line, "--- ") {
			break
		}
		if s, ok := strings.CutPrefix(line, VariantNote); ok {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// judgeVariant checks the variant's run as the reference's: the same
// checks must pass. A failure says the hidden tests depend on the
// reference's private names.
func judgeVariant(t *task.Task, run *results.Run, checks []string) []Finding {
	out := JudgeReference(run, checks)
	names := variantRenames(t.Dir)
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

// hasFile says whether task folder t has the patch of alternative agent.
func hasFile(t *task.Task, agent string) bool {
	file := VariantFile
	if agent == StubsAgent {
		file = StubsFile
	}
	fi, err := os.Stat(filepath.Join(t.Dir, filepath.FromSlash(file)))
	return err == nil && fi.Mode().IsRegular()
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
