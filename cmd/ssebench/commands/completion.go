package commands

import (
	"fmt"
	"io"
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
			return task.TasksIn(f.Value.String()), cobra.ShellCompDirectiveNoFileComp
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
		return task.HomeTasks(home, ds), cobra.ShellCompDirectiveNoFileComp
	}
	datasets := func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		home, err := g.HomeDir()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return task.DatasetNames(home), cobra.ShellCompDirectiveNoFileComp
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

// storeNames lists the names of the local store, those in skip left out,
// without creating or writing anything.
func storeNames(g *options.Global, skip []string) []string {
	s, err := g.LookStore(true)
	if err != nil || s == nil {
		return nil
	}
	defer s.Close()
	var given []string
	for _, a := range skip {
		if r, err := name.ParseReference(a); err == nil {
			given = append(given, r.Name())
		}
	}
	out, _ := s.Names(given...)
	return out
}

// bashShim is what the bash script needs of the bash-completion package,
// defined only when that package is not loaded: cobra's script calls
// _get_comp_words_by_ref, so without the package (a minimal Debian or
// container image) every <TAB> printed "command not found". It splits the
// line as bash did (COMP_WORDS), which is all ssebench's words need.
const bashShim = `# Without the bash-completion package: the one function of it this
# script uses, minimal (words as bash split them).
if ! declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
_get_comp_words_by_ref() {
    while [[ $# -gt 0 && $1 == -* ]]; do
        case $1 in -n|-i|-c) shift ;; esac
        shift
    done
    local __v
    for __v in "$@"; do
        case $__v in
        cur) cur=${COMP_WORDS[COMP_CWORD]} ;;
        prev) prev=${COMP_WORDS[COMP_CWORD-1]} ;;
        words) words=("${COMP_WORDS[@]}") ;;
        cword) cword=$COMP_CWORD ;;
        esac
    done
}
fi
`

// withBashShim replaces cobra's completion command by one whose bash
// script works without the bash-completion package (see bashShim); zsh,
// fish and PowerShell are cobra's scripts as they are.
func withBashShim(root *cobra.Command) {
	root.CompletionOptions.DisableDefaultCmd = true
	var noDesc bool
	gen := map[string]func(*cobra.Command, io.Writer) error{
		"bash": func(c *cobra.Command, w io.Writer) error {
			if _, err := io.WriteString(w, bashShim); err != nil {
				return err
			}
			return c.Root().GenBashCompletionV2(w, !noDesc)
		},
		"zsh": func(c *cobra.Command, w io.Writer) error {
			if noDesc {
				return c.Root().GenZshCompletionNoDesc(w)
			}
			return c.Root().GenZshCompletion(w)
		},
		"fish": func(c *cobra.Command, w io.Writer) error { return c.Root().GenFishCompletion(w, !noDesc) },
		"powershell": func(c *cobra.Command, w io.Writer) error {
			if noDesc {
				return c.Root().GenPowerShellCompletion(w)
			}
			return c.Root().GenPowerShellCompletionWithDesc(w)
		},
	}
	cmd := &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print the shell completion script",
		Long: `Print the completion script of a shell. Load it in the current shell with

  source <(ssebench completion bash)

or write it where the shell reads completions. The bash script works with
or without the bash-completion package.`,
		Example: `  ssebench completion bash > ~/.local/share/bash-completion/completions/ssebench
  ssebench completion zsh > "${fpath[1]}/_ssebench"
  ssebench completion fish > ~/.config/fish/completions/ssebench.fish`,
		Args:                  cobra.ExactArgs(1),
		ValidArgs:             []string{"bash", "zsh", "fish", "powershell"},
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			g, ok := gen[args[0]]
			if !ok {
				return fmt.Errorf("no completion for shell %q: use bash, zsh, fish or powershell", args[0])
			}
			return g(cmd, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&noDesc, "no-descriptions", false, "leave out the descriptions of the candidates")
	root.AddCommand(cmd)
}
