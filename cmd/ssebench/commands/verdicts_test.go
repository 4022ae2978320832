package commands_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// writeVerdictRun writes a run folder whose result.json is result (a JSON
// object's fields after task_id).
func writeVerdictRun(t *testing.T, runs, id, result string) {
	t.Helper()
	writeFiles(t, filepath.Join(runs, id), map[string]string{
		"summary.json": `{"run_id": "` + id + `", "task": "kvconf-12-afb9ee1", "agent": "sly", "status": "ok", "exit_code": 0,
			"config": {"model": "none"}, "timings_seconds": {"total": 3},
			"started": "2026-12-07T12:00:00Z", "finished": "2026-12-07T12:00:03Z"}`,
		"result.json": `{"task_id": "kvconf-12-afb9ee1", ` + result + `}`,
		"final.patch": "diff --git a/x.go b/x.go\n",
	})
}

const (
	forgedJSON = `"passed": false, "build": {"ok": true, "exit": 0}, "test": {"ok": false, "exit": 1},
		"judged": "by name", "integrity": "report forged", "dropped_paths": ["x_test.go"],
		"audit": [{"path": "x_test.go", "rule": "protected path changed"}, {"path": "x.go", "line": 3, "rule": "init added"},
			{"path": "evil\n+ fine.go", "line": 1, "rule": "TestMain added"}]`
	flaggedJSON = `"passed": true, "build": {"ok": true, "exit": 0}, "test": {"ok": true, "exit": 0}, "judged": "by name",
		"audit": [{"path": "x.go", "line": 3, "rule": "init added"}]`
	exitStatusJSON = `"passed": true, "build": {"ok": true, "exit": 0}, "test": {"ok": true, "exit": 0}, "judged": "exit status"`
)

// TestRunsVerdicts: runs ls, runs show and runs report show an integrity
// verdict as a verdict of its own, and the audit's findings, the paths
// dropped and how the tests were judged.
func TestRunsVerdicts(t *testing.T) {
	c := newCLI(t)
	runs := filepath.Join(c.root, "runs")
	writeVerdictRun(t, runs, "20261207-120000-a-forged", forgedJSON)
	writeVerdictRun(t, runs, "20261207-120000-b-flagged", flaggedJSON)
	writeVerdictRun(t, runs, "20261207-120000-c-exit", exitStatusJSON)

	out, _ := c.mustRun(t, "runs", "ls", "--runs-dir", runs)
	for _, want := range []string{"VERDICT", "FLAGS", "FORGED: report forged", "audit:3 dropped:1", "audit:1", "exit-status"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs ls lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "PASSED") != 2 {
		t.Errorf("runs ls: want 2 PASSED (the flagged run and the one judged by exit status):\n%s", out)
	}

	out, _ = c.mustRun(t, "runs", "show", "--runs-dir", runs, "20261207-120000-a")
	for _, want := range []string{
		strings.Repeat("!", 72) + "\nFORGED: report forged\nthe test report got the grader's canary tests wrong",
		"judged   by name, from the test tool's report, checked with the grader's canary",
		"dropped  1 protected path the agent changed, reset to pristine before the grade:\n  x_test.go\n",
		"audit    flagged:",
		"  x_test.go  protected path changed\n  x.go:3  init added\n",
		// The agent's file name cannot forge a line.
		`  "evil\n+ fine.go":1  TestMain added`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("runs show of the forged run lacks %q:\n%s", want, out)
		}
	}
	out, _ = c.mustRun(t, "runs", "show", "--runs-dir", runs, "20261207-120000-c")
	if !strings.Contains(out, "\nPASSED\njudged   by the test script's exit status alone") {
		t.Errorf("runs show of the run judged by exit status:\n%s", out)
	}

	out, _ = c.mustRun(t, "runs", "report", runs)
	for _, want := range []string{"1 run forged", "2 runs flagged by the audit", "| sly | none | 2 | 3 |", "## Runs to read", "`x.go:3  init added`"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs report lacks %q:\n%s", want, out)
		}
	}
	out, _ = c.mustRun(t, "runs", "report", runs, "--fail-on-audit")
	for _, want := range []string{"| sly | none | 1 | 3 |", "(counted as failed: --fail-on-audit)", "FAILED: audit (build ✓ test ✓)"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs report --fail-on-audit lacks %q:\n%s", want, out)
		}
	}
}
