// Package runtest writes run folders for the tests of what reads them:
// progress lines, verdicts, reports.
package runtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// Load writes a run folder with summary.json s and result.json res (none
// when nil) into a new temporary directory, and loads it.
func Load(t testing.TB, s results.Summary, res *contract.RunResult) *results.Run {
	t.Helper()
	dir := t.TempDir()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, results.SummaryFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if res != nil {
		if err := contract.WriteRunResult(dir, res); err != nil {
			t.Fatal(err)
		}
	}
	r, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
