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
