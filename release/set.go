package release

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/42-b3yond-6ug/ssebench/agent"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// ImageSet names the images a published set of tasks is made of, as
// `ssebench mirror` copies them: for each task of the dataset folders
// dirs (only those of tasks, when not empty) the base it pins (its
// manifest entry's, else its config's), its case image (tagged with the
// dataset's version when it has one), its tool image and the agent images
// of agents; and the runtime image when there is any other. A task of
// tasks that no dataset has is an error. The result is sorted and without
// duplicates.
func ImageSet(names naming.Names, dirs, tasks []string, agents []*agent.Agent) ([]string, error) {
	want := map[string]bool{}
	for _, id := range tasks {
		want[id] = true
	}
	set := map[string]bool{}
	found := map[string]bool{}
	for _, dir := range dirs {
		d, err := task.LoadDataset(dir)
		if err != nil {
			return nil, fmt.Errorf("reading dataset %s: %w", dir, err)
		}
		m, err := task.ReadManifest(filepath.Join(dir, task.ManifestFile))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		for _, t := range d.Tasks {
			if len(want) > 0 && !want[t.ID] {
				continue
			}
			found[t.ID] = true
			base := t.Base
			if m != nil {
				if mt := m.Task(t.ID); mt != nil && mt.Base != "" {
					base = mt.Base
				}
			}
			if base != "" {
				set[names.Prefixed(base)] = true
			}
			if d.Version != "" {
				set[names.CaseTagged(d.Name, t.ID, d.Version)] = true
			} else {
				set[names.Case(d.Name, t.ID)] = true
			}
			set[names.Tool(t.ID)] = true
			for _, a := range agents {
				set[names.Agent(a.Name, t.ID, a.Version)] = true
			}
		}
	}
	for id := range want {
		if !found[id] {
			return nil, fmt.Errorf("task %s is in none of the datasets %v", id, dirs)
		}
	}
	if len(set) > 0 {
		set[names.Runtime()] = true
	}
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Strings(out)
	return out, nil
}
