package predictions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/evaluate"
)

// TestNewGrading: a run per prediction that can be graded, the refused
// ones listed for evaluation.json, --tasks keeping its tasks only; a
// selection of nothing leaves no folder.
func TestNewGrading(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "preds.jsonl")
	content := predLine(t, predTask, "m", goodDiff) + predLine(t, "libqs-3-b2a739e", "m", goodDiff) + predLine(t, "nope-1-abc", "m", goodDiff)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(root, "runs")
	g, err := NewGrading(path, runs, predKnown, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Selected) != 3 || len(g.Plan.Runs) != 2 || len(g.Refused) != 1 || len(g.Patches) != 2 {
		t.Fatalf("NewGrading() = %d selected, %d runs, %d refused, %d patches; want 3, 2, 1, 2", len(g.Selected), len(g.Plan.Runs), len(g.Refused), len(g.Patches))
	}
	if p := g.Patches[Job(g.Selected[0]).Key()]; p != g.Selected[0] {
		t.Errorf("Patches[first job] = %+v, want the first prediction", p)
	}
	if err := g.Write(); err != nil {
		t.Fatal(err)
	}
	if p, err := evaluate.ReadPlan(g.Dir); err != nil || p.ID != g.Plan.ID {
		t.Errorf("ReadPlan() = %+v, %v, want the plan %s", p, err, g.Plan.ID)
	}
	if _, err := os.Stat(filepath.Join(g.Dir, "evaluation.json")); err != nil {
		t.Errorf("evaluation.json: %v", err)
	}

	other := filepath.Join(root, "other")
	if _, err := NewGrading(path, other, predKnown, []string{"absent-2-abc"}); err == nil || !strings.Contains(err.Error(), "selects none of the predictions") {
		t.Errorf("NewGrading(only an absent task) = %v, want none selected", err)
	}
	if es, _ := os.ReadDir(other); len(es) != 0 {
		t.Errorf("a failed NewGrading left %d entries in %s", len(es), other)
	}
}
