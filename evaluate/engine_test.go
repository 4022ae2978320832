package evaluate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// fakeBackend writes run folders as the pipeline does, counting builds and
// the runs going at once; infra makes the first tries of a job key fail.
type fakeBackend struct {
	mu          sync.Mutex
	builds      map[string]int
	running     int32
	maxRunning  int32
	infra       map[string]int
	runs        int32
	block       chan struct{} // when set, runs wait on it
	order       []string
	cleanedUpID string
	// spend, when set, is the run's agent: it uses the model through a
	// gateway of the run, recording into the run folder.
	spend func(t Job, runDir string) *gateway.Totals
	// needed, when set, records by job what the run's WithImagesNeeded
	// said as it ended.
	needed map[string]bool
	// modelDown makes the run's model upstream answer none of its
	// requests, that many times per job.
	modelDown map[string]int
	// fixed fails a job's images for good (a missing base image), by job.
	fixed map[string]int
}

func (f *fakeBackend) BuildTask(ctx context.Context, task string) (*pipeline.TaskImages, error) {
	f.count("task:" + task)
	if f.fixed[task] > 0 {
		return nil, fmt.Errorf("building the case image of %s: base image x/base-generic-go:1 is %w", task, store.ErrNotFound)
	}
	if f.fixed["permanent:"+task] > 0 {
		return nil, Permanent(errors.New("the task folder is gone"))
	}
	time.Sleep(20 * time.Millisecond)
	img, _ := random.Image(10, 1)
	d, _ := img.Digest()
	return &pipeline.TaskImages{Case: "case/" + task, CaseDigest: d.String(), Tool: &pipeline.Built{Name: "tool/" + task, Digest: d}}, nil
}

func (f *fakeBackend) BuildAgent(ctx context.Context, task, agent string, ti *pipeline.TaskImages) (*pipeline.RunImages, error) {
	f.count("agent:" + task + "/" + agent)
	return &pipeline.RunImages{Case: ti.Case, Tool: ti.Tool.Name, Agent: agent + "/" + task}, nil
}

func (f *fakeBackend) count(k string) {
	f.mu.Lock()
	f.builds[k]++
	f.mu.Unlock()
}

func (f *fakeBackend) Run(ctx context.Context, j Job, im *pipeline.RunImages, dir string) (string, error) {
	n := atomic.AddInt32(&f.running, 1)
	defer atomic.AddInt32(&f.running, -1)
	for {
		m := atomic.LoadInt32(&f.maxRunning)
		if n <= m || atomic.CompareAndSwapInt32(&f.maxRunning, m, n) {
			break
		}
	}
	// Asked as the run ends, as the runner does.
	defer func() {
		if needed := pipeline.ImagesNeeded(ctx); needed != nil && f.needed != nil {
			v := needed()
			f.mu.Lock()
			f.needed[j.Key()] = v
			f.mu.Unlock()
		}
	}()
	f.mu.Lock()
	f.order = append(f.order, j.Key())
	fail := f.infra[j.Key()] > 0
	if fail {
		f.infra[j.Key()]--
	}
	f.mu.Unlock()
	if fail {
		return "", errors.New("containerd: connection refused")
	}
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	time.Sleep(10 * time.Millisecond)
	atomic.AddInt32(&f.runs, 1)
	id := fmt.Sprintf("%s-%s-%d-%d", j.Task, j.Agent, j.Attempt, time.Now().UnixNano())
	rd := filepath.Join(dir, id)
	os.MkdirAll(rd, 0o755)
	passed := j.Agent == "good" || j.Agent == "sly"
	res := &contract.RunResult{TaskID: j.Task, Passed: passed, Build: &contract.Check{OK: true}, PoC: &contract.Check{OK: passed}}
	if j.Agent == "sly" {
		// Passes, with a patch the audit flagged.
		res.Audit = []contract.AuditFinding{{Path: "x.go", Line: 3, Rule: "init added"}}
	}
	contract.WriteRunResult(rd, res)
	s := results.Summary{RunID: id, Task: j.Task, Agent: j.Agent, Attempt: j.Attempt, Status: "ok", Results: rd, Started: time.Now()}
	if f.spend != nil {
		s.ModelUsage = f.spend(j, rd)
	}
	f.mu.Lock()
	down := f.modelDown[j.Key()] > 0
	if down {
		f.modelDown[j.Key()]--
	}
	f.mu.Unlock()
	if down {
		rec, _ := json.Marshal(gateway.Record{Seq: 1, Method: "POST", Path: "/chat/completions", Status: 502, Failed: true, Error: "dial tcp 127.0.0.1:9: connect: connection refused"})
		os.WriteFile(filepath.Join(rd, results.ModelLog), append(rec, '\n'), 0o644)
	}
	return rd, writeJSONFile(filepath.Join(rd, "summary.json"), s)
}

func (f *fakeBackend) Cleanup(ctx context.Context, id string) error {
	f.cleanedUpID = id
	return nil
}

func newFake() *fakeBackend { return &fakeBackend{builds: map[string]int{}, infra: map[string]int{}} }

func testPlan(t *testing.T) *Plan {
	t.Helper()
	p, err := NewPlan([]string{"good", "bad"}, []string{"t1", "t2", "t3"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEvaluate(t *testing.T) {
	dir := t.TempDir()
	p := testPlan(t)
	if err := WritePlan(dir, p); err != nil {
		t.Fatal(err)
	}
	f := newFake()
	f.infra["t2/bad/1"] = 1 // fails once, then runs
	out, err := Evaluate(context.Background(), f, dir, p, WithJobs(3), func(o *options) error { o.backoff = time.Millisecond; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if out.Ran != 12 || f.runs != 12 {
		t.Errorf("ran %d (backend %d), want 12", out.Ran, f.runs)
	}
	if f.maxRunning > 3 || f.maxRunning < 2 {
		t.Errorf("%d runs at once, want at most 3 (and more than one)", f.maxRunning)
	}
	if len(f.builds) != 3+6 {
		t.Errorf("built %v, want 3 task and 6 agent images", f.builds)
	}
	for k, n := range f.builds {
		if n != 1 {
			t.Errorf("%s built %d times, want once", k, n)
		}
	}
	done, _ := Done(dir)
	if len(done) != 12 {
		t.Errorf("%d runs in the folder, want 12", len(done))
	}
	ents, _ := os.ReadDir(filepath.Join(dir, PartialDir))
	if len(ents) != 0 {
		t.Errorf("%d runs left in .partial", len(ents))
	}
	// Resuming a finished evaluation runs nothing.
	f2 := newFake()
	out, err = Evaluate(context.Background(), f2, dir, p, WithJobs(3))
	if err != nil || out.Kept != 12 || out.Ran != 0 || f2.runs != 0 || len(f2.builds) != 0 {
		t.Errorf("resume of a finished evaluation: %+v, %v; backend ran %d, built %v", out, err, f2.runs, f2.builds)
	}
	if f2.cleanedUpID != p.ID {
		t.Errorf("resume cleaned up %q, want the evaluation %q", f2.cleanedUpID, p.ID)
	}
}

// TestEvaluateInterrupted cancels an evaluation while runs are going: the
// runs that finished stay, those that did not leave nothing, and the
// resume runs exactly the rest.
func TestEvaluateInterrupted(t *testing.T) {
	dir := t.TempDir()
	p := testPlan(t)
	WritePlan(dir, p)
	f := newFake()
	f.block = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	var outErr error
	doneCh := make(chan struct{})
	go func() {
		_, outErr = Evaluate(ctx, f, dir, p, WithJobs(2))
		close(doneCh)
	}()
	// Let two runs through, then cancel while the next two wait.
	f.block <- struct{}{}
	f.block <- struct{}{}
	for atomic.LoadInt32(&f.runs) < 2 {
		time.Sleep(time.Millisecond)
	}
	for atomic.LoadInt32(&f.running) < 2 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-doneCh
	if !errors.Is(outErr, context.Canceled) {
		t.Errorf("Evaluate() = %v, want context.Canceled", outErr)
	}
	done, _ := Done(dir)
	if len(done) != 2 {
		t.Fatalf("%d runs kept after the interruption, want 2", len(done))
	}
	f2 := newFake()
	out, err := Evaluate(context.Background(), f2, dir, p, WithJobs(4))
	if err != nil || out.Kept != 2 || out.Ran != 10 {
		t.Fatalf("resume: %+v, %v; want 2 kept and 10 run", out, err)
	}
	done, _ = Done(dir)
	ents, _ := os.ReadDir(filepath.Join(dir, RunsDir))
	if len(done) != 12 || len(ents) != 12 {
		t.Errorf("%d jobs done in %d folders, want 12 in 12", len(done), len(ents))
	}
}

// TestEvaluateGivesUp: a run that keeps failing for an infrastructure
// reason is reported and left for --resume; graded failures are results.
func TestEvaluateGivesUp(t *testing.T) {
	dir := t.TempDir()
	p := testPlan(t)
	WritePlan(dir, p)
	f := newFake()
	f.infra["t1/good/2"] = 100
	out, err := Evaluate(context.Background(), f, dir, p, WithJobs(2), WithRetries(1), func(o *options) error { o.backoff = time.Millisecond; return nil })
	if err == nil || len(out.Failed) != 1 || out.Ran != 11 || f.infra["t1/good/2"] != 98 {
		t.Fatalf("Evaluate() = %+v, %v; tries left %d: want one job failed after 2 tries, 11 run", out, err, f.infra["t1/good/2"])
	}
	f.infra["t1/good/2"] = 0
	out, err = Evaluate(context.Background(), f, dir, p, WithJobs(2))
	if err != nil || out.Ran != 1 || out.Kept != 11 {
		t.Errorf("resume = %+v, %v; want the failed job alone run", out, err)
	}
}

func TestPrinterStatus(t *testing.T) {
	now := time.Unix(1000, 0)
	p := &Printer{w: new(nopWriter), now: func() time.Time { return now }}
	p.Begin(12, 2, 3)
	p.Start(Job{})
	if got := p.StatusLine(); got != "running 1, done 2, left 10" {
		t.Errorf("StatusLine() = %q", got)
	}
	p.running, p.done, p.ranNow = 3, 6, 4
	now = now.Add(40 * time.Second)
	if got := p.StatusLine(); got != "running 3, done 6, left 6, about 1m0s left" {
		t.Errorf("StatusLine() = %q", got)
	}
}

type nopWriter struct{}

func (*nopWriter) Write(b []byte) (int, error) { return len(b), nil }

func TestEvaluateBuildOnly(t *testing.T) {
	dir := t.TempDir()
	p := testPlan(t)
	WritePlan(dir, p)
	f := newFake()
	out, err := Evaluate(context.Background(), f, dir, p, WithJobs(3), WithBuildOnly())
	if err != nil || f.runs != 0 || len(f.builds) != 9 || len(out.Builds) != 9 {
		t.Errorf("build only: %+v, %v; ran %d, built %v: want every image once and no run", out, err, f.runs, f.builds)
	}
}

// TestEvaluateOrder: runs start in the plan's order, attempt 1 of every
// task and agent first.
func TestEvaluateOrder(t *testing.T) {
	dir := t.TempDir()
	p := testPlan(t)
	WritePlan(dir, p)
	f := newFake()
	if _, err := Evaluate(context.Background(), f, dir, p, WithJobs(1)); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, j := range p.Runs {
		want = append(want, j.Key())
	}
	if fmt.Sprint(f.order) != fmt.Sprint(want) {
		t.Errorf("runs started in the order %v, want %v", f.order, want)
	}
	if want[0] != "t1/good/1" || want[6] != "t1/good/2" {
		t.Errorf("plan order %v: want the attempts outermost", want)
	}
}

// TestResultsPathAbsolute: summary.json's results is the run folder's
// absolute path in an evaluation too, however the folder was named.
func TestResultsPathAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.MkdirAll("eval/run1", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("eval/run1/"+results.SummaryFile, []byte(`{"run_id":"run1","results":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rewriteResultsPath("eval/run1", "eval/run1"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("eval/run1/" + results.SummaryFile)
	if err != nil {
		t.Fatal(err)
	}
	var s results.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "eval/run1"); s.Results != want {
		t.Errorf("results = %q, want %q", s.Results, want)
	}
}

// TestEvaluateImagesNeeded: a run keeps its image in containerd only for a
// later run of the same task and agent; the last one, or any once the
// evaluation is interrupted, removes it.
func TestEvaluateImagesNeeded(t *testing.T) {
	f := newFake()
	f.needed = map[string]bool{}
	p, err := NewPlan([]string{"a", "b"}, []string{"t1"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Evaluate(context.Background(), f, t.TempDir(), p, WithJobs(1)); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"t1/a/1": true, "t1/b/1": true, "t1/a/2": true, "t1/b/2": true, "t1/a/3": false, "t1/b/3": false}
	if diff := cmp.Diff(want, f.needed); diff != "" {
		t.Errorf("image needed by a later run, by job (-want +got):\n%s", diff)
	}

	// Interrupted: no later run will start, so none needs the image.
	f = newFake()
	f.needed = map[string]bool{}
	f.block = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for atomic.LoadInt32(&f.running) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	Evaluate(ctx, f, t.TempDir(), p, WithJobs(1))
	if got := f.needed["t1/a/1"]; got {
		t.Errorf("the run interrupted by Ctrl-C kept its image for a later run that will not start")
	}

	// Both runs of a pair in flight at once: neither waits for the other,
	// which holds the image itself while it runs, so whichever ends last
	// removes it (each keeping it for the other left it in containerd).
	f = newFake()
	f.needed = map[string]bool{}
	f.block = make(chan struct{})
	p, err = NewPlan([]string{"a"}, []string{"t1"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for atomic.LoadInt32(&f.running) < 2 {
			time.Sleep(time.Millisecond)
		}
		close(f.block)
	}()
	if _, err := Evaluate(context.Background(), f, t.TempDir(), p, WithJobs(2)); err != nil {
		t.Fatal(err)
	}
	want = map[string]bool{"t1/a/1": false, "t1/a/2": false}
	if diff := cmp.Diff(want, f.needed); diff != "" {
		t.Errorf("two runs of a pair at once: image needed by a later run, by job (-want +got):\n%s", diff)
	}
}

// TestModelDownIsInfrastructure: a run whose model upstream answered
// none of its requests is no result: it is tried again, and when the
// upstream stays down, left for --resume (it was graded FAILED, and an
// outage read as 0%).
func TestModelDownIsInfrastructure(t *testing.T) {
	dir := t.TempDir()
	p := testPlan(t)
	WritePlan(dir, p)
	f := newFake()
	f.modelDown = map[string]int{"t1/good/1": 1, "t2/good/1": 100}
	out, err := Evaluate(context.Background(), f, dir, p, WithJobs(2), WithRetries(1), func(o *options) error { o.backoff = time.Millisecond; return nil })
	if err == nil || len(out.Failed) != 1 || out.Failed["t2/good/1"] == nil || !strings.Contains(out.Failed["t2/good/1"].Error(), "the model upstream answered none of the run's 1 request") {
		t.Fatalf("Evaluate() = %+v, %v; want t2/good/1 failed for an infrastructure reason", out, err)
	}
	done, _ := Done(dir)
	if _, ok := done["t2/good/1"]; ok || len(done) != 11 {
		t.Errorf("the folder holds %d runs (t2/good/1 among them: %v), want the 11 others", len(done), ok)
	}
	if r := done["t1/good/1"]; r == nil || !r.Passed() {
		t.Errorf("t1/good/1, whose upstream came back, = %v, want it run again and passed", r)
	}
}

// TestFixedFailureNotRetried: a build that fails because an image is
// missing (or a failure marked Permanent) is tried once, not retried as
// an infrastructure failure; the job is still left for --resume.
func TestFixedFailureNotRetried(t *testing.T) {
	for _, task := range []string{"t1", "permanent:t1"} {
		dir := t.TempDir()
		p, _ := NewPlan([]string{"good"}, []string{"t1"}, 1)
		WritePlan(dir, p)
		f := newFake()
		f.fixed = map[string]int{task: 1}
		out, err := Evaluate(context.Background(), f, dir, p, WithJobs(1), WithRetries(2), func(o *options) error { o.backoff = time.Millisecond; return nil })
		if err == nil || len(out.Failed) != 1 {
			t.Fatalf("%s: Evaluate() = %+v, %v; want the job failed", task, out, err)
		}
		if n := f.builds["task:t1"]; n != 1 {
			t.Errorf("%s: the task's images were built %d times, want once", task, n)
		}
	}
}
