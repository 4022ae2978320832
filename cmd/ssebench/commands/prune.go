package commands

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

type pruneOptions struct {
	DryRun, All, JSON bool
}

func newCmdPrune(g *options.Global) *cobra.Command {
	o := &pruneOptions{}
	cmd := &cobra.Command{
		Use:   "prune [--dry-run] [--all]",
		Short: "Remove what runs left in containerd: imported images, stopped containers, leftover snapshots",
		Long: `Remove from containerd's "ssebench" namespace what ssebench left there: the
images it imported (not those of other tools, not other namespaces), the
containers of finished runs (--keep), the snapshots of unpacks that were
interrupted and no lease holds, and expired leases. containerd then frees
their content and unpacked layers. The local image store and the registry
are not touched: "ssebench store gc" cleans the store.

Runs remove the images they imported when they end, so this is for what
interrupted runs and "run --keep-images" left. Images kept with
--keep-images stay unless --all is given.`,
		Example: `  # What would go, and how much it takes
  ssebench prune --dry-run

  # Remove it, kept images too
  ssebench prune --all

  ssebench prune --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var ropts []runner.Option
			if g.ContainerdAddr != "" {
				ropts = append(ropts, runner.WithAddress(g.ContainerdAddr))
			}
			r, err := runner.New(cmd.Context(), ropts...)
			if err != nil {
				return err
			}
			defer r.Close()
			var popts []runner.PruneOption
			if o.DryRun {
				popts = append(popts, runner.PruneDryRun())
			}
			if o.All {
				popts = append(popts, runner.PruneAll())
			}
			p, err := r.Prune(cmd.Context(), popts...)
			if err != nil {
				return fmt.Errorf("pruning containerd namespace %s: %w", r.Namespace(), err)
			}
			if o.JSON {
				return writeJSONTo(cmd.OutOrStdout(), p)
			}
			w := cmd.OutOrStdout()
			if o.DryRun && !g.Quiet {
				for _, it := range p.Items {
					fmt.Fprintf(w, "%s\t%s\t%s\n", it.Kind, it.Name, units.Bytes(it.Bytes))
				}
			}
			fmt.Fprintln(w, p)
			return nil
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.DryRun, "dry-run", false, "list what would be removed, remove nothing")
	f.BoolVar(&o.All, "all", false, "also remove the images kept by run --keep-images")
	f.BoolVar(&o.JSON, "json", false, "print what was removed as JSON")
	return cmd
}
