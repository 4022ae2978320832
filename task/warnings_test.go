package task_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/task"
)

// TestDatasetWarnings: a task whose config lists no tests is warned of,
// by id; a task without a config is passed over.
func TestDatasetWarnings(t *testing.T) {
	bare := "test"
	listed := &task.Config{Scripts: task.Scripts{Test: &bare}, Tests: &task.Tests{FailToPass: []string{"TestA"}}}
	unlisted := &task.Config{Scripts: task.Scripts{Test: &bare}}
	d := &task.Dataset{Tasks: []*task.Task{{ID: "a-1", Config: listed}, {ID: "b-2", Config: unlisted}, {ID: "c-3"}}}
	got := d.Warnings()
	if len(got) != 1 || !strings.HasPrefix(got[0], "b-2: tests: no fail_to_pass") {
		t.Errorf("Warnings() = %q, want one of b-2", got)
	}
	if slices.ContainsFunc(got, func(w string) bool { return strings.HasPrefix(w, "a-1") }) {
		t.Errorf("Warnings() warns of a task with lists: %q", got)
	}
}
