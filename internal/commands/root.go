package commands

import (
	"io"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	ssebench "github.com/42-b3yond-6ug/ssebench"
	"github.com/42-b3yond-6ug/ssebench/internal/commands/options"
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
  ssebench names --task gjson-196-bf4efcb --dataset pilot --agent dummy

  # What an image holds
  ssebench inspect localhost:5000/ssebench/runtime:0.1.0-dev`,
		Version:       ssebench.Version(),
		SilenceUsage:  true,
		SilenceErrors: false,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.PersistentPreRun = func(*cobra.Command, []string) {
		// containerd's and BuildKit's libraries log through logrus; their
		// warnings (no fsverity here, say) are noise unless asked for.
		if !g.Verbose {
			logrus.SetOutput(io.Discard)
		}
	}
	options.AddGlobal(root, g)
	root.AddCommand(
		newCmdNames(g),
		newCmdInspect(g),
		newCmdAssemble(g),
		newCmdVerify(g),
		newCmdDataset(g),
		newCmdBaseImages(g),
		newCmdBuildCase(g),
		newCmdRuntime(g),
		newCmdRun(g),
		newCmdPush(g),
		newCmdMirror(g),
		newCmdSave(g),
		newCmdLoad(g),
	)
	return root
}
