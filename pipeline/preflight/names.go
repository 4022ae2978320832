package preflight

import (
	"path/filepath"

	"github.com/42-b3yond-6ug/ssebench/agent"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// Name is one image of a task: its layer (base, case, tool, agent or
// runtime) and the image's name.
type Name struct{ Layer, Name string }

// TaskNames are the images of task id of home, as `ssebench names` lists
// them under n: its base and case image when its dataset is known
// (dataset, else the one dataset of the home that has the task), its
// tool image, the image of the agent folder agentFolder when it is set,
// and the runtime. A task or agent the home lacks is an error.
func TaskNames(home string, n naming.Names, dataset, id, agentFolder string) ([]Name, error) {
	if err := task.CheckTask(home, dataset, id); err != nil {
		return nil, err
	}
	var rows []Name
	if dataset == "" {
		if dir := task.FindDataset(home, id); dir != "" {
			dataset = filepath.Base(dir)
		}
	}
	if dataset != "" {
		if base := task.PinnedBase(home, dataset, id); base != "" {
			rows = append(rows, Name{"base", n.Prefixed(base)})
		}
		rows = append(rows, Name{"case", n.Case(dataset, id)})
	}
	rows = append(rows, Name{"tool", n.Tool(id)})
	if agentFolder != "" {
		a, err := agent.Load(home, agentFolder)
		if err != nil {
			return nil, err
		}
		rows = append(rows, Name{"agent", n.Agent(a.Name, id, a.Version)})
	}
	return append(rows, Name{"runtime", n.Runtime()}), nil
}
