package task

// The task ids and datasets of an SSEBench home (its datasets/ folder), for
// the commands that take a task id or a dataset name.

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/internal/suggest"
)

// HomeTasks returns the task ids of the home's datasets (or of dataset
// alone when it is not ""), sorted and without duplicates: every folder
// under datasets/<name>/ that has a config.yaml or a Dockerfile.
func HomeTasks(home, dataset string) []string {
	ds := "*"
	if dataset != "" {
		ds = dataset
	}
	return TasksIn(filepath.Join(home, "datasets", ds))
}

// DatasetArg is the folder a --dataset argument names: a path when it has
// a slash or is "." or "..", else the dataset of that name under the
// home's datasets/, whatever folder of that name the working directory has
// (the checkout's examples/ is Go code, not the dataset "examples").
func DatasetArg(home, arg string) string {
	if strings.Contains(arg, "/") || arg == "." || arg == ".." {
		return arg
	}
	return filepath.Join(home, "datasets", arg)
}

// TasksIn lists the task folders of the dataset folders pattern matches
// (a folder, or a glob of folders).
func TasksIn(pattern string) []string {
	var ids []string
	seen := map[string]bool{}
	dirs, _ := filepath.Glob(filepath.Join(pattern, "*"))
	for _, d := range dirs {
		id := filepath.Base(d)
		if seen[id] || strings.HasPrefix(id, ".") {
			continue
		}
		for _, f := range []string{DockerfileName, ConfigFile, LegacyConfigFile} {
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

// CheckTask fails when no dataset of home (or dataset, when not "") has a
// folder for id, with the closest task id there is; and when several
// datasets have one and none was named.
func CheckTask(home, dataset, id string) error {
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
	ids := HomeTasks(home, dataset)
	if len(ids) == 0 {
		return fmt.Errorf("unknown task %q: %s has no task folders (pass --home or run from a checkout)", id, where)
	}
	return fmt.Errorf("unknown task %q: did you mean %q? (no folder for it under %s)", id, suggest.Closest(id, ids), where)
}

// PinnedBase returns the base a task pins (e.g. base-generic-go:1.0.0): from
// the dataset's manifest.json, else from the task's Dockerfile; "" when
// neither says.
func PinnedBase(home, dataset, id string) string {
	dir := filepath.Join(home, "datasets", dataset)
	if m, err := ReadManifest(filepath.Join(dir, ManifestFile)); err == nil {
		if t := m.Task(id); t != nil && t.Base != "" {
			return t.Base
		}
	}
	f, err := os.Open(filepath.Join(dir, id, DockerfileName))
	if err != nil {
		return ""
	}
	defer f.Close()
	base, err := Base(f)
	if err != nil {
		return ""
	}
	return base
}

// DatasetNames lists the folders under home/datasets that have a
// dataset.yaml.
func DatasetNames(home string) []string {
	m, _ := filepath.Glob(filepath.Join(home, "datasets", "*", DatasetFile))
	out := make([]string, 0, len(m))
	for _, p := range m {
		out = append(out, filepath.Base(filepath.Dir(p)))
	}
	sort.Strings(out)
	return out
}
