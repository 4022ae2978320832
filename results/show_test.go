package results

import (
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// TestJudgedNote: a run judged by exit status says how to judge it by
// name; one judged by name says nothing more.
func TestJudgedNote(t *testing.T) {
	for _, tc := range []struct {
		judged string
		note   bool
	}{{contract.JudgedExitStatus, true}, {contract.JudgedByName, false}, {contract.JudgedByNameNoCanary, false}, {"", false}} {
		got := (&Run{Summary: &Summary{}, Result: &contract.RunResult{Judged: tc.judged}}).JudgedNote()
		if want := "ssebench dataset verify --write-tests"; tc.note != strings.Contains(got, want) {
			t.Errorf("JudgedNote(judged %q) = %q, want a note: %t", tc.judged, got, tc.note)
		}
	}
	if got := (&Run{Summary: &Summary{}}).JudgedNote(); got != "" {
		t.Errorf("JudgedNote(no result) = %q, want none", got)
	}
}

// TestWriteList: the list gives a forged run its integrity verdict in full
// and marks what a reader must not miss in the FLAGS column.
func TestWriteList(t *testing.T) {
	root := t.TempDir()
	runs := []*Run{
		verdictRun(t, root, "r-forged", "t1", "a", forgedResult()),
		verdictRun(t, root, "r-flagged", "t1", "b", flaggedResult()),
		verdictRun(t, root, "r-exit", "t2", "a", exitStatusResult()),
	}
	var b strings.Builder
	if err := WriteList(&b, runs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID ") {
		t.Fatalf("want a header and 3 runs, got:\n%s", b.String())
	}
	for i, want := range []string{"FORGED: " + contract.IntegrityReportForged, "audit:2", "exit-status"} {
		if !strings.Contains(lines[i+1], want) {
			t.Errorf("line %q lacks %q", lines[i+1], want)
		}
	}
	if !strings.Contains(lines[1], "dropped:1") {
		t.Errorf("the forged run's line %q lacks its dropped path", lines[1])
	}
}

// TestShow: a forged run is framed with what its verdict means; the
// audit's findings and the missing patch are said.
func TestShow(t *testing.T) {
	r := verdictRun(t, t.TempDir(), "r-forged", "t1", "a", forgedResult())
	var b strings.Builder
	r.Show(&b)
	got := b.String()
	for _, want := range []string{
		"run      r-forged\n", strings.Repeat("!", 72) + "\nFORGED", "rewrote its own report. The run is not a\nfailed fix",
		"dropped  1 protected path the agent changed", "  x.go:3  init added\n",
		"usage    no model (no model gateway record)\n", "== patch: none (" + contract.PatchFile + " missing)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Show lacks %q:\n%s", want, got)
		}
	}
}
