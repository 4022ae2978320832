package release

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/results"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// The agents a verification runs: the task's own fix, and no change.
const (
	ReferenceAgent = "reference"
	DummyAgent     = "dummy"
)

// Finding is one line of a verification: one check of one task by one
// agent (or, with Agent "-", of the task folder itself).
type Finding struct {
	Task  string `json:"task"`
	Agent string `json:"agent"`
	Check string `json:"check"`
	OK    bool   `json:"ok"`
	// Why says what went wrong, for a failed finding.
	Why string `json:"why,omitempty"`
}

// Report is what Verify found.
type Report struct {
	// Dir is the evaluation folder holding the runs.
	Dir string
	// Findings are sorted by task, then in the order they were checked.
	Findings []Finding
	// Verified are the tasks every finding of which passed, with the case
	// image they passed on.
	Verified map[string]VerifiedTask
	// Warnings are what does not fail a task but weakens its grade, one
	// line each, such as a task judged by exit code only.
	Warnings []string
}

// Failed returns the findings that did not pass.
func (r *Report) Failed() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if !f.OK {
			out = append(out, f)
		}
	}
	return out
}

// VerifyOptions say what Verify runs.
type VerifyOptions struct {
	// Tasks limits the verification to these ids; empty means every
	// task folder of the dataset.
	Tasks []string
	// RunsDir is where the evaluation folder verify-<id>/ goes.
	RunsDir string
	// Eval are options of the evaluation (jobs, progress).
	Eval []evaluate.Option
	// WriteTests writes each task's tests.fail_to_pass and
	// tests.pass_to_pass, as the runs give them, into its config instead
	// of checking them. The tasks are not recorded as verified: their
	// case images hold the config as it was.
	WriteTests bool
	// Reruns runs the verification this many times (0 and 1: once) and
	// keeps a task only when every run verified it on the same case
	// image: a test that passes once and fails the next time (a race, a
	// timing, a port) would grade agents at random. Ignored with
	// WriteTests.
	Reruns int
}

// Verify grades every task of dataset dir (a task folder with problems is
// a failed "validate" finding, and the others still run) with the reference
// agent, which must pass every check the task's manifest entry lists (the
// config's checks without a manifest), and with the dummy agent, which must
// build, pass the function tests and fail every proof of concept one by
// one. Runs go through b, as an evaluation: each case image is built once
// for both agents.
//
// backend returns the backend of the evaluation whose plan id it gets
// (the backend labels the runs with it).
func Verify(ctx context.Context, backend func(planID string) evaluate.Backend, dir string, o VerifyOptions) (*Report, error) {
	if o.Reruns <= 1 || o.WriteTests {
		return verifyOnce(ctx, backend, dir, o)
	}
	var all *Report
	for i := 1; i <= o.Reruns; i++ {
		rep, err := verifyOnce(ctx, backend, dir, o)
		if err != nil {
			return nil, err
		}
		if all == nil {
			all = rep
			all.markRerun(i, o.Reruns)
			continue
		}
		all.mergeRerun(rep, i, o.Reruns)
	}
	return all, nil
}

// markRerun says in each failed finding's why which run it was.
func (r *Report) markRerun(i, n int) {
	for k := range r.Findings {
		if !r.Findings[k].OK {
			r.Findings[k].Why = fmt.Sprintf("run %d of %d: %s", i, n, r.Findings[k].Why)
		}
	}
}

// mergeRerun adds rerun i's failures to r and keeps verified only the
// tasks the rerun verified too, on the same case image.
func (r *Report) mergeRerun(rep *Report, i, n int) {
	rep.markRerun(i, n)
	for _, f := range rep.Findings {
		if !f.OK {
			r.Findings = append(r.Findings, f)
		}
	}
	sort.SliceStable(r.Findings, func(a, b int) bool { return r.Findings[a].Task < r.Findings[b].Task })
	for id, v := range r.Verified {
		if w, ok := rep.Verified[id]; !ok || w.Digest != v.Digest {
			delete(r.Verified, id)
		}
	}
	seen := map[string]bool{}
	for _, w := range r.Warnings {
		seen[w] = true
	}
	for _, w := range rep.Warnings {
		if !seen[w] {
			r.Warnings = append(r.Warnings, w)
		}
	}
}

func verifyOnce(ctx context.Context, backend func(planID string) evaluate.Backend, dir string, o VerifyOptions) (*Report, error) {
	ds, broken, err := task.LoadDatasetTolerant(dir)
	if err != nil {
		return nil, err
	}
	manifest, err := task.ReadManifest(filepath.Join(dir, task.ManifestFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	ids := o.Tasks
	if len(ids) == 0 {
		for _, t := range ds.Tasks {
			ids = append(ids, t.ID)
		}
		for id := range broken {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	rep := &Report{Verified: map[string]VerifiedTask{}}
	var runnable []*task.Task
	for _, id := range ids {
		if ps, ok := broken[id]; ok {
			rep.Findings = append(rep.Findings, Finding{Task: id, Agent: "-", Check: "validate", Why: fmt.Sprintf("%s, first: %s", units.Plural(len(ps), "problem"), ps[0])})
			continue
		}
		t := ds.Task(id)
		if t == nil {
			return nil, fmt.Errorf("dataset %s has no task %s", ds.Name, id)
		}
		runnable = append(runnable, t)
	}
	if len(runnable) > 0 {
		var tids []string
		for _, t := range runnable {
			tids = append(tids, t.ID)
		}
		plan, err := evaluate.NewPlan([]string{ReferenceAgent, DummyAgent}, tids, 1)
		if err != nil {
			return nil, err
		}
		plan.ID = "verify-" + plan.ID
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		plan.Dataset = abs
		rep.Dir = filepath.Join(firstNonEmpty(o.RunsDir, "runs"), plan.ID)
		// --write-tests writes the lists the variant's grade would be
		// judged by: its run waits for the next verify.
		extra, alts, refused, err := alternatives(runnable, rep.Dir, !o.WriteTests)
		if err != nil {
			return nil, fmt.Errorf("copying the tasks' stubs and variants: %w", err)
		}
		rep.Findings = append(rep.Findings, refused...)
		plan.Runs = append(plan.Runs, extra...)
		for _, a := range []string{StubsAgent, VariantAgent} {
			if slices.ContainsFunc(extra, func(j evaluate.Job) bool { return j.Agent == a }) {
				plan.Agents = append(plan.Agents, a)
			}
		}
		if err := evaluate.WritePlan(rep.Dir, plan); err != nil {
			return nil, err
		}
		out, err := evaluate.Evaluate(ctx, withAlternatives(backend(plan.ID), alts), rep.Dir, plan, o.Eval...)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if out == nil {
			return nil, err
		}
		done, derr := evaluate.Done(rep.Dir)
		if derr != nil {
			return nil, derr
		}
		for _, t := range runnable {
			rep.judge(t, manifest, done, out.Failed, alts, o.WriteTests)
		}
	}
	slices.SortStableFunc(rep.Findings, func(a, b Finding) int { return strings.Compare(a.Task, b.Task) })
	return rep, nil
}

// judge adds the findings of task t's two runs, and records t as verified
// when all pass on one case image.
func (r *Report) judge(t *task.Task, m *task.Manifest, done map[string]*results.Run, failed map[string]error, alts map[string]*alternative, writeTests bool) {
	checks := t.Checks()
	if e := m.Task(t.ID); e != nil {
		checks = e.Checks
	}
	var pocs []string
	if t.Config != nil {
		pocs = t.Config.Files.Poc
	}
	start := len(r.Findings)
	images := map[string]bool{}
	for _, agent := range []string{ReferenceAgent, DummyAgent, StubsAgent, VariantAgent} {
		key := evaluate.Job{Task: t.ID, Agent: agent, Attempt: 1}.Key()
		run, ok := done[key]
		if isAlternative(agent) && alts[key] == nil {
			continue // the task folder has no such patch, or it is not run
		}
		if !ok {
			why := "the run did not finish"
			if err := failed[key]; err != nil {
				why = err.Error()
			}
			r.Findings = append(r.Findings, Finding{Task: t.ID, Agent: agent, Check: "run", Why: why})
			continue
		}
		if run.Result != nil && run.Result.CaseImage != "" {
			images[run.Result.CaseImage] = true
		}
		switch agent {
		case ReferenceAgent:
			r.Findings = append(r.Findings, JudgeReference(run, checks)...)
		case DummyAgent:
			r.Findings = append(r.Findings, JudgeDummy(run, pocs)...)
		case VariantAgent:
			if !writeTests {
				// Its intent_test judges the listed tests, which
				// --write-tests is about to write.
				r.Findings = append(r.Findings, judgeVariant(run, checks, alts[key].renamed)...)
			}
		case StubsAgent:
			r.Findings = append(r.Findings, judgeStubs(run))
		}
	}
	if writeTests {
		r.deferExitStatus(t, done, start)
	}
	for _, f := range r.Findings[start:] {
		if !f.OK {
			return
		}
	}
	// The lists are read from the runs' logs: only runs that graded as
	// they must say which tests are which.
	r.judgeTests(t, done, writeTests)
	for _, f := range r.Findings[start:] {
		if !f.OK || writeTests {
			return
		}
	}
	if slices.ContainsFunc(r.Findings, func(f Finding) bool { return f.Task == t.ID && !f.OK }) {
		return // a patch of its folder was refused before the runs
	}
	if len(images) != 1 {
		r.Findings = append(r.Findings, Finding{Task: t.ID, Agent: "-", Check: "case image", Why: fmt.Sprintf("the two runs ran on %d case images, want one", len(images))})
		return
	}
	var image string
	for im := range images {
		image = im
	}
	name, digest, ok := strings.Cut(image, "@")
	files, err := t.FilesDigest()
	if !ok || err != nil {
		r.Findings = append(r.Findings, Finding{Task: t.ID, Agent: "-", Check: "case image", Why: fmt.Sprintf("the case image %q is not pinned by digest", image)})
		return
	}
	r.Verified[t.ID] = VerifiedTask{Image: name, Digest: digest, FilesSHA256: files, Verified: time.Now().UTC().Truncate(time.Second), Runs: r.Dir}
}

// checkResult maps a manifest check name (or result.json's, which differs
// only for the test check) to the run's check; false when the grader has
// no check of that name.
func checkResult(res *contract.RunResult, check string) (*contract.Check, bool) {
	if check == contract.ManifestTestCheck {
		check = contract.CheckTest
	}
	if !slices.Contains(contract.Checks, check) {
		return nil, false
	}
	return res.Check(check), true
}

// deferExitStatus lets --write-tests list a task whose test checks, not
// yet judged by name, failed by the script's exit status alone in the
// reference or dummy run: a test that fails on both trees (one that
// needs the network, an example whose output differs) fails the whole
// package's exit status, and only the lists leave it out. The findings
// from start on of those checks become notes; the lists come from the
// runs' test reports, and the next verify judges them by name.
func (r *Report) deferExitStatus(t *task.Task, done map[string]*results.Run, start int) {
	for i := start; i < len(r.Findings); i++ {
		f := &r.Findings[i]
		if f.OK || f.Agent != ReferenceAgent && f.Agent != DummyAgent || f.Check != contract.ManifestTestCheck && f.Check != contract.CheckIntentTest {
			continue
		}
		run := done[evaluate.Job{Task: t.ID, Agent: f.Agent, Attempt: 1}.Key()]
		if run == nil || run.Result == nil || run.Result.Judged != contract.JudgedExitStatus || !hasTestReport(run, f.Check) {
			continue
		}
		f.OK = true
		f.Why = "by exit status alone: " + f.Why + "; the lists about to be written leave out the tests that fail on both trees"
	}
}

// hasTestReport says whether the run's log of check (as the manifest
// names it) ends with the tests' outcomes.
func hasTestReport(run *results.Run, check string) bool {
	if check == contract.ManifestTestCheck {
		check = contract.CheckTest
	}
	f, err := os.Open(filepath.Join(run.Dir, contract.CheckLog(check)))
	if err != nil {
		return false
	}
	defer f.Close()
	tests, ok, err := contract.ReadTestOutcomes(f)
	return err == nil && ok && len(tests) > 0
}

// JudgeReference checks a reference run: the patch applied (the agent
// exited 0) and every check of checks passed.
func JudgeReference(run *results.Run, checks []string) []Finding {
	f := func(check string, ok bool, why string) Finding {
		return Finding{Task: run.Task(), Agent: ReferenceAgent, Check: check, OK: ok, Why: why}
	}
	res := run.Result
	if res == nil || res.GradeError != "" {
		return []Finding{f("grade", false, strings.TrimPrefix(run.Grade(), "NOT GRADED: "))}
	}
	var out []Finding
	if res.AgentExit != 0 {
		out = append(out, f("apply", false, fmt.Sprintf("the reference patch does not apply (exit %d): %s", res.AgentExit, tail(filepath.Join(run.Dir, contract.AgentLog)))))
	} else {
		out = append(out, f("apply", true, ""))
	}
	for _, c := range checks {
		rc, known := checkResult(res, c)
		switch {
		case !known:
			out = append(out, f(c, false, "the manifest lists a check the grader does not know"))
		case rc == nil:
			out = append(out, f(c, false, "the manifest lists it, but the grade has no such check"))
		case !rc.OK:
			out = append(out, f(c, false, "fails with the reference patch: "+checkWhy(run.Dir, rc)))
		default:
			out = append(out, f(c, true, ""))
		}
	}
	return out
}

// JudgeDummy checks a run of the unchanged tree: it builds, passes its
// function tests, and every proof of concept of pocs still triggers (its
// run exits non-zero), each on its own.
func JudgeDummy(run *results.Run, pocs []string) []Finding {
	f := func(check string, ok bool, why string) Finding {
		return Finding{Task: run.Task(), Agent: DummyAgent, Check: check, OK: ok, Why: why}
	}
	res := run.Result
	if res == nil || res.GradeError != "" {
		return []Finding{f("grade", false, strings.TrimPrefix(run.Grade(), "NOT GRADED: "))}
	}
	var out []Finding
	for _, check := range []string{contract.CheckBuild, contract.CheckTest} {
		// The findings call the checks what the manifest does.
		name := check
		if check == contract.CheckTest {
			name = contract.ManifestTestCheck
		}
		rc := res.Check(check)
		switch {
		case rc == nil:
			// The task has no such script: nothing to hold it to.
		case !rc.OK:
			out = append(out, f(name, false, "fails on the buggy tree: "+checkWhy(run.Dir, rc)))
		default:
			out = append(out, f(name, true, ""))
		}
	}
	if len(pocs) == 0 {
		return out
	}
	if res.PoC == nil || res.PoC.Skipped != "" {
		why := "the grade has no poc check"
		if res.PoC != nil {
			why = "skipped: " + res.PoC.Skipped
		}
		return append(out, f(contract.CheckPoC, false, why))
	}
	exits := pocExits(filepath.Join(run.Dir, contract.CheckLog(contract.CheckPoC)))
	for _, p := range pocs {
		code, ok := exits[p]
		switch {
		case !ok && res.PoC.OK:
			out = append(out, f(contract.CheckPoC+" "+p, false, "no longer triggers: the proofs of concept pass on the buggy tree"))
		case !ok:
			out = append(out, f(contract.CheckPoC+" "+p, false, "poc.log does not say how it ended"))
		case code == 0:
			out = append(out, f(contract.CheckPoC+" "+p, false, "no longer triggers: it exits 0 on the buggy tree"))
		default:
			out = append(out, f(contract.CheckPoC+" "+p, true, ""))
		}
	}
	return out
}

// pocExits reads the "=== <poc>: exit N" lines the grader writes in
// poc.log, one per proof of concept.
func pocExits(log string) map[string]int {
	out := map[string]int{}
	fh, err := os.Open(log)
	if err != nil {
		return out
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "=== ")
		if !ok {
			continue
		}
		i := strings.LastIndex(line, ": exit ")
		if i < 0 {
			continue
		}
		if n, err := strconv.Atoi(line[i+len(": exit "):]); err == nil {
			out[line[:i]] = n
		}
	}
	return out
}

// checkWhy sums a failed check up: its exit and the end of its log.
func checkWhy(dir string, c *contract.Check) string {
	why := fmt.Sprintf("exit %d", c.Exit)
	switch {
	case c.Skipped != "":
		return "skipped: " + c.Skipped
	case c.TimedOut:
		why = "timed out"
	}
	if c.Log != "" {
		if t := tail(filepath.Join(dir, c.Log)); t != "" {
			why += ": " + t
		}
	}
	return why
}

// tail is the last non-empty line of a log, cut to a readable length.
func tail(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(last) > 160 {
		last = last[:160] + "…"
	}
	return last
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
