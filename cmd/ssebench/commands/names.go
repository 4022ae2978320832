package commands

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/pipeline/preflight"
	"github.com/42-b3yond-6ug/ssebench/task"
)

type namesOptions struct {
	Task, Dataset, Agent string
	JSON                 bool
}

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
	rows, err := preflight.TaskNames(home, n, o.Dataset, o.Task, o.Agent)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.JSON {
		m := map[string]string{}
		for _, r := range rows {
			m[r.Layer] = r.Name
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	}
	for _, r := range rows {
		fmt.Fprintf(out, "%s\t%s\n", r.Layer, r.Name)
	}
	return nil
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
