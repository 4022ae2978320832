package commands

import (
	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/internal/commands/options"
)

func newCmdInspect(g *options.Global) *cobra.Command {
	return &cobra.Command{Use: "inspect REF", Short: "Show an image's platforms, config and layers", Hidden: true}
}

func taskBase(home, dataset, task string) string { return "" }
