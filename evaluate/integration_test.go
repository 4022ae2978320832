package evaluate_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/runner"
	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/images/buildkit"
	"github.com/42-b3yond-6ug/ssebench/images/casebuild"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/browsertest"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/results"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
)

const version = "0.1.0-dev"

var (
	agents = []string{"dummy", "patcher"}
	tasks  = []string{"kvconf-12-afb9ee1", "libqs-3-b2a739e", "netstrings-7-bbfbbfe"}
	// passes is what the patcher carries a patch for.
	passes = map[string]bool{"kvconf-12-afb9ee1": true, "libqs-3-b2a739e": true}
)

type world struct {
	repo, home, work, prefix, ctrd, bk string
	env                                *pipeline.Env
	log                                *lockedLog
}

// lockedLog keeps the pipeline's log lines, for counting builds.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
	t  *testing.T
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Write(p)
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (l *lockedLog) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func setup(t *testing.T) *world {
	t.Helper()
	w := &world{bk: testenv.RequireBuildKit(t), ctrd: testenv.RequireContainerd(t)}
	reg := testenv.RequireRegistry(t)
	osImage := testenv.OSImage(t)
	ctx := context.Background()
	repo, _ := filepath.Abs("..")
	w.repo, w.home, w.work = repo, t.TempDir(), t.TempDir()
	b := make([]byte, 4)
	rand.Read(b)
	w.prefix = reg + "/ssebench-eval-" + hex.EncodeToString(b)
	// What the runs leave in containerd (a killed evaluation's images),
	// this test's only.
	testenv.RemoveImagesAfter(t, w.ctrd, w.prefix+"/")
	mkdir(t, filepath.Join(w.home, "datasets"))
	mkdir(t, filepath.Join(w.home, "agents"))
	cp(t, filepath.Join(repo, "datasets", "examples"), filepath.Join(w.home, "datasets", "examples"))
	for _, a := range agents {
		cp(t, filepath.Join(repo, "agents", a), filepath.Join(w.home, "agents", a))
	}
	cp(t, filepath.Join(repo, "VERSION"), filepath.Join(w.home, "VERSION"))
	st, err := store.Open(filepath.Join(w.work, "store"))
	if err != nil {
		t.Fatal(err)
	}
	facts, err := assemble.NewFacts(filepath.Join(w.work, "cache", "facts"))
	if err != nil {
		t.Fatal(err)
	}
	w.log = &lockedLog{t: t}
	w.env = &pipeline.Env{
		Home: w.home, ModuleDir: w.repo, Names: naming.NewNames(w.prefix, version), Store: st, Facts: facts, Log: w.log,
		BuildKit: func(ctx context.Context) (*buildkit.Client, error) {
			return buildkit.New(ctx, buildkit.WithAddress(w.bk), buildkit.WithTempDir(st.TempDir()))
		},
	}
	bk, err := w.env.BuildKit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer bk.Close()
	cb := &casebuild.Builder{BuildKit: bk, Store: st, Names: w.env.Names}
	for _, lang := range []string{"go", "c", "rust"} {
		if _, err := cb.BuildBase(ctx, repo, lang, osImage, "", false); err != nil {
			t.Fatalf("building the %s base image: %v", lang, err)
		}
	}
	idx, err := runtimebin.Build(ctx, runtimebin.WithModuleDir(repo), runtimebin.WithTempDir(st.TempDir()),
		runtimebin.WithPlatforms(v1.Platform{OS: "linux", Architecture: goruntime.GOARCH}))
	if err != nil {
		t.Fatalf("building the runtime: %v", err)
	}
	ref, _ := name.ParseReference(w.env.Names.Runtime(), name.WeakValidation)
	if err := st.WriteIndex(ctx, ref, idx); err != nil {
		t.Fatal(err)
	}
	return w
}

// counting counts the backend's builds.
type counting struct {
	evaluate.Backend
	mu     sync.Mutex
	builds map[string]int
}

func (c *counting) BuildTask(ctx context.Context, task string) (*pipeline.TaskImages, error) {
	c.add("task:" + task)
	return c.Backend.BuildTask(ctx, task)
}

func (c *counting) BuildAgent(ctx context.Context, task, agent string, ti *pipeline.TaskImages) (*pipeline.RunImages, error) {
	c.add("agent:" + task + "/" + agent)
	return c.Backend.BuildAgent(ctx, task, agent, ti)
}

func (c *counting) add(k string) { c.mu.Lock(); c.builds[k]++; c.mu.Unlock() }

// outcome is what a run says, for comparing evaluations.
func outcomes(t *testing.T, dir string) []string {
	t.Helper()
	runs, err := results.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range runs {
		if r.Result == nil {
			t.Errorf("run %s has no result.json", r.Dir)
		}
		out = append(out, fmt.Sprintf("%s %s #%d: %s", r.Task(), r.Agent(), r.Summary.Attempt, r.Grade()))
	}
	sort.Strings(out)
	return out
}

// TestEvaluate evaluates dummy and patcher on the three example tasks,
// twice each, three at once: 12 runs, each image built once, the report
// right; then the same evaluation killed three times and resumed gives the
// same results.
func TestEvaluate(t *testing.T) {
	w := setup(t)
	ctx := context.Background()
	plan, err := evaluate.NewPlan(agents, tasks, 2)
	if err != nil {
		t.Fatal(err)
	}
	plan.Dataset, plan.Timeout, plan.Difficulty = filepath.Join(w.home, "datasets", "examples"), 600, 2
	dir := filepath.Join(w.work, "runs", plan.FolderName())
	if err := evaluate.WritePlan(dir, plan); err != nil {
		t.Fatal(err)
	}
	b := &counting{builds: map[string]int{}, Backend: &evaluate.Containerd{Env: w.env, EvalID: plan.ID, Request: pipeline.RunRequest{
		Dataset: plan.Dataset, Timeout: plan.Timeout, Difficulty: plan.Difficulty, ContainerdAddr: w.ctrd, Output: io.Discard,
	}}}
	var progress bytes.Buffer
	start := time.Now()
	out, err := evaluate.Evaluate(ctx, b, dir, plan, evaluate.WithJobs(3), evaluate.WithProgress(evaluate.NewPrinter(&syncWriter{w: &progress})))
	clean := time.Since(start)
	t.Logf("12 runs in %s:\n%s", clean.Round(time.Second), progress.String())
	if err != nil {
		t.Fatalf("Evaluate() = %v", err)
	}
	if out.Ran != 12 {
		t.Errorf("ran %d runs, want 12", out.Ran)
	}
	// Each image left containerd after the last run that needed it.
	if left := imagesInContainerd(t, w.ctrd, w.prefix+"/"); len(left) > 0 {
		t.Errorf("after the evaluation containerd still has %v, want none of its images", left)
	}
	// Each image once: 3 tasks' case and tool images, 6 agent images.
	if len(b.builds) != 9 {
		t.Errorf("builds = %v, want 3 task and 6 agent builds", b.builds)
	}
	for k, n := range b.builds {
		if n != 1 {
			t.Errorf("%s built %d times, want once", k, n)
		}
	}
	for _, task := range tasks {
		if n := strings.Count(w.log.String(), "/tool/"+task+":"); n != 1 {
			t.Errorf("the tool image of %s was assembled %d times, want once", task, n)
		}
	}
	if n := strings.Count(progress.String(), "\n"); n != 12 {
		t.Errorf("%d progress lines, want one per run", n)
	}
	runs, err := results.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep := results.NewReport(plan.FolderName(), runs)
	if len(rep.Agents) != 2 || rep.Agents[0].Agent != "dummy" || rep.Agents[1].Agent != "patcher" {
		t.Fatalf("report agents = %+v", rep.Agents)
	}
	for _, row := range rep.Matrix {
		want := 0
		if passes[row.Task] {
			want = 2
		}
		if d, p := row.Cells[0], row.Cells[1]; d.Passed != 0 || d.Attempts != 2 || p.Passed != want || p.Attempts != 2 {
			t.Errorf("matrix row %s = dummy %+v, patcher %+v; want dummy 0/2, patcher %d/2", row.Task, d, p, want)
		}
	}
	for _, c := range rep.Agents[0].Checks {
		if c.Name == "poc" && (c.Passed != 0 || c.Of != 6) {
			t.Errorf("dummy's poc passed %d/%d, want 0/6", c.Passed, c.Of)
		}
	}

	// The reports of the evaluation, through the CLI.
	bin := buildCLI(t, w)
	junit := filepath.Join(w.work, "junit.xml")
	w.cli(t, bin, "runs", "report", dir, "--format", "junit", "-o", junit)
	if out, err := exec.Command("xmllint", "--noout", "--schema", filepath.Join(w.repo, "results", "testdata", "junit.xsd"), junit).CombinedOutput(); err != nil {
		t.Errorf("the JUnit report does not validate: %v\n%s", err, out)
	}
	html := filepath.Join(w.work, "report.html")
	w.cli(t, bin, "runs", "report", dir, "--format", "html", "-o", html)
	page := browsertest.Open(t, html)
	for _, a := range agents {
		if !strings.Contains(page.DOM, `<td class="agent">`+a+`</td>`) {
			t.Errorf("the HTML report does not show %s", a)
		}
	}
	if m := regexp.MustCompile(`<canvas id="pass-rate"[^>]*data-bars="(\d+)"`).FindStringSubmatch(page.DOM); m == nil || m[1] != "2" {
		t.Errorf("the HTML report's pass-rate chart has bars %v, want 2 (one per agent)", m)
	}
	if !strings.Contains(page.DOM, `data-count="0"`) || len(page.Console) > 0 {
		t.Errorf("the HTML report has errors (console %q)", page.Console)
	}
	browsertest.Screenshot(t, html, "eval-report.png")

	// Killed three times at random moments, resumed each time.
	runsDir := filepath.Join(w.work, "runs-killed")
	var edir string
	for i := 0; i < 3; i++ {
		args := []string{"eval", "--resume", edir, "--jobs", "3"}
		if i == 0 {
			args = []string{"eval", "--agents", strings.Join(agents, ","), "--local", plan.Dataset, "--attempts", "2", "--jobs", "3", "--timeout", "600", "--runs-dir", runsDir}
		}
		// Anywhere in the first minute (or third of a clean
		// evaluation): in the build phase, between runs, inside them.
		limit := min(clean/3, time.Minute)
		delay := 2*time.Second + randDuration(limit)
		cmd := w.command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if edir == "" {
			m, _ := filepath.Glob(filepath.Join(runsDir, "eval-*"))
			if len(m) != 1 {
				t.Fatalf("no evaluation folder after %s: %v\n%s", delay, m, stderr.String())
			}
			edir = m[0]
		}
		done, _ := evaluate.Done(edir)
		t.Logf("killed after %s: %d runs done", delay.Round(100*time.Millisecond), len(done))
	}
	w.cli(t, bin, "eval", "--resume", edir, "--jobs", "3")
	ents, _ := os.ReadDir(filepath.Join(edir, evaluate.RunsDir))
	if len(ents) != 12 {
		t.Errorf("%d run folders after resuming, want 12 (no duplicates)", len(ents))
	}
	if left, _ := os.ReadDir(filepath.Join(edir, evaluate.PartialDir)); len(left) != 0 {
		t.Errorf("%d unfinished runs left", len(left))
	}
	// What the killed evaluations imported went when it was resumed, and
	// what the resumed one imported when it ended.
	if left := imagesInContainerd(t, w.ctrd, w.prefix+"/"); len(left) > 0 {
		t.Errorf("after the killed and resumed evaluation containerd still has %v, want none of its images", left)
	}
	got, want := outcomes(t, edir), outcomes(t, dir)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("killed and resumed:\n%s\nclean:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func randDuration(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	n, _ := rand.Int(rand.Reader, big.NewInt(int64(max)))
	return time.Duration(n.Int64())
}

// buildCLI builds ssebench into the work folder.
func buildCLI(t *testing.T, w *world) string {
	t.Helper()
	bin := filepath.Join(w.work, "ssebench")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/ssebench")
	cmd.Dir = w.repo
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func (w *world) command(bin string, args ...string) *exec.Cmd {
	global := []string{"--home", w.home, "--store", filepath.Join(w.work, "store"), "--registry", w.prefix,
		"--buildkit-addr", w.bk, "--containerd-addr", w.ctrd}
	cmd := exec.Command(bin, append(global, args...)...)
	// --keep-images=none: the test checks that each image leaves
	// containerd after the last run that needs it, killed evaluations'
	// included (by default they stay, under a budget).
	cmd.Env = append(os.Environ(), "SSEBENCH_CACHE="+filepath.Join(w.work, "cache"), "SSEBENCH_KEEP_IMAGES=none")
	return cmd
}

func (w *world) cli(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := w.command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ssebench %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	t.Logf("ssebench %s:\n%s", strings.Join(args, " "), stderr.String())
	return stdout.String()
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func cp(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp %s: %v\n%s", src, err, out)
	}
}

// imagesInContainerd lists the images of ssebench's containerd namespace
// whose name contains part.
func imagesInContainerd(t *testing.T, addr, part string) []string {
	t.Helper()
	c, err := containerd.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	imgs, err := c.ImageService().List(namespaces.WithNamespace(context.Background(), runner.DefaultNamespace))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, img := range imgs {
		if strings.Contains(img.Name, part) {
			out = append(out, img.Name)
		}
	}
	return out
}
