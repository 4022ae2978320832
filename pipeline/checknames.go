package pipeline

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"

	"github.com/42-b3yond-6ug/ssebench/agent"
	"github.com/42-b3yond-6ug/ssebench/internal/suggest"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// CheckNames refuses, before anything is built, agent folders and task ids
// that do not exist, each with the closest name there is: a typo must not
// reach an evaluation as an infrastructure failure retried three times.
// Tasks are looked up in local (a dataset folder) when set, else in the
// home's datasets; a catalog's tasks (catalog set) are checked when the
// catalog is read.
func CheckNames(home string, agents, tasks []string, local, catalog string) error {
	for _, a := range agents {
		if _, err := agent.Load(home, a); err != nil {
			return err
		}
	}
	if catalog != "" && local == "" {
		return nil
	}
	if err := CheckLocal(local); err != nil {
		return err
	}
	for _, id := range tasks {
		if local == "" {
			if err := task.CheckTask(home, "", id); err != nil {
				return err
			}
			continue
		}
		ids := task.TasksIn(local)
		if slices.Contains(ids, id) {
			continue
		}
		if len(ids) == 0 {
			return fmt.Errorf("unknown task %q: %s has no task folders", id, local)
		}
		return fmt.Errorf("unknown task %q: did you mean %q? (no folder for it in %s)", id, suggest.Closest(id, ids), local)
	}
	return nil
}

// CheckLocal refuses a --local folder that is not there, or not a folder,
// saying so: "has no task folders" sent the user looking for tasks in a
// folder that was merely misspelt. "" is no folder named, and fine.
func CheckLocal(local string) error {
	if local == "" {
		return nil
	}
	st, err := os.Stat(local)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("--local %s: no such folder (name a dataset folder, e.g. datasets/examples)", local)
	case err != nil:
		return fmt.Errorf("--local: %w", err)
	case !st.IsDir():
		return fmt.Errorf("--local %s is a file, not a dataset folder", local)
	}
	return nil
}
