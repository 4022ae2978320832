package task_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/task"
)

// TestSourceOf: SOURCE_DIR comes from the config of the task folder of
// the home's dataset that has it; a task without a folder asks for
// --source.
func TestSourceOf(t *testing.T) {
	home := t.TempDir()
	src := filepath.Join(moduleRoot(t), "datasets", "examples", "kvconf-12-afb9ee1")
	dst := filepath.Join(home, "datasets", "examples", "kvconf-12-afb9ee1")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	want, err := task.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := task.SourceOf(home, "kvconf-12-afb9ee1"); err != nil || got != want.Config.Source || got == "" {
		t.Errorf("SourceOf = %q, %v; want %q", got, err, want.Config.Source)
	}
	if _, err := task.SourceOf(home, "nope-1"); err == nil || !strings.Contains(err.Error(), "--source is required") {
		t.Errorf("SourceOf of a task without a folder = %v", err)
	}
}

// moduleRoot is the module's root, above this package's folder. Not
// testenv's: it links containerd into the test binary, whose memory
// TestHostileManifestMemory measures.
func moduleRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(wd)
}
