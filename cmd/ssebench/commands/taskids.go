package commands

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/agent"
	"github.com/42-b3yond-6ug/ssebench/internal/suggest"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// homeTasks returns the task ids of the home's datasets (or of dataset
// alone when it is not ""), sorted and without duplicates: every folder
// under datasets/<name>/ that has a config.yaml or a Dockerfile.
func homeTasks(home, dataset string) []string {
	ds := "*"
	if dataset != "" {
		ds = dataset
	}
	return tasksIn(filepath.Join(home, "datasets", ds))
}

// datasetArg is the folder a --dataset argument names: a path when it has
// a slash or is "." or "..", else the dataset of that name under the
// home's datasets/, whatever folder of that name the working directory has
// (the checkout's examples/ is Go code, not the dataset "examples").
func datasetArg(home, arg string) string {
	if strings.Contains(arg, "/") || arg == "." || arg == ".." {
		return arg
	}
	return filepath.Join(home, "datasets", arg)
}

// tasksIn lists the task folders of the dataset folders pattern matches
// (a folder, or a glob of folders).
func tasksIn(pattern string) []string {
	var ids []string
	seen := map[string]bool{}
	dirs, _ := filepath.Glob(filepath.Join(pattern, "*"))
	for _, d := range dirs {
		id := filepath.Base(d)
		if seen[id] || strings.HasPrefix(id, ".") {
			continue
		}
		for _, f := range []string{task.DockerfileName, task.ConfigFile, task.LegacyConfigFile} {
			if _, err := os.Stat(filepath.Join(d, filepath.FromSlash(f))); err == nil {
				seen[id] = true
				ids = append(ids, id)
				break
			}
		}
	}
	sort.Strings(ids)
	return ids
}

// checkTask fails when no dataset of home (or dataset, when not "") has a
// folder for id, with the closest task id there is; and when several
// datasets have one and none was named.
func checkTask(home, dataset, id string) error {
	if dataset != "" {
		if st, err := os.Stat(filepath.Join(home, "datasets", dataset, id)); err == nil && st.IsDir() {
			return nil
		}
	} else {
		matches, _ := filepath.Glob(filepath.Join(home, "datasets", "*", id))
		var in []string
		for _, m := range matches {
			if st, err := os.Stat(m); err == nil && st.IsDir() {
				in = append(in, filepath.Base(filepath.Dir(m)))
			}
		}
		switch {
		case len(in) == 1:
			return nil
		case len(in) > 1:
			return fmt.Errorf("task %q is in several datasets (%s): pass --dataset", id, strings.Join(in, ", "))
		}
	}
	where := filepath.Join(home, "datasets")
	if dataset != "" {
		where = filepath.Join(where, dataset)
	}
	ids := homeTasks(home, dataset)
	if len(ids) == 0 {
		return fmt.Errorf("unknown task %q: %s has no task folders (pass --home or run from a checkout)", id, where)
	}
	return fmt.Errorf("unknown task %q: did you mean %q? (no folder for it under %s)", id, suggest.Closest(id, ids), where)
}

// checkNames refuses, before anything is built, agent folders and task ids
// that do not exist, each with the closest name there is: a typo must not
// reach an evaluation as an infrastructure failure retried three times.
// Tasks are looked up in local (a dataset folder) when set, else in the
// home's datasets; a catalog's tasks (catalog set) are checked when the
// catalog is read.
func checkNames(home string, agents, tasks []string, local, catalog string) error {
	for _, a := range agents {
		if _, err := agent.Load(home, a); err != nil {
			return err
		}
	}
	if catalog != "" && local == "" {
		return nil
	}
	if err := checkLocal(local); err != nil {
		return err
	}
	for _, id := range tasks {
		if local == "" {
			if err := checkTask(home, "", id); err != nil {
				return err
			}
			continue
		}
		ids := tasksIn(local)
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

// checkLocal refuses a --local folder that is not there, or not a folder,
// saying so: "has no task folders" sent the user looking for tasks in a
// folder that was merely misspelt. "" is no folder named, and fine.
func checkLocal(local string) error {
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
