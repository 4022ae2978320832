package commands_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands"
)

type checkJSON struct {
	Task      string   `json:"task"`
	Kind      string   `json:"kind"`
	Ref       string   `json:"ref"`
	Where     string   `json:"where"`
	Platforms []string `json:"platforms"`
	Build     bool     `json:"build"`
}

// TestTasksCheck: the preflight says which images of a task exist (store
// or registry, with their platforms) and which must be built, and exits 2
// when something must be built; eval --check says the same before any run.
func TestTasksCheck(t *testing.T) {
	c := newCLI(t)
	copyTree(t, "datasets/examples", c.home+"/datasets/examples")
	copyTree(t, "agents/dummy", c.home+"/agents/dummy")
	p := testPrefix(t)
	const id = "kvconf-12-afb9ee1"

	out, _, err := c.run(t, "--registry", p, "tasks", "check", id, "--agents", "dummy", "--json")
	var exit *commands.ExitError
	if !errors.As(err, &exit) || exit.Code != commands.ExitMustBuild {
		t.Fatalf("tasks check with nothing built: err %v, want exit %d", err, commands.ExitMustBuild)
	}
	var checks []checkJSON
	if err := json.Unmarshal([]byte(out), &checks); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	kinds := map[string]checkJSON{}
	for _, ch := range checks {
		kinds[ch.Kind] = ch
		if ch.Where != "missing" || !ch.Build {
			t.Errorf("%s %s is %s (build %v); want missing, to build", ch.Kind, ch.Ref, ch.Where, ch.Build)
		}
	}
	for _, k := range []string{"base", "case", "tool", "agent", "runtime"} {
		if _, ok := kinds[k]; !ok {
			t.Errorf("no %s image in the check: %+v", k, checks)
		}
	}

	// Every image there: the tool image in the store, the rest in the
	// registry.
	for _, k := range []string{"base", "case", "agent"} {
		img := caseImage(t)
		if k == "base" {
			img = runtimeImage(t)
		}
		c.storeImage(t, kinds[k].Ref, img)
		c.mustRun(t, "--registry", p, "push", kinds[k].Ref)
		c.mustRun(t, "store", "rm", kinds[k].Ref)
	}
	c.storeImage(t, kinds["tool"].Ref, toolImage(t))
	out, _ = c.mustRun(t, "--registry", p, "tasks", "check", id, "--agents", "dummy", "--json")
	checks = nil
	json.Unmarshal([]byte(out), &checks)
	for _, ch := range checks {
		if ch.Kind == "runtime" {
			// Missing, and not needed: the tool image is there.
			if ch.Where != "missing" || ch.Build {
				t.Errorf("runtime: where %s, build %v; want missing, nothing to build", ch.Where, ch.Build)
			}
			continue
		}
		want := "registry"
		if ch.Kind == "tool" {
			want = "store"
		}
		if ch.Where != want || ch.Build || len(ch.Platforms) != 1 {
			t.Errorf("%s: where %s, platforms %v, build %v; want %s, one platform, nothing to build", ch.Kind, ch.Where, ch.Platforms, ch.Build, want)
		}
	}

	// A platform the images lack must be built.
	_, _, err = c.run(t, "--registry", p, "tasks", "check", id, "--agents", "dummy", "--platform", "linux/s390x")
	if !errors.As(err, &exit) || exit.Code != commands.ExitMustBuild {
		t.Errorf("tasks check for linux/s390x: err %v, want exit %d", err, commands.ExitMustBuild)
	}

	text, _ := c.mustRun(t, "--registry", p, "eval", "--check", "--tasks", id, "--agents", "dummy")
	if !strings.Contains(text, "0 of 5 images must be built") {
		t.Errorf("eval --check printed:\n%s", text)
	}
	// A dataset folder outside the home, as eval --local names it.
	copyTree(t, "datasets/examples", c.root+"/elsewhere")
	text, _, err = c.run(t, "--registry", p, "eval", "--check", "--local", c.root+"/elsewhere", "--agents", "dummy")
	if !errors.As(err, &exit) || exit.Code != commands.ExitMustBuild {
		t.Errorf("eval --check --local with unbuilt tasks: err %v, want exit %d", err, commands.ExitMustBuild)
	}
	if !strings.Contains(text, id) || !strings.Contains(text, "libqs-3-b2a739e") {
		t.Errorf("eval --check --local DIR did not check the folder's tasks:\n%s", text)
	}
	_, _, err = c.run(t, "--registry", p, "tasks", "check", "no-such-task")
	oneLine(t, err)
}
