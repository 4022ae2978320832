package commands

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/agent"
	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/task"
)

type namesOptions struct {
	Task, Dataset, Agent string
	JSON                 bool
}

// nameRow is one line of `ssebench names`: a layer and its image's name.
type nameRow struct{ layer, name string }

func runNames(cmd *cobra.Command, g *options.Global, o *namesOptions) error {
	if o.Task == "" {
		return fmt.Errorf("--task is required: pass the task id, e.g. --task kvconf-12-afb9ee1")
	}
	if err := task.CheckID("--task", o.Task); err != nil {
		return err
	}
	n, err := g.Names()
	if err != nil {
		return err
	}
	home, err := g.HomeDir()
	if err != nil {
		return err
	}
	rows, err := taskNames(home, n, o)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.JSON {
		m := map[string]string{}
		for _, r := range rows {
			m[r.layer] = r.name
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	}
	for _, r := range rows {
		fmt.Fprintf(out, "%s\t%s\n", r.layer, r.name)
	}
	return nil
}

// taskNames are the images of o's task: its base and case image when its
// dataset is known, its tool image, o's agent's image, and the runtime.
func taskNames(home string, n naming.Names, o *namesOptions) ([]nameRow, error) {
	if err := task.CheckTask(home, o.Dataset, o.Task); err != nil {
		return nil, err
	}
	var rows []nameRow
	dataset := o.Dataset
	if dataset == "" {
		dataset = findDataset(home, o.Task)
	}
	if dataset != "" {
		if base := task.PinnedBase(home, dataset, o.Task); base != "" {
			rows = append(rows, nameRow{"base", n.Prefixed(base)})
		}
		rows = append(rows, nameRow{"case", n.Case(dataset, o.Task)})
	}
	rows = append(rows, nameRow{"tool", n.Tool(o.Task)})
	if o.Agent != "" {
		a, err := agent.Load(home, o.Agent)
		if err != nil {
			return nil, err
		}
		rows = append(rows, nameRow{"agent", n.Agent(a.Name, o.Task, a.Version)})
	}
	return append(rows, nameRow{"runtime", n.Runtime()}), nil
}

func newCmdNames(g *options.Global) *cobra.Command {
	o := &namesOptions{}
	cmd := &cobra.Command{
		Use:   "names --task ID [--dataset NAME] [--agent FOLDER]",
		Short: "Print the image name of every layer of a task",
		Long: `Print one line per layer, LAYER<TAB>NAME: base (when the task's base is
known from its dataset), case (when the dataset is known), tool, agent (with
--agent) and runtime. Names follow REGISTRY (--registry, SSEBENCH_REGISTRY,
.env) and VERSION.`,
		Example: `  ssebench names --task kvconf-12-afb9ee1 --dataset examples --agent dummy
  ssebench names --task kvconf-12-afb9ee1 --registry localhost:5000/ssebench --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runNames(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Task, "task", "", "task id (required)")
	f.StringVar(&o.Dataset, "dataset", "", "dataset name (default: the one dataset under the home that has the task)")
	f.StringVar(&o.Agent, "agent", "", "agent folder under agents/")
	f.BoolVar(&o.JSON, "json", false, "print a JSON object instead of lines")
	return cmd
}

// findDataset returns the name of the only dataset under home that has a
// folder for task, or "".
func findDataset(home, id string) string {
	if dir := task.FindDataset(home, id); dir != "" {
		return filepath.Base(dir)
	}
	return ""
}
