package commands

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/agent"
	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/task"
)

type namesOptions struct {
	Task, Dataset, Agent string
	JSON                 bool
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
		RunE: func(cmd *cobra.Command, _ []string) error {
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
			type row struct{ layer, name string }
			var rows []row
			if err := checkTask(home, o.Dataset, o.Task); err != nil {
				return err
			}
			dataset := o.Dataset
			if dataset == "" {
				dataset = findDataset(home, o.Task)
			}
			if dataset != "" {
				if base := taskBase(home, dataset, o.Task); base != "" {
					rows = append(rows, row{"base", n.Prefixed(base)})
				}
				rows = append(rows, row{"case", n.Case(dataset, o.Task)})
			}
			rows = append(rows, row{"tool", n.Tool(o.Task)})
			if o.Agent != "" {
				a, err := agent.Load(home, o.Agent)
				if err != nil {
					return err
				}
				rows = append(rows, row{"agent", n.Agent(a.Name, o.Task, a.Version)})
			}
			rows = append(rows, row{"runtime", n.Runtime()})

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
		},
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
