package release

import (
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/task"
)

// TestPickTasks: Tools takes every task, or those named, in their order;
// an unknown id is refused before anything is built.
func TestPickTasks(t *testing.T) {
	ds := &task.Dataset{Dir: "datasets/x", Tasks: []*task.Task{{ID: "a-1"}, {ID: "b-2"}}}
	for _, tc := range []struct {
		name string
		ids  []string
		want string
		err  string
	}{
		{name: "every task", want: "a-1,b-2"},
		{name: "named", ids: []string{"b-2", "a-1"}, want: "b-2,a-1"},
		{name: "unknown", ids: []string{"c-3"}, err: `--tasks: "c-3" is not a task of datasets/x`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pickTasks(ds, tc.ids)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("pickTasks(%v) = %v, want %q", tc.ids, err, tc.err)
				}
				return
			}
			var ids []string
			for _, t := range got {
				ids = append(ids, t.ID)
			}
			if err != nil || strings.Join(ids, ",") != tc.want {
				t.Errorf("pickTasks(%v) = %v, %v, want %s", tc.ids, ids, err, tc.want)
			}
		})
	}
}

// TestToolsOptions: the case tag defaults to the dataset's version, and
// pushing needs registry access.
func TestToolsOptions(t *testing.T) {
	ds := &task.Dataset{Version: "1.2"}
	o, err := makeToolsOptions(ds, []ToolsOption{WithCaseTag("")})
	if err != nil || o.caseTag != "1.2" {
		t.Errorf("makeToolsOptions(WithCaseTag(\"\")) = %+v, %v, want case tag 1.2", o, err)
	}
	if _, err := makeToolsOptions(ds, []ToolsOption{WithPush(nil)}); err == nil {
		t.Error("WithPush(nil) was taken, want an error")
	}
}
