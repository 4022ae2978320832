package commands

import (
	"fmt"

	"github.com/spf13/cobra"

	ssebench "github.com/42-b3yond-6ug/ssebench"
	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
)

// New returns the root command with every subcommand.
func New() *cobra.Command {
	g := &options.Global{}
	root := &cobra.Command{
		Use:   "ssebench",
		Short: "Build, assemble, move and run SSEBench images without Docker",
		Long: `ssebench builds the four images of an SSEBench run (base, case, tool, agent).
Base and case images come from BuildKit; tool and agent images are assembled
in Go as OCI layers on top of them, stored in a local OCI layout store or
pushed to a registry, and run with containerd.`,
		Example: `  # The names of every image of a task
  ssebench names --task kvconf-12-afb9ee1 --dataset examples --agent dummy

  # What an image holds
  ssebench inspect localhost:5000/ssebench/runtime:0.1.0-dev`,
		Version:       ssebench.Version(),
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	groupCommand(root)
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return preRun(cmd, g) }
	options.AddGlobal(root, g)
	root.AddCommand(
		newCmdNames(g),
		newCmdInspect(g),
		newCmdAssemble(g),
		newCmdVerify(g),
		newCmdDataset(g),
		newCmdTasks(g),
		newCmdBaseImages(g),
		newCmdBuildCase(g),
		newCmdRuntime(g),
		newCmdRun(g),
		newCmdRuns(g),
		newCmdEval(g),
		newCmdGrade(g),
		newCmdModelServer(),
		newCmdPush(g),
		newCmdMirror(g), newCmdCopy(g), newCmdTag(g),
		newCmdSave(g),
		newCmdLoad(g),
		newCmdStore(g),
		newCmdPrune(g),
		newCmdLogin(g),
		newCmdLogout(),
	)
	addCompletions(root, g)
	withBashShim(root)
	return root
}

// groupCommand makes cmd, which only holds subcommands, print its help when
// called alone and fail on anything else. Left to cobra, `ssebench dataset
// valdate DIR` prints the help and exits 0, so a typo in a script passes
// unnoticed, and an unknown top-level command gives a multi-line error.
func groupCommand(cmd *cobra.Command) *cobra.Command {
	cmd.Args = unknownSubcommand
	cmd.DisableFlagsInUseLine = true
	cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	return cmd
}

// unknownSubcommand refuses any argument of a group command in one line,
// with the closest subcommand when there is one.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	hint := ""
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		hint = fmt.Sprintf(": did you mean %q?", s[0])
	}
	return fmt.Errorf("unknown command %q for %q%s (run '%s --help' for the commands)", args[0], cmd.CommandPath(), hint, cmd.CommandPath())
}
