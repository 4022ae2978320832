package results

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

// TestNotApplied: a graded prediction whose patch was not applied is a
// verdict of its own in runs ls (Verdict, Grade), the report's counts, its
// matrix, its verdicts line and JUnit; it is not passed, and a prediction
// whose patch applied and failed stays FAILED.
func TestNotApplied(t *testing.T) {
	root := t.TempDir()
	na := fakeRun(t, root, "r1", "task", "model-a", 1, bugged, 2)
	if err := WritePrediction(na, Prediction{Patch: PatchNotApplied, Why: "the patch does not apply"}); err != nil {
		t.Fatal(err)
	}
	failed := fakeRun(t, root, "r2", "task", "model-b", 1, bugged, 2)
	if err := WritePrediction(failed, Prediction{Patch: PatchApplied}); err != nil {
		t.Fatal(err)
	}
	runs, err := List(root)
	if err != nil || len(runs) != 2 {
		t.Fatalf("List = %d runs, %v", len(runs), err)
	}
	byAgent := map[string]*Run{}
	for _, r := range runs {
		byAgent[r.Agent()] = r
	}
	a, b := byAgent["model-a"], byAgent["model-b"]
	if a.Verdict() != VerdictNotApplied || a.Passed() || !a.Graded() {
		t.Errorf("not applied: Verdict %q, Passed %v, Graded %v; want %q, false, true", a.Verdict(), a.Passed(), a.Graded(), VerdictNotApplied)
	}
	if want := "NOT APPLIED: the patch does not apply (graded on the unchanged source)"; a.Grade() != want {
		t.Errorf("Grade() = %q, want %q", a.Grade(), want)
	}
	if b.Verdict() != VerdictFailed {
		t.Errorf("applied and failed: Verdict %q, want %q", b.Verdict(), VerdictFailed)
	}
	rep := NewReport("eval", runs)
	for _, s := range rep.Agents {
		if want := map[string]int{"model-a": 1, "model-b": 0}[s.Agent]; s.NotApplied != want || s.Attempts != 1 {
			t.Errorf("%s: not applied %d of %d attempts, want %d of 1", s.Agent, s.NotApplied, s.Attempts, want)
		}
	}
	var md bytes.Buffer
	if err := Write(&md, rep, "md"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0/1 (1 not applied)", "1 patch not applied"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the Markdown report has no %q:\n%s", want, md.String())
		}
	}
	var ju bytes.Buffer
	if err := Write(&ju, rep, "junit"); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(ju.String(), `type="not-applied"`); n != 1 {
		t.Errorf("JUnit has %d not-applied failures, want 1:\n%s", n, ju.String())
	}
	if err := xml.Unmarshal(ju.Bytes(), new(any)); err != nil {
		t.Errorf("JUnit does not parse: %v", err)
	}
}

// TestCellWithoutAttempt: a task an agent never ran on (an evaluation
// stopped first) shows "-", in grey, not a green 0/0.
func TestCellWithoutAttempt(t *testing.T) {
	root := t.TempDir()
	fakeRun(t, root, "r1", "task-a", "one", 1, allOK, 2)
	fakeRun(t, root, "r2", "task-b", "two", 1, allOK, 2)
	runs, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport("eval", runs)
	var md, page bytes.Buffer
	if err := Write(&md, rep, "md"); err != nil {
		t.Fatal(err)
	}
	if err := Write(&page, rep, "html"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "0/0") || strings.Contains(page.String(), "0/0") {
		t.Errorf("a cell without an attempt reads 0/0:\n%s", md.String())
	}
	if !strings.Contains(md.String(), "| task-a | 1/1 | - |") {
		t.Errorf("the Markdown matrix has no row \"| task-a | 1/1 | - |\":\n%s", md.String())
	}
	if n := strings.Count(page.String(), `<td class="none"`); n != 2 {
		t.Errorf("the HTML matrix has %d cells of class none, want 2", n)
	}
}

// TestPartialReport: a report of an evaluation with planned runs missing
// says so, with the command that runs them, in every format.
func TestPartialReport(t *testing.T) {
	root := t.TempDir()
	fakeRun(t, root, "r1", "task", "one", 1, allOK, 2)
	fakeRun(t, root, "r2", "task", "two", 1, bugged, 2)
	runs, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport("eval-x", runs)
	rep.Partial = &Partial{Planned: 6, Missing: 4, Resume: "ssebench eval --resume runs/eval-x"}
	want := "Partial: 4 of 6 planned runs are missing; `ssebench eval --resume runs/eval-x` runs them."
	for _, format := range Formats {
		var out bytes.Buffer
		if err := Write(&out, rep, format); err != nil {
			t.Fatal(err)
		}
		w := want
		if format == "json" {
			w = `"partial": {`
		}
		if !strings.Contains(out.String(), w) {
			t.Errorf("the %s report does not say it is partial (%q):\n%s", format, w, out.String())
		}
	}
}
