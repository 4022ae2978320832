package commands_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// gradeTask is the example task the grade tests grade patches of.
const gradeTask = "kvconf-12-afb9ee1"

// gradeWorld is a home with the example task and agents/prediction, and
// the base and runtime images the runs need, built under a registry
// prefix of the test's own.
func gradeWorld(t *testing.T) (*cli, []string) {
	t.Helper()
	c, daemons := runWorld(t)
	copyTree(t, "agents/prediction", filepath.Join(c.home, "agents", "prediction"))
	return c, daemons
}

// runWorld is a home with the example task, and the base and runtime
// images a run of it needs, built under a registry prefix of the test's
// own; it returns the flags that name the daemons.
func runWorld(t *testing.T) (*cli, []string) {
	t.Helper()
	s := requireServices(t)
	c := newCLI(t)
	return c, buildWorld(t, c, s)
}

// services are the addresses of the shared services, read before newCLI
// clears the environment.
type services struct{ bk, ctrd, reg, osImage string }

func requireServices(t *testing.T) services {
	t.Helper()
	return services{bk: testenv.RequireBuildKit(t), ctrd: testenv.RequireContainerd(t), reg: testenv.RequireRegistry(t), osImage: testenv.OSImage(t)}
}

// buildWorld is runWorld in c.
func buildWorld(t *testing.T, c *cli, s services) []string {
	t.Helper()
	bk, ctrd, reg, osImage := s.bk, s.ctrd, s.reg, s.osImage
	ds := filepath.Join(c.home, "datasets", "examples")
	writeFiles(t, ds, map[string]string{"dataset.yaml": "version: examples-v1\n"})
	copyTree(t, "datasets/examples/"+gradeTask, filepath.Join(ds, gradeTask))
	copyTree(t, "images", filepath.Join(c.home, "images"))
	writeFiles(t, c.home, map[string]string{"VERSION": "0.1.0-dev\n"})
	prefix := reg + "/ssebench-grade28-" + randomHex(4)
	t.Setenv("SSEBENCH_REGISTRY", prefix)
	testenv.RemoveImagesAfter(t, ctrd, prefix+"/")
	daemons := []string{"--buildkit-addr", bk, "--containerd-addr", ctrd}
	c.mustRun(t, append([]string{"base-images", "go", "--os-image", osImage}, daemons...)...)
	c.mustRun(t, append([]string{"runtime", "build", "--platform", "linux/" + goruntime.GOARCH, "--push", "--home", repoRoot}, daemons...)...)
	return daemons
}

func jsonLine(t *testing.T, v map[string]any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// TestGradePredictions grades a SWE-bench predictions file through the
// real containerd path: the task's reference patch passes, an empty patch
// fails, garbage is not applied and fails, an unknown id is refused with
// the closest id; the folder reads back with `runs ls`, `runs show` and
// `runs report`, the model's name where the agent's goes.
func TestGradePredictions(t *testing.T) {
	c, daemons := gradeWorld(t)
	ref, err := os.ReadFile(filepath.Join(repoRoot, "datasets", "examples", gradeTask, "sse", "diffs", "patch.diff"))
	if err != nil {
		t.Fatal(err)
	}
	preds := filepath.Join(c.root, "preds.jsonl")
	writeFiles(t, c.root, map[string]string{"preds.jsonl": jsonLine(t, map[string]any{"instance_id": gradeTask, "model_name_or_path": "org/good-model", "model_patch": string(ref)}) +
		jsonLine(t, map[string]any{"instance_id": gradeTask, "model_name_or_path": "empty-model", "model_patch": ""}) +
		jsonLine(t, map[string]any{"instance_id": gradeTask, "model_name_or_path": "garbage-model", "model_patch": "this is no diff at all\n@@ nor this\n"}) +
		jsonLine(t, map[string]any{"instance_id": "kvconf-12-afb9ee", "model_name_or_path": "org/good-model", "model_patch": string(ref)}) +
		jsonLine(t, map[string]any{"instance_id": gradeTask, "model_name_or_path": "org/good-model", "model_patch": "dup"}) +
		// Hostile diffs: out of the source tree, and a symlink to the
		// task's files next to the fix. Applied as model, they reach
		// nothing the grade reads.
		jsonLine(t, map[string]any{"instance_id": gradeTask, "model_name_or_path": "../../traversal", "model_patch": "--- a/../../../../ssebench/scripts/run\n+++ b/../../../../ssebench/scripts/run\n@@ -1 +1 @@\n-#!/bin/sh\n+exit 0\n"}) +
		jsonLine(t, map[string]any{"instance_id": gradeTask, "model_name_or_path": "symlink-model", "model_patch": "diff --git a/sse-link b/sse-link\nnew file mode 120000\n--- /dev/null\n+++ b/sse-link\n@@ -0,0 +1 @@\n+/ssebench\n\\ No newline at end of file\n"}),
	})
	runs := filepath.Join(c.root, "runs")
	out, stderr, err := c.run(t, append([]string{"grade", "--predictions", preds, "--runs-dir", runs, "--jobs", "2", "--json", "--keep-images=none"}, daemons...)...)
	if err != nil {
		t.Fatalf("grade = %v\n%s%s", err, out, stderr)
	}
	t.Logf("stderr:\n%s", stderr)
	var got []struct {
		InstanceID string `json:"instance_id"`
		Model      string `json:"model_name_or_path"`
		Status     string `json:"status"`
		Reason     string `json:"reason"`
		RunID      string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 7 {
		t.Fatalf("grade --json printed %d outcomes (%v), want 7:\n%s", len(got), err, out)
	}
	want := []struct{ status, reason string }{
		{"PASSED", ""},
		{"FAILED", "empty patch"},
		{"NOT APPLIED", "not a diff: not applied"},
		{"refused", `unknown instance_id "kvconf-12-afb9ee": did you mean "kvconf-12-afb9ee1"?`},
		{"refused", "duplicate: line 1"},
		{"NOT APPLIED", "the patch does not apply"},
		{"FAILED", ""},
	}
	for i, w := range want {
		if got[i].Status != w.status || !strings.Contains(got[i].Reason, w.reason) {
			t.Errorf("prediction %d: %s %q, want %s %q", i+1, got[i].Status, got[i].Reason, w.status, w.reason)
		}
	}
	// One line per prediction on stderr.
	for _, w := range []string{`"org/good-model" (line 1): PASSED`, `"empty-model" (line 2): FAILED: empty patch`,
		`"garbage-model" (line 3): NOT APPLIED: not a diff`, `(line 4): refused: unknown instance_id`, `(line 5): refused: duplicate`} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr has no line with %q", w)
		}
	}
	all, err := results.List(runs)
	if err != nil || len(all) != 5 {
		t.Fatalf("runs under %s: %d (%v), want 5", runs, len(all), err)
	}
	for _, r := range all {
		t.Logf("%s: %s in %s (agent %s, grade %s)", r.Agent(), r.Grade(), r.Duration().Round(100*time.Millisecond),
			r.AgentTime().Round(100*time.Millisecond), r.GradeTime().Round(100*time.Millisecond))
		if r.Agent() == "org/good-model" && !r.Passed() {
			t.Errorf("the reference patch's run did not pass: %s", r.Grade())
		}
		if !strings.HasPrefix(r.Dir, runs+string(filepath.Separator)) {
			t.Errorf("a run folder outside %s: %s", runs, r.Dir)
		}
		if r.Agent() == "garbage-model" && (r.Result == nil || !strings.Contains(strings.Join(r.Result.Notes, "\n"), "not applied")) {
			t.Errorf("the garbage run's result.json has no note that it was not applied")
		}
	}
	ls, _ := c.mustRun(t, "runs", "ls", "--runs-dir", runs)
	for _, w := range []string{"org/good-model", "empty-model", "garbage-model"} {
		if !strings.Contains(ls, w) {
			t.Errorf("runs ls has no %s:\n%s", w, ls)
		}
	}
	show, _ := c.mustRun(t, "runs", "show", got[0].RunID, "--runs-dir", runs)
	if !strings.Contains(show, "org/good-model") || !strings.Contains(show, "PASSED") {
		t.Errorf("runs show of the passing prediction:\n%s", show)
	}
	evals, _ := filepath.Glob(filepath.Join(runs, "eval-*"))
	if len(evals) != 1 {
		t.Fatalf("evaluation folders: %v", evals)
	}
	rep, _ := c.mustRun(t, "runs", "report", evals[0])
	for _, w := range []string{"org/good-model", "kvconf-12-afb9ee", "did you mean"} {
		if !strings.Contains(rep, w) {
			t.Errorf("runs report has no %q:\n%s", w, rep)
		}
	}
	if _, err := contract.ReadRunResult(filepath.Join(evals[0], "runs", got[0].RunID)); err != nil {
		t.Errorf("result.json of the passing run: %v", err)
	}

	// With --keep-images none, the images the runs imported into
	// containerd are gone after the last run that needs them; by default
	// they stay, under the budget.
	prefix := os.Getenv("SSEBENCH_REGISTRY") + "/"
	if imgs := importedImages(t, c, daemons, prefix); len(imgs) != 0 {
		t.Errorf("after grade, containerd still holds %v, want none of its images", imgs)
	}
	// Without --runs-dir the folder is ./runs, a relative path the
	// patch is still mounted from.
	writeFiles(t, c.root, map[string]string{"one.jsonl": jsonLine(t, map[string]any{"instance_id": gradeTask, "model_name_or_path": "kept-model", "model_patch": string(ref)})})
	out, _ = c.mustRun(t, append([]string{"grade", "--predictions", filepath.Join(c.root, "one.jsonl"), "--json"}, daemons...)...)
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 || got[0].Status != "PASSED" {
		t.Errorf("grade without --runs-dir printed %s (%v), want the reference patch PASSED", out, err)
	}
	if all, err := results.List(filepath.Join(c.wd, "runs")); err != nil || len(all) != 1 {
		t.Errorf("runs under ./runs after grade without --runs-dir: %d (%v), want 1", len(all), err)
	}
	if imgs := importedImages(t, c, daemons, prefix); len(imgs) == 0 {
		t.Errorf("after grade (--keep-images under its default budget), containerd holds none of its images, want the agent image kept")
	}
}

// importedImages lists the images under prefix that ssebench imported
// into containerd, kept or not, as "prune --dry-run --all" sees them.
func importedImages(t *testing.T, c *cli, daemons []string, prefix string) []string {
	t.Helper()
	out, _ := c.mustRun(t, append([]string{"prune", "--dry-run", "--all", "--json"}, daemons...)...)
	var p struct {
		Items []struct{ Kind, Name string } `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("prune --dry-run --json: %v\n%s", err, out)
	}
	var imgs []string
	for _, it := range p.Items {
		if it.Kind == "image" && strings.HasPrefix(it.Name, prefix) {
			imgs = append(imgs, it.Name)
		}
	}
	return imgs
}
