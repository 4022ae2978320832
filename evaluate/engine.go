package evaluate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// Defaults of Evaluate.
const (
	// DefaultRetries is how many more times a run that failed for an
	// infrastructure reason is tried.
	DefaultRetries = 2
	// memoryPerRun is what one run is assumed to need when --jobs is not
	// given: the agent, the task's build and tests (Go, with its cache).
	memoryPerRun = 2 << 30
)

// Option configures Evaluate.
type Option func(*options) error

type options struct {
	jobs      int
	retries   int
	progress  Progress
	backoff   time.Duration
	buildOnly bool
	ledger    *gateway.Ledger
	// failOnAudit: see WithFailOnAudit.
	failOnAudit bool
}

// WithFailOnAudit counts a run the audit flagged as failed: the runs
// handed to Progress have results.Run.FailOnAudit set, so their Passed
// and Grade say so (`eval --fail-on-audit`). The default counts a
// flagged run by its checks alone.
func WithFailOnAudit() Option {
	return func(o *options) error { o.failOnAudit = true; return nil }
}

// WithBudget stops starting runs once the evaluation's budget (the
// ledger its runs' gateways share, which the backend gives them) is
// spent: the runs not started are listed in the outcome and in the
// folder's evaluation.json, for the report. The default is no budget.
func WithBudget(l *gateway.Ledger) Option {
	return func(o *options) error { o.ledger = l; return nil }
}

// WithBuildOnly builds every image the plan needs and runs nothing: the
// images are then ready for runs (or --prebuilt ones elsewhere). The
// default is to build and run.
func WithBuildOnly() Option {
	return func(o *options) error { o.buildOnly = true; return nil }
}

// WithJobs sets how many runs go at once. The default is DefaultJobs().
func WithJobs(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("--jobs %d: want at least 1", n)
		}
		o.jobs = n
		return nil
	}
}

// WithRetries sets how many more times a run that failed for an
// infrastructure reason is tried. The default is DefaultRetries.
func WithRetries(n int) Option {
	return func(o *options) error {
		if n < 0 {
			return fmt.Errorf("retries %d is negative", n)
		}
		o.retries = n
		return nil
	}
}

// WithProgress receives each run's start and end. The default discards
// them.
func WithProgress(p Progress) Option {
	return func(o *options) error { o.progress = p; return nil }
}

// DefaultJobs is how many runs this machine takes at once: one per core,
// at most one per 2 GiB of available memory, at least one; why says so.
func DefaultJobs() (n int, why string) {
	cores := runtime.NumCPU()
	n = cores
	why = results.Plural(cores, "core", "cores")
	if avail, ok := availableMemory(); ok {
		byMem := int(avail / memoryPerRun)
		why += fmt.Sprintf(", %.1f GiB of memory available at 2 GiB a run", float64(avail)/(1<<30))
		if byMem < n {
			n = byMem
		}
	}
	if n < 1 {
		n = 1
	}
	return n, why
}

// availableMemory reads MemAvailable from /proc/meminfo.
func availableMemory() (uint64, bool) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	var kb uint64
	for _, line := range splitLines(string(b)) {
		if n, _ := fmt.Sscanf(line, "MemAvailable: %d kB", &kb); n == 1 {
			return kb << 10, true
		}
	}
	return 0, false
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}

// Outcome is what Evaluate did.
type Outcome struct {
	// Dir is the evaluation folder.
	Dir string
	// Kept counts runs found done (a resumed evaluation), Ran those run
	// now (with WithBuildOnly: those whose images are built); Failed are the jobs that failed for an infrastructure reason
	// after every retry, with their last error.
	Kept, Ran int
	Failed    map[string]error
	// NotStarted are the jobs not started because the budget was spent.
	NotStarted []Job
	// Builds counts how many times each image was built, by key
	// ("task:T", "agent:T/A"): once each, however many runs used it.
	Builds map[string]int
}

// Done lists the finished runs of the evaluation folder dir, by job key.
// Folders that are not whole runs are passed over.
func Done(dir string) (map[string]*results.Run, error) {
	done := map[string]*results.Run{}
	ents, err := os.ReadDir(filepath.Join(dir, RunsDir))
	if errors.Is(err, os.ErrNotExist) {
		return done, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading the evaluation's runs: %w", err)
	}
	for _, e := range ents {
		r, err := results.Load(filepath.Join(dir, RunsDir, e.Name()))
		if err != nil {
			continue
		}
		j := Job{Task: r.Task(), Agent: r.Agent(), Attempt: r.Summary.Attempt}
		if _, dup := done[j.Key()]; !dup {
			done[j.Key()] = r
		}
	}
	return done, nil
}

// Evaluate runs the jobs of plan that the evaluation folder dir does not
// have yet, at most WithJobs at once, and moves each finished run into
// dir/runs/ whole. Each task's images and each agent's image of a task are
// built once, shared by every run that needs them; a build or run that
// fails for an infrastructure reason is retried (WithRetries), a graded
// failure is a result. Cancelling ctx stops the runs; what is done stays.
func Evaluate(ctx context.Context, b Backend, dir string, plan *Plan, opts ...Option) (*Outcome, error) {
	jobs, _ := DefaultJobs()
	o := &options{jobs: jobs, retries: DefaultRetries, progress: nopProgress{}, backoff: time.Second}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	out := &Outcome{Dir: dir, Failed: map[string]error{}, Builds: map[string]int{}}
	done, err := Done(dir)
	if err != nil {
		return nil, err
	}
	// What a killed evaluation left: its containers (first, so that none
	// still writes), then the half-written runs.
	if err := b.Cleanup(ctx, plan.ID); err != nil {
		return nil, fmt.Errorf("removing what the interrupted evaluation left in its backend: %w", err)
	}
	partial := filepath.Join(dir, PartialDir)
	if err := os.RemoveAll(partial); err != nil {
		return nil, fmt.Errorf("removing unfinished runs: %w", err)
	}
	for _, d := range []string{partial, filepath.Join(dir, RunsDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", d, err)
		}
	}
	var todo []Job
	for _, j := range plan.Runs {
		if _, ok := done[j.Key()]; ok {
			out.Kept++
		} else {
			todo = append(todo, j)
		}
	}
	o.progress.Begin(len(plan.Runs), out.Kept, o.jobs)
	left := newPending(todo)
	// A run that ends as the last user of an image keeps it in containerd
	// only for a run of the same pair that no worker has taken yet: none
	// once the evaluation is interrupted or its budget spent. Runs already
	// taken are not counted: those in flight hold the image themselves
	// (the runner counts its users), and counting them until their attempt
	// returned kept an image that two runs ending together each left to
	// the other.
	needed := func(j Job) func() bool {
		return func() bool {
			if ctx.Err() != nil || (o.ledger != nil && o.ledger.Exhausted()) {
				return false
			}
			return left.queued(j)
		}
	}

	var mu sync.Mutex
	builds := &memo{calls: map[string]*call{}, count: func(k string) { mu.Lock(); out.Builds[k]++; mu.Unlock() }}
	// o.jobs workers take the jobs in the plan's order.
	queue := make(chan Job)
	go func() {
		defer close(queue)
		for _, j := range todo {
			select {
			case queue <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < o.jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range queue {
				left.take(j)
				// Checked as each run is about to start: runs in flight
				// still spend, and their gateways refuse what would
				// overshoot.
				if o.ledger != nil && !o.buildOnly && o.ledger.Exhausted() {
					mu.Lock()
					out.NotStarted = append(out.NotStarted, j)
					mu.Unlock()
					continue
				}
				run, stopped, err := attempt(pipeline.WithImagesNeeded(ctx, needed(j)), b, builds, plan, j, dir, o)
				if stopped {
					continue
				}
				mu.Lock()
				if err != nil {
					out.Failed[j.Key()] = err
				} else {
					out.Ran++
				}
				mu.Unlock()
				if err == nil && run != nil {
					run.FailOnAudit = o.failOnAudit
					o.progress.Finish(j, run)
				}
			}
		}()
	}
	wg.Wait()
	o.progress.End()
	if o.ledger != nil && !o.buildOnly {
		if err := writeEvaluation(dir, plan, o.ledger, out); err != nil {
			return out, err
		}
	}
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	if len(out.Failed) > 0 {
		keys := make([]string, 0, len(out.Failed))
		for k := range out.Failed {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return out, fmt.Errorf("%s failed for an infrastructure reason (first: %s: %v); `ssebench eval --resume %s` tries them again", results.Plural(len(keys), "run", "runs"), keys[0], out.Failed[keys[0]], dir)
	}
	if len(out.NotStarted) > 0 {
		sortJobs(plan, out.NotStarted)
		return out, &BudgetSpentError{Budget: o.ledger.Budget(), NotStarted: len(out.NotStarted), Total: len(plan.Runs)}
	}
	return out, nil
}

// BudgetSpentError says the evaluation's budget stopped it before every
// run started.
type BudgetSpentError struct {
	Budget            gateway.Budget
	NotStarted, Total int
}

func (e *BudgetSpentError) Error() string {
	verb := "were"
	if e.NotStarted == 1 {
		verb = "was"
	}
	return fmt.Sprintf("the evaluation's budget of %s is spent: %d of %s %s not started (%s lists them; a new evaluation with a larger --budget runs them)",
		e.Budget, e.NotStarted, results.Plural(e.Total, "run", "runs"), verb, EvaluationFile)
}

// sortJobs puts jobs in the plan's order.
func sortJobs(plan *Plan, jobs []Job) {
	pos := map[string]int{}
	for i, j := range plan.Runs {
		pos[j.Key()] = i
	}
	sort.Slice(jobs, func(a, b int) bool { return pos[jobs[a].Key()] < pos[jobs[b].Key()] })
}

// writeEvaluation writes dir/evaluation.json: the budget, what the runs
// spent of it, and the runs it left unstarted.
func writeEvaluation(dir string, plan *Plan, l *gateway.Ledger, out *Outcome) error {
	sortJobs(plan, out.NotStarted)
	tokens, usd := l.Spent()
	b := l.Budget()
	ev := results.Evaluation{Budget: &results.BudgetUse{Budget: b, SpentTokens: tokens, SpentUSD: usd}, NotStarted: []results.NotStarted{}}
	for _, j := range out.NotStarted {
		ev.NotStarted = append(ev.NotStarted, results.NotStarted{Task: j.Task, Agent: j.Agent, Attempt: j.Attempt, Reason: results.ReasonBudgetSpent})
	}
	if err := writeJSONFile(filepath.Join(dir, EvaluationFile), &ev); err != nil {
		return fmt.Errorf("writing %s: %w", EvaluationFile, err)
	}
	return nil
}

// attempt runs j, trying again after an infrastructure failure; stopped
// says ctx ended it.
func attempt(ctx context.Context, b Backend, builds *memo, plan *Plan, j Job, dir string, o *options) (run *results.Run, stopped bool, err error) {
	for try := 0; try <= o.retries; try++ {
		if try > 0 {
			select {
			case <-time.After(o.backoff * time.Duration(try)):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			return nil, true, nil
		}
		o.progress.Start(j)
		start := time.Now()
		run, err = runOne(ctx, b, builds, plan, j, dir, o.buildOnly)
		if ctx.Err() != nil {
			return nil, true, nil
		}
		if err == nil {
			return run, false, nil
		}
		again := try < o.retries && retryable(err)
		o.progress.Retry(j, err, again, time.Since(start))
		if !again {
			return nil, false, err
		}
	}
	return nil, false, err
}

// runOne builds what j needs (once per image) and runs it into
// dir/.partial/, then moves the whole run folder into dir/runs/.
func runOne(ctx context.Context, b Backend, builds *memo, plan *Plan, j Job, dir string, buildOnly bool) (*results.Run, error) {
	var images *pipeline.RunImages
	if !plan.Prebuilt {
		v, err := builds.do(ctx, "task:"+j.Task, func() (any, error) { return b.BuildTask(ctx, j.Task) })
		if err != nil {
			return nil, fmt.Errorf("building the images of %s: %w", j.Task, err)
		}
		ti := v.(*pipeline.TaskImages)
		v, err = builds.do(ctx, "agent:"+j.Task+"/"+j.Agent, func() (any, error) { return b.BuildAgent(ctx, j.Task, j.Agent, ti) })
		if err != nil {
			return nil, fmt.Errorf("building the image of %s on %s: %w", j.Agent, j.Task, err)
		}
		images = v.(*pipeline.RunImages)
	}
	if buildOnly {
		return nil, nil
	}
	tmp, err := os.MkdirTemp(filepath.Join(dir, PartialDir), "run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	runDir, err := b.Run(ctx, j, images, tmp)
	if err != nil {
		return nil, err
	}
	if err := modelReached(runDir); err != nil {
		// Not a result: tried again, else left for --resume.
		return nil, err
	}
	final := filepath.Join(dir, RunsDir, filepath.Base(runDir))
	// The summary says where the run's results are: where they will be.
	if err := rewriteResultsPath(runDir, final); err != nil {
		return nil, err
	}
	if err := os.Rename(runDir, final); err != nil {
		return nil, fmt.Errorf("moving the finished run into place: %w", err)
	}
	return results.Load(final)
}

func rewriteResultsPath(runDir, final string) error {
	p := filepath.Join(runDir, results.SummaryFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("reading the run's summary: %w", err)
	}
	var s results.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("reading the run's summary: %w", err)
	}
	// Absolute, as a single run's is (docs/results.md): the evaluation's
	// folder may have been named relative to where eval ran.
	if s.Results, err = filepath.Abs(final); err != nil {
		return err
	}
	nb, err := json.MarshalIndent(&s, "", "  ")
	if err != nil {
		return err
	}
	return safefile.WriteBytes(p, append(nb, '\n'), 0o644, safefile.Sync())
}

// memo runs each key's function once and shares its result with every
// caller, the concurrent ones waiting for it (as singleflight does) and the
// later ones reading it. A failed call is forgotten, so a retry builds
// again.
type memo struct {
	mu    sync.Mutex
	calls map[string]*call
	count func(key string)
}

type call struct {
	done chan struct{}
	val  any
	err  error
}

func (m *memo) do(ctx context.Context, key string, fn func() (any, error)) (any, error) {
	m.mu.Lock()
	c, ok := m.calls[key]
	if !ok {
		c = &call{done: make(chan struct{})}
		m.calls[key] = c
		m.mu.Unlock()
		m.count(key)
		c.val, c.err = fn()
		if c.err != nil {
			m.mu.Lock()
			delete(m.calls, key)
			m.mu.Unlock()
		}
		close(c.done)
		return c.val, c.err
	}
	m.mu.Unlock()
	select {
	case <-c.done:
		return c.val, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// pending counts, per task and agent, the jobs of an evaluation that no
// worker has taken yet: what keeps their image in containerd between runs.
type pending struct {
	mu sync.Mutex
	n  map[[2]string]int
}

func newPending(jobs []Job) *pending {
	p := &pending{n: map[[2]string]int{}}
	for _, j := range jobs {
		p.n[[2]string{j.Task, j.Agent}]++
	}
	return p
}

// take counts j as taken by a worker.
func (p *pending) take(j Job) {
	p.mu.Lock()
	p.n[[2]string{j.Task, j.Agent}]--
	p.mu.Unlock()
}

// queued says whether a job of j's task and agent is still to be taken.
func (p *pending) queued(j Job) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[[2]string{j.Task, j.Agent}] > 0
}

// modelReached fails a run whose model upstream answered none of its
// requests (results.Run.ModelUnreachable): an infrastructure failure, as
// a pull that fails is, not a FAILED grade of the agent.
func modelReached(runDir string) error {
	r, err := results.Load(runDir)
	if err != nil {
		// The folder is read again once in place, and said there.
		return nil
	}
	if down, n, why := r.ModelUnreachable(); down {
		return fmt.Errorf("the model upstream answered none of the run's %s (first: %s)", results.Plural(n, "request", "requests"), why)
	}
	return nil
}
