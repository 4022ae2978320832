package govulndb

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/task"
)

// TestKeepVerified: a task is kept when it verified with its folder as
// it is now; a task whose folder changed since is dropped, with the
// reason the first verify table that names it gives.
func TestKeepVerified(t *testing.T) {
	dir := t.TempDir()
	ds := &task.Dataset{Dir: dir}
	for _, id := range []string{"go-2099-0001", "go-2099-0002"} {
		if err := os.MkdirAll(filepath.Join(dir, id, "sse"), 0o755); err != nil {
			t.Fatal(err)
		}
		ds.Tasks = append(ds.Tasks, &task.Task{ID: id, Dir: filepath.Join(dir, id)})
	}
	if err := MergeTable(dir, []Row{{ID: "GO-2099-0001", Module: "m", Status: "imported"}, {ID: "GO-2099-0002", Module: "m", Status: "imported"}}); err != nil {
		t.Fatal(err)
	}
	files, err := ds.Tasks[0].FilesDigest()
	if err != nil {
		t.Fatal(err)
	}
	tables := []string{filepath.Join(t.TempDir(), "a.txt"), filepath.Join(t.TempDir(), "b.txt")}
	os.WriteFile(tables[0], []byte("TASK  AGENT  CHECK  RESULT  WHY\ngo-2099-0002  dummy  poc  FAILED  the fix is not needed\n"), 0o644)
	os.WriteFile(tables[1], []byte("go-2099-0002  reference  build  FAILED  later\n"), 0o644)
	// Both verified, as the record says; the second with other files.
	verified := func(id, got string) bool { return got == files && (id == "go-2099-0001" || id == "go-2099-0002") }
	if err := os.WriteFile(filepath.Join(dir, "go-2099-0002", "sse", "NEW"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	kept, dropped, err := KeepVerified(KeepOptions{Dataset: ds, Verified: verified, ReasonFiles: tables})
	if err != nil || kept != 1 || dropped != 1 {
		t.Fatalf("KeepVerified = %d kept, %d dropped, %v; want 1, 1", kept, dropped, err)
	}
	tsv, _ := os.ReadFile(filepath.Join(dir, TableFile))
	if want := "GO-2099-0002\tm\t\t\tdropped\tverify: dummy poc: the fix is not needed\n"; !strings.Contains(string(tsv), want) {
		t.Errorf("table lacks %q:\n%s", want, tsv)
	}
	if _, _, err := KeepVerified(KeepOptions{Dataset: ds, Verified: verified, ReasonFiles: []string{filepath.Join(dir, "nope")}}); err == nil || !strings.Contains(err.Error(), "reading the verify table") {
		t.Errorf("KeepVerified of a missing table = %v", err)
	}
}

// TestWriteRows: an import's table, aligned, and how many were imported.
func TestWriteRows(t *testing.T) {
	var b bytes.Buffer
	n := WriteRows(&b, []Row{{ID: "GO-2099-0001", Module: "example.com/m", Status: "imported"}, {ID: "GO-2099-0003", Status: "skipped", Reason: "std"}})
	want := "REPORT        MODULE         STATUS    REASON\nGO-2099-0001  example.com/m  imported  \nGO-2099-0003                 skipped   std\n"
	if n != 1 || b.String() != want {
		t.Errorf("WriteRows = %d, wrote\n%q; want 1,\n%q", n, b.String(), want)
	}
}
