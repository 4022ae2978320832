package task_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/task"
)

// TestValidateReport: a dataset's task count, or its problems, as `dataset
// validate --json` prints them; an error that is no problem list is
// returned.
func TestValidateReport(t *testing.T) {
	r, err := task.NewValidateReport("ds", &task.Dataset{Tasks: make([]*task.Task, 2)}, nil)
	if b, _ := json.Marshal(r); err != nil || string(b) != `{"dataset":"ds","ok":true,"tasks":2,"problems":[]}` {
		t.Errorf("report of a sound dataset = %s, %v", b, err)
	}
	r, err = task.NewValidateReport("ds", nil, task.Problems{{File: "ds/a/sse/config.yaml", Line: 3, Msg: "bad id"}, {Msg: "no tasks"}})
	want := `{"dataset":"ds","ok":false,"tasks":0,"problems":[{"file":"ds/a/sse/config.yaml","line":3,"message":"bad id"},{"message":"no tasks"}]}`
	if b, _ := json.Marshal(r); err != nil || string(b) != want {
		t.Errorf("report of problems =\n%s, %v\nwant\n%s", b, err, want)
	}
	other := errors.New("reading dataset: permission denied")
	if _, err := task.NewValidateReport("ds", nil, other); err != other {
		t.Errorf("report of another error = %v, want it returned", err)
	}
}
