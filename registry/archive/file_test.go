package archive

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestRemoveDeadPartials: a partial archive of a save that died is
// removed; one of a save still running (this process) stays, and so do
// other files.
func TestRemoveDeadPartials(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "week1.tar")
	dead := filepath.Join(dir, ".week1.tar-999999999-abc")
	mine := filepath.Join(dir, fmt.Sprintf(".week1.tar-%d-abc", os.Getpid()))
	other := filepath.Join(dir, ".week2.tar-999999999-abc")
	for _, f := range []string{dead, mine, other} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removeDeadPartials(target)
	for f, want := range map[string]bool{dead: false, mine: true, other: true} {
		if _, err := os.Stat(f); (err == nil) != want {
			t.Errorf("%s there: %t, want %t", filepath.Base(f), err == nil, want)
		}
	}
}
