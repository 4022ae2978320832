package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/pipeline"
)

// TestTaskIDs: the tasks of a dataset folder are its task folders, by
// name, hidden ones left out; without a folder, the home's
// datasets/examples is read, and said to be.
func TestTaskIDs(t *testing.T) {
	home := t.TempDir()
	examples := filepath.Join(home, "datasets", "examples")
	other := t.TempDir()
	for _, d := range []string{filepath.Join(examples, "b-2"), filepath.Join(examples, "a-1"), filepath.Join(examples, ".git"), filepath.Join(other, "c-3")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := &pipeline.Env{Home: home}
	for _, tc := range []struct {
		local, wantDir string
		want           []string
	}{
		{"", examples, []string{"a-1", "b-2"}},
		{other, other, []string{"c-3"}},
	} {
		ids, dir, err := e.TaskIDs(context.Background(), tc.local, "")
		if err != nil || dir != tc.wantDir || !slices.Equal(ids, tc.want) {
			t.Errorf("TaskIDs(%q) = %q, %q, %v; want %q, %q", tc.local, ids, dir, err, tc.want, tc.wantDir)
		}
	}
	if _, _, err := e.TaskIDs(context.Background(), filepath.Join(other, "nope"), ""); err == nil {
		t.Error("TaskIDs of a missing folder: no error")
	}
}
