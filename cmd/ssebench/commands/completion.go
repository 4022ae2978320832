package commands

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/agent"
	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// completer is a cobra completion function.
type completer = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)

// addCompletions makes the shell complete what ssebench can know: agent
// folders and task ids of the home, dataset names, the store's image names
// and the --pull values. Nothing is created to answer (the store is opened
// read-only, when there is one), and an error completes nothing.
func addCompletions(root *cobra.Command, g *options.Global) {
	agents := func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		home, err := g.HomeDir()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names, _ := agent.List(home)
		return names, cobra.ShellCompDirectiveNoFileComp
	}
	tasks := func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		// build-case's tasks are those of --benchmarks.
		if f := cmd.Flags().Lookup("benchmarks"); f != nil && f.Value.String() != "" {
			return tasksIn(f.Value.String()), cobra.ShellCompDirectiveNoFileComp
		}
		home, err := g.HomeDir()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ds := ""
		for _, name := range []string{"dataset", "local"} {
			if f := cmd.Flags().Lookup(name); f != nil && f.Changed && !strings.Contains(f.Value.String(), "/") {
				ds = f.Value.String()
			}
		}
		return homeTasks(home, ds), cobra.ShellCompDirectiveNoFileComp
	}
	datasets := func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		home, err := g.HomeDir()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return datasetNames(home), cobra.ShellCompDirectiveNoFileComp
	}
	images := func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		return storeNames(g, args), cobra.ShellCompDirectiveNoFileComp
	}
	oneImage := func(cmd *cobra.Command, args []string, s string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return images(cmd, args, s)
	}
	imageFlag := func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return storeNames(g, nil), cobra.ShellCompDirectiveNoFileComp
	}
	pull := func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{string(remote.PullMissing), string(remote.PullAlways), string(remote.PullNever)}, cobra.ShellCompDirectiveNoFileComp
	}
	_ = root.RegisterFlagCompletionFunc("pull", pull)

	flags := map[string]map[string]completer{
		"names":          {"task": tasks, "agent": agents, "dataset": datasets},
		"run":            {"task": tasks, "agent": agents, "runtime": imageFlag},
		"eval":           {"tasks": commaList(tasks), "agents": commaList(agents), "runtime": imageFlag},
		"mirror":         {"tasks": commaList(tasks), "agents": commaList(agents), "dataset": datasets},
		"build-case":     {"tasks": commaList(tasks)},
		"assemble tool":  {"task": tasks, "case": imageFlag, "runtime": imageFlag},
		"assemble agent": {"task": tasks, "agent": agents, "tool": imageFlag},
	}
	args := map[string]completer{
		"inspect":  oneImage,
		"verify":   oneImage,
		"push":     images,
		"save":     images,
		"mirror":   images,
		"store rm": images,
	}
	walk(root, func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), root.Name()+" ")
		for name, fn := range flags[path] {
			if fn != nil && c.Flags().Lookup(name) != nil {
				_ = c.RegisterFlagCompletionFunc(name, fn)
			}
		}
		if fn := args[path]; fn != nil && c.ValidArgsFunction == nil {
			c.ValidArgsFunction = fn
		}
	})
}

// commaList completes the last item of a comma-separated list flag
// (--agents a,b): the items typed so far are kept and not offered again.
func commaList(fn completer) completer {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		all, dir := fn(cmd, args, toComplete)
		i := strings.LastIndex(toComplete, ",")
		if i < 0 {
			return all, dir
		}
		typed := map[string]bool{}
		for _, s := range strings.Split(toComplete[:i], ",") {
			typed[s] = true
		}
		var out []string
		for _, s := range all {
			if !typed[s] {
				out = append(out, toComplete[:i+1]+s)
			}
		}
		return out, dir
	}
}

func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, sub := range c.Commands() {
		walk(sub, fn)
	}
}

// datasetNames lists the folders under home/datasets that have a
// dataset.yaml.
func datasetNames(home string) []string {
	m, _ := filepath.Glob(filepath.Join(home, "datasets", "*", task.DatasetFile))
	out := make([]string, 0, len(m))
	for _, p := range m {
		out = append(out, filepath.Base(filepath.Dir(p)))
	}
	sort.Strings(out)
	return out
}

// storeNames lists the names of the local store, those in skip left out,
// without creating or writing anything.
func storeNames(g *options.Global, skip []string) []string {
	s, err := g.LookStore(true)
	if err != nil || s == nil {
		return nil
	}
	defer s.Close()
	es, err := s.List()
	if err != nil {
		return nil
	}
	given := map[string]bool{}
	for _, a := range skip {
		if r, err := name.ParseReference(a); err == nil {
			given[r.Name()] = true
		}
	}
	var out []string
	for _, e := range es {
		if !given[e.Name] {
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out
}
