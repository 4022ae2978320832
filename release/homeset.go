package release

import (
	"path/filepath"

	"github.com/42-b3yond-6ug/ssebench/agent"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// HomeImageSet is ImageSet of home's datasets and agents: the datasets
// named (a name under datasets/, or a folder), else every dataset of the
// home, their tasks (only those of tasks, when not empty), and the agent
// images of the agent folders agentFolders.
func HomeImageSet(home string, names naming.Names, datasets, tasks, agentFolders []string) ([]string, error) {
	var dirs []string
	for _, d := range datasets {
		dirs = append(dirs, task.DatasetArg(home, d))
	}
	if len(dirs) == 0 {
		all, err := filepath.Glob(filepath.Join(home, "datasets", "*", task.DatasetFile))
		if err != nil {
			return nil, err
		}
		for _, a := range all {
			dirs = append(dirs, filepath.Dir(a))
		}
	}
	var agents []*agent.Agent
	for _, f := range agentFolders {
		a, err := agent.Load(home, f)
		if err != nil {
			return nil, err
		}
		agents = append(agents, a)
	}
	return ImageSet(names, dirs, tasks, agents)
}
