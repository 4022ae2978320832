package catalog_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/task"
	"github.com/42-b3yond-6ug/ssebench/task/catalog"
)

// TestList: every task of a catalog, its case image pinned where the
// lock pins it and tagged with a warning elsewhere; the table escapes a
// catalog's free text.
func TestList(t *testing.T) {
	mdata, m, lock := examples(t)
	dir := t.TempDir()
	write(t, dir, map[string][]byte{task.ManifestFile: mdata, task.LockFile: lock})
	var warn bytes.Buffer
	entries, err := catalog.List(context.Background(), []string{dir}, reg, &warn)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(m.Tasks) {
		t.Fatalf("List = %d entries, want %d", len(entries), len(m.Tasks))
	}
	e := entries[0]
	if e.ID != id || !e.Pinned || e.Image != reg+"/case/examples/"+id+"@"+digest || e.Catalog != dir || e.Dataset != m.Dataset || e.Version != m.Version {
		t.Errorf("first entry = %+v, want %s pinned by the lock", e, id)
	}
	if other := entries[1]; other.Pinned || !strings.HasSuffix(other.Image, ":"+m.Version) || !strings.Contains(warn.String(), "warning: ") || !strings.Contains(warn.String(), other.ID) {
		t.Errorf("second entry = %+v, warnings %q; want it by tag, with a warning", other, warn.String())
	}

	e.Language = "go\n" + id + "  forged"
	var b bytes.Buffer
	if err := catalog.WriteTable(&b, []catalog.Entry{e}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "TASK") || !strings.Contains(lines[1], `"go\n`) || !strings.Contains(lines[1], e.Image) {
		t.Errorf("WriteTable wrote\n%s\nwant a header and one line, the language escaped", b.String())
	}
}

// TestHomeCatalogs: the datasets of a home that have a manifest, or an
// error that says how to name a catalog.
func TestHomeCatalogs(t *testing.T) {
	home := t.TempDir()
	if _, err := catalog.HomeCatalogs(home); err == nil || !strings.Contains(err.Error(), "no catalog: pass --catalog") {
		t.Errorf("HomeCatalogs of an empty home = %v", err)
	}
	for _, d := range []string{"a", "b"} {
		os.MkdirAll(filepath.Join(home, "datasets", d), 0o755)
	}
	write(t, filepath.Join(home, "datasets", "b"), map[string][]byte{task.ManifestFile: []byte("{}")})
	if got, err := catalog.HomeCatalogs(home); err != nil || len(got) != 1 || got[0] != filepath.Join(home, "datasets", "b") {
		t.Errorf("HomeCatalogs = %q, %v; want the dataset with a manifest", got, err)
	}
}
