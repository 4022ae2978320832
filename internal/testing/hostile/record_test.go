package hostile

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "1.tsv"), []byte("paths\tTestA/x\tpass\npaths\tTestA/y\tfail\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "2.tsv"), []byte("blobs\tTestB/z\tpass\nbroken line\n"), 0o644)
	rows, err := Summarize(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	Print(&b, rows)
	want := "class  cases  passed  failed\nblobs      1       1       0\npaths      2       1       1\ntotal      3       2       1\n"
	if b.String() != want {
		t.Errorf("Print() =\n%s\nwant\n%s", b.String(), want)
	}
}

func TestCaseRecords(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(SummaryEnv, dir)
	t.Run("one", func(t *testing.T) { Case(t, "class a") })
	rows, err := Summarize(dir)
	if err != nil || len(rows) != 1 || rows[0].Class != "class a" || rows[0].Passed != 1 {
		t.Errorf("Summarize() = %+v, %v", rows, err)
	}
	if strings.Contains(rows[0].Class, "\t") {
		t.Error("tab in class")
	}
}

func TestAttackRecords(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(SummaryEnv, dir)
	t.Run("shadow-go", func(t *testing.T) {
		o := Attack(t, "toolchain shadowing", "PATH directories locked")
		o.Verdict("FAILED: %s", "intent_test")
	})
	t.Run("no-verdict", func(t *testing.T) { Attack(t, RedTeamPrefix+"resources", "limits") })
	rows, err := Attacks(dir)
	if err != nil || len(rows) != 2 {
		t.Fatalf("Attacks() = %+v, %v", rows, err)
	}
	var b bytes.Buffer
	PrintAttacks(&b, rows)
	for _, want := range []string{"resources: no-verdict", "toolchain shadowing: shadow-go  PATH directories locked  FAILED: intent_test  pass", "2 attacks, 2 stopped"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("PrintAttacks() =\n%s\nwant a line with %q", b.String(), want)
		}
	}
	// The attacks count in the hostile table too, under their class.
	classes, _ := Summarize(dir)
	if len(classes) != 2 || classes[0].Class != "red team: resources" {
		t.Errorf("Summarize() = %+v, want the two red-team classes", classes)
	}
}
