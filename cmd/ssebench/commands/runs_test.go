package commands_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// writeRun writes a run folder as `ssebench run` leaves it: summary.json,
// result.json with the checks, their logs and final.patch.
func writeRun(t *testing.T, runs, id, agent string, passed bool) {
	t.Helper()
	dir := filepath.Join(runs, id)
	poc := "true"
	if !passed {
		poc = "false"
	}
	writeFiles(t, dir, map[string]string{
		"summary.json": `{"run_id": "` + id + `", "task": "kvconf-12-afb9ee1", "agent": "` + agent + `", "status": "ok", "exit_code": 0,
			"config": {"model": "none"}, "timings_seconds": {"total": 12.5, "run": 10, "startup": 1},
			"started": "2026-12-01T12:00:00Z", "finished": "2026-12-01T12:00:12Z"}`,
		"result.json": `{"task_id": "kvconf-12-afb9ee1", "passed": ` + map[bool]string{true: "true", false: "false"}[passed] + `,
			"build": {"ok": true, "exit": 0, "log": "build.log"}, "test": {"ok": true, "exit": 0, "log": "test.log"},
			"poc": {"ok": ` + poc + `, "exit": 2, "log": "poc.log"}}`,
		"build.log":   "built\n",
		"test.log":    "ok\n",
		"poc.log":     "line\nline\npanic: index out of range\n",
		"final.patch": "--- a/unquote.go\n+++ b/unquote.go\n",
	})
}

func TestRunsCommands(t *testing.T) {
	c := newCLI(t)
	runs := filepath.Join(c.root, "runs")
	writeRun(t, runs, "20261201-120000-kvconf-12-afb9ee1-dummy-aaaaaa", "dummy", false)
	writeRun(t, runs, "20261201-120000-kvconf-12-afb9ee1-patcher-bbbbbb", "patcher", true)

	out, _ := c.mustRun(t, "runs", "ls", "--runs-dir", runs)
	for _, want := range []string{"ID", "dummy", "build ✓ test ✓ poc ✗", "12.5s", "patcher"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs ls lacks %q:\n%s", want, out)
		}
	}
	out, _ = c.mustRun(t, "runs", "ls", "--runs-dir", runs, "--json")
	var entries []struct {
		ID     string `json:"id"`
		Agent  string `json:"agent"`
		Passed bool   `json:"passed"`
		Grade  string `json:"grade"`
	}
	if err := json.Unmarshal([]byte(out), &entries); err != nil || len(entries) != 2 {
		t.Fatalf("runs ls --json = %v, %v:\n%s", entries, err, out)
	}
	if entries[0].Agent != "dummy" || entries[0].Passed || entries[0].Grade != "FAILED: poc (build ✓ test ✓)" || !entries[1].Passed {
		t.Errorf("runs ls --json = %+v", entries)
	}
	out, _ = c.mustRun(t, "runs", "show", "--runs-dir", runs, "20261201-120000-kvconf-12-afb9ee1-dummy")
	for _, want := range []string{"FAILED: poc (build ✓ test ✓)", "== poc: failed (exit 2", "  panic: index out of range", "== patch (final.patch", "+++ b/unquote.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs show lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := c.run(t, "runs", "show", "--runs-dir", runs, "20261201"); err == nil || !strings.Contains(err.Error(), "names 2 runs") {
		t.Errorf("runs show of an ambiguous prefix: %v", err)
	}
	out, _ = c.mustRun(t, "runs", "report", runs)
	if !strings.Contains(out, "| kvconf-12-afb9ee1 | 0/1 | 1/1 |") {
		t.Errorf("runs report lacks the matrix:\n%s", out)
	}
	if _, _, err := c.run(t, "runs", "report", runs, "--format", "pdf"); err == nil || !strings.Contains(err.Error(), "md, json, junit, html") {
		t.Errorf("runs report --format pdf: %v", err)
	}
}
