package commands_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands"
	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/gateway/gatewaytest"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// TestTimeoutDurations: every --timeout takes what run's does, a duration
// as well as seconds (issue 40: `dataset verify --timeout 90m` was
// refused).
func TestTimeoutDurations(t *testing.T) {
	for _, path := range [][]string{{"run"}, {"eval"}, {"dataset", "verify"}, {"grade"}} {
		t.Run(strings.Join(path, " "), func(t *testing.T) {
			cmd, _, err := commands.New().Find(path)
			if err != nil {
				t.Fatal(err)
			}
			f := cmd.Flags().Lookup("timeout")
			if f == nil {
				t.Fatalf("%s has no --timeout", strings.Join(path, " "))
			}
			if err := f.Value.Set("90m"); err != nil {
				t.Fatalf("%s --timeout 90m: %v", strings.Join(path, " "), err)
			}
			if got := f.Value.String(); got != "1h30m0s" {
				t.Errorf("%s --timeout 90m = %s, want 1h30m0s", strings.Join(path, " "), got)
			}
		})
	}
}

// TestMirrorDryRunMissing: a dry run with a missing source image fails as
// the copy would, after printing its plan (it exited 0).
func TestMirrorDryRunMissing(t *testing.T) {
	c := newCLI(t)
	p := testPrefix(t)
	pushImage(t, p+"/src/a:v1")
	for _, dry := range []bool{true, false} {
		args := []string{"mirror", "--to", p + "/dst", "--only-args", p + "/src/a:v1", p + "/src/gone:v1"}
		if dry {
			args = append(args, "--dry-run")
		}
		out, _, err := c.run(t, args...)
		if err == nil || !strings.Contains(err.Error(), "1 image is missing from the source registry: "+p+"/src/gone:v1") {
			t.Errorf("mirror (dry run %v) of a missing image = %v, want it named in the error", dry, err)
		}
		if dry && !strings.Contains(out, "missing from the source registry: "+p+"/src/gone:v1") {
			t.Errorf("mirror --dry-run printed no plan line for the missing image:\n%s", out)
		}
	}
}

// TestLocalMissing: a --local folder that does not exist is said to be
// missing, by run and by eval, before anything else.
func TestLocalMissing(t *testing.T) {
	c := newCLI(t)
	copyTree(t, "agents/dummy", filepath.Join(c.home, "agents", "dummy"))
	gone := filepath.Join(c.root, "no-such-dataset")
	for _, args := range [][]string{
		{"run", "--task", "kvconf-12-afb9ee1", "--agent", "dummy", "--local", gone},
		{"eval", "--agents", "dummy", "--local", gone},
		{"eval", "--agents", "dummy", "--tasks", "kvconf-12-afb9ee1", "--local", gone},
	} {
		_, _, err := c.run(t, args...)
		if want := "--local " + gone + ": no such folder"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s = %v, want %q", strings.Join(args, " "), err, want)
		}
	}
}

// TestTagSaysWhere: a tag added in the local store says so (it printed
// what a registry's tag prints), and a tag in another registry is
// refused, for a store image as for a registry's.
func TestTagSaysWhere(t *testing.T) {
	c := newCLI(t)
	p := testPrefix(t)
	c.storeImage(t, p+"/local:v1", caseImage(t))
	_, stderr := c.mustRun(t, "tag", p+"/local:v1", "stable")
	if !strings.Contains(stderr, "tagged in the local store only") || !strings.Contains(stderr, "ssebench push "+p+"/local:stable") {
		t.Errorf("tag in the store printed on stderr %q, want it to say the store only and how to push", stderr)
	}
	pushImage(t, p+"/remote:v1")
	for _, src := range []string{p + "/local:v1", p + "/remote:v1"} {
		_, _, err := c.run(t, "tag", src, "other.example:5000/x/y:v1")
		oneLine(t, err)
		if want := "a tag stays in its registry; copy it there with `ssebench copy " + src + " other.example:5000/x/y:v1`"; !strings.Contains(err.Error(), want) {
			t.Errorf("tag %s into another registry = %v, want %q", src, err, want)
		}
	}
	s, err := store.Open(c.store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Descriptor(name.MustParseReference("other.example:5000/x/y:v1")); err == nil {
		t.Error("the refused tag is in the store")
	}
}

// TestRegistryScheme: a registry prefix written as a URL is refused at
// once, saying what to pass (it was refused after the case build began,
// with go-containerregistry's hint "use name.Insecure").
func TestRegistryScheme(t *testing.T) {
	c := newCLI(t)
	exampleDataset(t, c)
	copyTree(t, "agents/dummy", filepath.Join(c.home, "agents", "dummy"))
	for _, args := range [][]string{
		{"run", "--task", kvconf, "--agent", "dummy", "--registry", "http://127.0.0.1:5000/p"},
		{"tasks", "check", kvconf, "--registry", "http://127.0.0.1:5000/p"},
		{"names", "--task", kvconf, "--registry", "http://127.0.0.1:5000/p"},
	} {
		_, _, err := c.run(t, args...)
		oneLine(t, err)
		if want := "--registry http://127.0.0.1:5000/p: a registry prefix has no scheme: pass 127.0.0.1:5000/p"; !strings.Contains(err.Error(), want) {
			t.Errorf("%s = %v, want %q", strings.Join(args, " "), err, want)
		}
		if strings.Contains(err.Error(), "name.Insecure") {
			t.Errorf("%s = %v: a Go API hint", strings.Join(args, " "), err)
		}
	}
	t.Setenv("SSEBENCH_REGISTRY", "https://registry.example/team")
	_, _, err := c.run(t, "names", "--task", kvconf)
	if want := "SSEBENCH_REGISTRY https://registry.example/team: a registry prefix has no scheme: pass registry.example/team (HTTPS is the default)"; err == nil || err.Error() != want {
		t.Errorf("names with SSEBENCH_REGISTRY=https://... = %v, want %q", err, want)
	}
}

// TestRefusedLoopbackCLI: what the user reads when a loopback registry is
// not running: one failure, over the HTTP that was sent, at once.
func TestRefusedLoopbackCLI(t *testing.T) {
	newCLI(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var stdout, stderr strings.Builder
	start := time.Now()
	code := commands.Main(t.Context(), []string{"inspect", "--pull", "always", addr + "/x/y:v1"}, &stdout, &stderr)
	if code != 1 || time.Since(start) > 3*time.Second {
		t.Errorf("inspect of a refusing loopback registry exited %d after %s, want 1 at once", code, time.Since(start))
	}
	if msg := stderr.String(); strings.Contains(msg, "https://") || strings.Count(msg, "connection refused") != 1 {
		t.Errorf("inspect of a refusing loopback registry printed %q, want one refusal over http://", msg)
	}
}

// TestApplyNoFuzz runs agents/prediction's apply.sh on a tree: a hunk
// whose context is not in the file is refused whole (it applied with fuzz
// and left *.orig beside the file, graded and in final.patch), a hunk at
// another offset applies without a backup file.
func TestApplyNoFuzz(t *testing.T) {
	if _, err := exec.LookPath("patch"); err != nil {
		t.Skip("no patch program")
	}
	script, err := os.ReadFile(filepath.Join(repoRoot, "agents", "prediction", "apply.sh"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := 1; i <= 20; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	orig := strings.Join(lines, "\n") + "\n"
	for _, c := range []struct {
		name, patch string
		exit        int
		want        string
	}{
		// The first context line differs from the file's: patch's
		// default fuzz of 2 applied it anyway.
		{"fuzz", "--- a/f.txt\n+++ b/f.txt\n@@ -9,7 +9,7 @@\n line 9 was different\n line 10\n line 11\n-line 12\n+line twelve\n line 13\n line 14\n line 15\n", 4, orig},
		// The right context, five lines lower than the hunk says.
		{"offset", "--- a/f.txt\n+++ b/f.txt\n@@ -4,7 +4,7 @@\n line 9\n line 10\n line 11\n-line 12\n+line twelve\n line 13\n line 14\n line 15\n", 0, strings.Replace(orig, "line 12\n", "line twelve\n", 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			patchFile := filepath.Join(dir, "patch.diff")
			tree := filepath.Join(dir, "tree")
			writeFiles(t, dir, map[string]string{
				"patch.diff": c.patch,
				"tree/f.txt": orig,
				// The script reads the patch where the run mounts it.
				"apply.sh": strings.ReplaceAll(string(script), "/prediction/patch.diff", patchFile),
			})
			cmd := exec.Command("sh", filepath.Join(dir, "apply.sh"))
			cmd.Dir = tree
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.exit {
				t.Errorf("apply.sh exited %d, want %d:\n%s", code, c.exit, out)
			}
			got, _ := os.ReadFile(filepath.Join(tree, "f.txt"))
			if string(got) != c.want {
				t.Errorf("f.txt after apply.sh:\n%s\nwant:\n%s", got, c.want)
			}
			ents, _ := os.ReadDir(tree)
			if len(ents) != 1 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("the tree holds %v after apply.sh, want f.txt alone (no .orig, no .rej)", names)
			}
		})
	}
}

// TestOpenCodeScript: the opencode example script (docs/models.md) parses,
// its bash call applies exactly the example task's reference patch and
// prints what its second reply waits for, and the model file it is used
// with prices the model.
func TestOpenCodeScript(t *testing.T) {
	replies, err := gatewaytest.LoadScript(filepath.Join(repoRoot, "examples", "models", "opencode-kvconf.script.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(replies) != 2 || len(replies[0].ToolCalls) != 2 || replies[0].ToolCalls[1].Name != "bash" {
		t.Fatalf("the script has %d replies, want 2, the first calling ssebench_task_info and bash: %+v", len(replies), replies)
	}
	var args struct{ Command string }
	if err := json.Unmarshal([]byte(replies[0].ToolCalls[1].Arguments), &args); err != nil {
		t.Fatal(err)
	}
	ref, err := os.ReadFile(filepath.Join(repoRoot, "datasets", "examples", kvconf, "sse", "diffs", "patch.diff"))
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(args.Command, "\n")
	if patch, _, ok := strings.Cut(rest, "PATCH\n"); !ok || patch != string(ref) {
		t.Errorf("the bash call's patch is not the task's reference patch:\n%s", rest)
	}
	if !strings.Contains(first, "echo "+replies[1].Match) {
		t.Errorf("the bash call (%q) does not print %q, which reply 2 waits for", first, replies[1].Match)
	}
	mf, err := gateway.LoadModelFile(filepath.Join(repoRoot, "examples", "models", "scripted.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := mf.Prices[mf.Name]; !ok || p.Input <= 0 || p.Output <= 0 {
		t.Errorf("examples/models/scripted.yaml prices %q at %+v, want a price", mf.Name, mf.Prices)
	}
}

// TestEvalPartialReport: `runs report` of an evaluation folder with runs
// of its plan missing says the report is partial and how to finish it.
func TestEvalPartialReport(t *testing.T) {
	c := newCLI(t)
	dir := filepath.Join(c.root, "runs", "eval-x")
	plan, err := evaluate.NewPlan([]string{"one", "two"}, []string{"task-a", "task-b", "task-c"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := evaluate.WritePlan(dir, plan); err != nil {
		t.Fatal(err)
	}
	for i, j := range plan.Runs[:2] {
		s := results.Summary{RunID: fmt.Sprint("run-", i), Task: j.Task, Agent: j.Agent, Attempt: j.Attempt, Status: "ok", Timings: map[string]float64{"total": 1}}
		b, _ := json.Marshal(s)
		writeFiles(t, filepath.Join(dir, "runs", s.RunID), map[string]string{results.SummaryFile: string(b)})
	}
	out, _ := c.mustRun(t, "runs", "report", dir)
	if want := "Partial: 4 of 6 planned runs are missing; `ssebench eval --resume " + dir + "` runs them."; !strings.Contains(out, want) {
		t.Errorf("runs report of a partial evaluation does not say %q:\n%s", want, out)
	}
}

// evalFolder is the one evaluation folder under runs.
func evalFolder(t *testing.T, runs string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(runs, "eval-*"))
	if len(dirs) != 1 {
		t.Fatalf("evaluation folders under %s: %v, want 1", runs, dirs)
	}
	return dirs[0]
}

// TestResumeKeepsJobs: `eval --resume` runs as many at once as the
// evaluation was started with (it forgot --jobs).
func TestResumeKeepsJobs(t *testing.T) {
	c := newCLI(t)
	exampleDataset(t, c)
	copyTree(t, "agents/dummy", filepath.Join(c.home, "agents", "dummy"))
	runs := filepath.Join(c.root, "runs")
	// A cluster without a kubeconfig: each eval stops once it has said
	// how many runs go at once.
	noCtrd := []string{"--backend", "kubernetes", "--kubeconfig", filepath.Join(c.root, "no-kubeconfig")}
	_, stderr, err := c.run(t, append([]string{"eval", "--agents", "dummy", "--tasks", kvconf, "--prebuilt", "--jobs", "3", "--runs-dir", runs}, noCtrd...)...)
	if err == nil || !strings.Contains(stderr, "3 at once (--jobs)") {
		t.Fatalf("eval --jobs 3 = %v, want a failure after it says 3 at once:\n%s", err, stderr)
	}
	dir := evalFolder(t, runs)
	_, stderr, _ = c.run(t, append([]string{"eval", "--resume", dir}, noCtrd...)...)
	if !strings.Contains(stderr, "3 at once (--jobs of the evaluation's start)") {
		t.Errorf("eval --resume does not keep --jobs 3:\n%s", stderr)
	}
	_, stderr, _ = c.run(t, append([]string{"eval", "--resume", dir, "--jobs", "1"}, noCtrd...)...)
	if !strings.Contains(stderr, "1 at once (--jobs)") {
		t.Errorf("eval --resume --jobs 1 does not run one at once:\n%s", stderr)
	}
	// What a verdict depends on is the plan's, not the resume's.
	for _, flag := range [][]string{{"--egress", "open"}, {"--memory", "1Gi"}} {
		_, _, err = c.run(t, append(append([]string{"eval", "--resume", dir}, flag...), noCtrd...)...)
		if want := flag[0] + " cannot change it"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("eval --resume %s = %v, want %q", strings.Join(flag, " "), err, want)
		}
	}
}

// TestEvalInterruptedSaysResume: an interrupted evaluation says how to
// finish it.
func TestEvalInterruptedSaysResume(t *testing.T) {
	ctrd := testenv.RequireContainerd(t)
	c := newCLI(t)
	exampleDataset(t, c)
	copyTree(t, "agents/dummy", filepath.Join(c.home, "agents", "dummy"))
	runs := filepath.Join(c.root, "runs")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var stdout, stderr strings.Builder
	code := commands.Main(ctx, []string{"eval", "--agents", "dummy", "--tasks", kvconf, "--prebuilt", "--runs-dir", runs,
		"--containerd-addr", ctrd, "--home", c.home}, &stdout, &stderr)
	if code != commands.ExitInterrupted {
		t.Errorf("an interrupted eval exited %d, want %d:\n%s", code, commands.ExitInterrupted, stderr.String())
	}
	if want := "`ssebench eval --resume " + evalFolder(t, runs) + "` runs the rest"; !strings.Contains(stderr.String(), want) {
		t.Errorf("an interrupted eval printed\n%s\nwant %q", stderr.String(), want)
	}
}

// TestEvalNoDaemon: an evaluation whose containerd is not there says so
// before anything, and leaves no folder (it removed "what the
// interrupted evaluation left" and left an empty one).
func TestEvalNoDaemon(t *testing.T) {
	c := newCLI(t)
	exampleDataset(t, c)
	copyTree(t, "agents/dummy", filepath.Join(c.home, "agents", "dummy"))
	runs := filepath.Join(c.root, "runs")
	gone := filepath.Join(c.root, "no-containerd.sock")
	start := time.Now()
	_, _, err := c.run(t, "eval", "--agents", "dummy", "--tasks", kvconf, "--prebuilt", "--runs-dir", runs, "--containerd-addr", gone)
	oneLine(t, err)
	if want := "containerd is not running: there is no socket " + gone; !strings.HasPrefix(err.Error(), want) || time.Since(start) > 5*time.Second {
		t.Errorf("eval without containerd = %v after %s, want %q at once", err, time.Since(start), want)
	}
	if ents, _ := os.ReadDir(runs); len(ents) > 0 {
		t.Errorf("eval without containerd left %d entries in %s", len(ents), runs)
	}
}

// TestTasksCheckNeeds: tasks check under an empty prefix lists every
// image a run needs, the runtime included, and prints the commands that
// make the ones a run does not make (it left out the runtime, and the
// hint of the missing base left out --registry and --os-image); a base
// the store holds under another prefix is copied.
func TestTasksCheckNeeds(t *testing.T) {
	c := newCLI(t)
	exampleDataset(t, c)
	copyTree(t, "agents/dummy", filepath.Join(c.home, "agents", "dummy"))
	p := testPrefix(t)
	out, _, err := c.run(t, "tasks", "check", kvconf, "--agents", "dummy", "--registry", p)
	var exit *commands.ExitError
	if !errors.As(err, &exit) || exit.Code != commands.ExitMustBuild {
		t.Fatalf("tasks check = %v, want exit %d\n%s", err, commands.ExitMustBuild, out)
	}
	for _, want := range []string{
		`(?m)^-\s+runtime\s+-\s+missing\s+-\s+make\s+` + regexp.QuoteMeta(p) + `/runtime:`,
		`(?m)^` + kvconf + `\s+base\s+-\s+missing\s+-\s+make\s+` + regexp.QuoteMeta(p) + `/base-generic-go:`,
		`(?m)^` + kvconf + `\s+case\s+-\s+missing\s+-\s+build\s+`,
		`(?m)^  ssebench base-images go --registry ` + regexp.QuoteMeta(p) + ` --os-image OS_IMAGE$`,
		`(?m)^  ssebench runtime build --registry ` + regexp.QuoteMeta(p) + `$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("tasks check printed no line matching %s:\n%s", want, out)
		}
	}
	// The base under another prefix in the store: a copy puts it there.
	names, _ := c.mustRun(t, "names", "--task", kvconf, "--registry", "elsewhere.example/team", "--json")
	var n struct{ Base string }
	if err := json.Unmarshal([]byte(names), &n); err != nil || n.Base == "" {
		t.Fatalf("names --json = %s (%v), want a base", names, err)
	}
	c.storeImage(t, n.Base, caseImage(t))
	out, _, _ = c.run(t, "tasks", "check", kvconf, "--registry", p)
	want := "  ssebench copy " + n.Base + " " + p + "/" + strings.SplitN(n.Base, "/", 3)[2]
	if !strings.Contains(out, want+"\n") {
		t.Errorf("tasks check with the base under another prefix printed\n%s\nwant %q", out, want)
	}
}

// TestRunNeedsAtOnce: run (and eval) under an empty prefix say every
// image they need and do not make, in one line, before anything is built
// (they failed at the base, then at the runtime, each after a build).
func TestRunNeedsAtOnce(t *testing.T) {
	ctrd := testenv.RequireContainerd(t)
	c := newCLI(t)
	exampleDataset(t, c)
	copyTree(t, "agents/dummy", filepath.Join(c.home, "agents", "dummy"))
	p := testPrefix(t)
	runs := filepath.Join(c.root, "runs")
	for _, args := range [][]string{
		{"run", "--task", kvconf, "--agent", "dummy"},
		{"eval", "--agents", "dummy", "--tasks", kvconf},
	} {
		start := time.Now()
		_, stderr, err := c.run(t, append(args, "--registry", p, "--runs-dir", runs, "--containerd-addr", ctrd,
			"--buildkit-addr", "unix://"+filepath.Join(c.root, "no-buildkit.sock"))...)
		oneLine(t, err)
		for _, want := range []string{p + "/base-generic-go:", p + "/runtime:", "`ssebench base-images go --registry " + p + " --os-image OS_IMAGE` and `ssebench runtime build --registry " + p + "`"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s = %v, want %q in it", args[0], err, want)
			}
		}
		if strings.Contains(stderr, "case image") || time.Since(start) > 5*time.Second {
			t.Errorf("%s began building before it refused (%s):\n%s", args[0], time.Since(start), stderr)
		}
	}
	if ents, _ := os.ReadDir(runs); len(ents) > 0 {
		t.Errorf("the refused runs left %d entries in %s", len(ents), runs)
	}
}

// TestUpstreamDown: a model upstream that does not answer (a wrong
// base_url) stops run and eval before any image, naming the URL and the
// file it came from (every run was graded FAILED instead); any HTTP
// answer, 404 included, is an upstream that is there.
func TestUpstreamDown(t *testing.T) {
	ctrd := testenv.RequireContainerd(t)
	c := newCLI(t)
	exampleDataset(t, c)
	copyTree(t, "agents/dummy", filepath.Join(c.home, "agents", "dummy"))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String() + "/v1"
	l.Close()
	mf := filepath.Join(c.root, "down.yaml")
	writeFiles(t, c.root, map[string]string{"down.yaml": "name: m\nbase_url: " + down + "\napi_key_env: none\n"})
	runs := filepath.Join(c.root, "runs")
	noBuild := []string{"--containerd-addr", ctrd, "--buildkit-addr", "unix://" + filepath.Join(c.root, "no-buildkit.sock"), "--runs-dir", runs}
	_, _, err = c.run(t, append([]string{"run", "--task", kvconf, "--agent", "dummy", "--model-file", mf}, noBuild...)...)
	oneLine(t, err)
	if want := "the model upstream " + down + " does not answer"; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "check base_url in "+mf) {
		t.Errorf("run with an upstream that does not answer = %v, want %q and the file", err, want)
	}
	models := filepath.Join(c.home, "models")
	writeFiles(t, models, map[string]string{"m.yaml": "name: m\nbase_url: " + down + "\napi_key_env: none\n"})
	_, _, err = c.run(t, append([]string{"eval", "--agents", "dummy", "--tasks", kvconf, "--model", "m"}, noBuild...)...)
	if want := "the model upstream " + down + " does not answer"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("eval with an upstream that does not answer = %v, want %q", err, want)
	}
	if ents, _ := os.ReadDir(runs); len(ents) > 0 {
		t.Errorf("the refused eval left %d entries in %s", len(ents), runs)
	}
	// An upstream that answers 404 to GET /models is there: the run goes
	// on (to the images, which this world lacks).
	up := httptest.NewServer(http.NotFoundHandler())
	defer up.Close()
	writeFiles(t, models, map[string]string{"m.yaml": "name: m\nbase_url: " + up.URL + "/v1\napi_key_env: none\n"})
	_, _, err = c.run(t, append([]string{"run", "--task", kvconf, "--agent", "dummy", "--model", "m"}, noBuild...)...)
	if err == nil || strings.Contains(err.Error(), "does not answer") {
		t.Errorf("run with an upstream that answers 404 = %v, want it past the upstream's check", err)
	}
}
