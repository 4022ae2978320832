package task_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/task"
)

// homeWith makes a home whose datasets hold the given task folders
// ("dataset/task"), each with a Dockerfile.
func homeWith(t *testing.T, tasks ...string) string {
	t.Helper()
	home := t.TempDir()
	for _, dt := range tasks {
		dir := filepath.Join(home, "datasets", filepath.FromSlash(dt))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, task.DockerfileName), []byte("FROM scratch\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// TestHomeTasks: the task ids of a home are its datasets' task folders,
// sorted, once each; a typo is answered with the closest id, and a task
// in two datasets asks for --dataset.
func TestHomeTasks(t *testing.T) {
	home := homeWith(t, "a/kvconf-12", "a/libqs-3", "b/kvconf-12", "b/zeta-1")
	if err := os.MkdirAll(filepath.Join(home, "datasets", "a", "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(task.HomeTasks(home, ""), ","); got != "kvconf-12,libqs-3,zeta-1" {
		t.Errorf("HomeTasks = %s", got)
	}
	if got := strings.Join(task.HomeTasks(home, "b"), ","); got != "kvconf-12,zeta-1" {
		t.Errorf("HomeTasks of b = %s", got)
	}
	if err := task.CheckTask(home, "", "libqs-4"); err == nil || !strings.Contains(err.Error(), `did you mean "libqs-3"?`) {
		t.Errorf("CheckTask(libqs-4) = %v, want the closest id", err)
	}
	if err := task.CheckTask(home, "", "kvconf-12"); err == nil || !strings.Contains(err.Error(), "several datasets (a, b): pass --dataset") {
		t.Errorf("CheckTask(kvconf-12) = %v, want --dataset asked for", err)
	}
	if err := task.CheckTask(home, "b", "kvconf-12"); err != nil {
		t.Errorf("CheckTask(b, kvconf-12) = %v", err)
	}
	if got := strings.Join(task.DatasetNames(home), ","); got != "" {
		t.Errorf("DatasetNames without dataset.yaml = %s, want none", got)
	}
	if got := task.DatasetArg(home, "examples"); got != filepath.Join(home, "datasets", "examples") {
		t.Errorf("DatasetArg(examples) = %s", got)
	}
	if got := task.DatasetArg(home, "./examples"); got != "./examples" {
		t.Errorf("DatasetArg(./examples) = %s", got)
	}
}
