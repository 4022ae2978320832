package commands

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/oci"
)

// inspectTimeout is inspect's deadline for all its registry requests
// unless --registry-timeout says otherwise.
const inspectTimeout = 10 * time.Minute

type inspectOptions struct {
	Platform string
	JSON     bool
}

func newCmdInspect(g *options.Global) *cobra.Command {
	o := &inspectOptions{}
	cmd := &cobra.Command{
		Use:   "inspect REF",
		Short: "Show an image's platforms, config and layers",
		Long: `Show where an image comes from (the local store first, else its registry,
following --pull), the platforms of its index, its config (entrypoint, cmd,
env, workdir, user, labels) and each layer with digest, size, diffID and what
it is (its history comment). Layers are not downloaded.`,
		Example: `  ssebench inspect localhost:5000/ssebench/tool/kvconf-12-afb9ee1:0.1.0-dev
  ssebench inspect --platform linux/arm64 --json localhost:5000/ssebench/runtime:0.1.0-dev`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Manifests and configs only: a registry that takes longer
			// is holding the command, not serving it.
			g.DefaultRegistryTimeout = inspectTimeout
			res, done, err := resolve(cmd, g, args[0], o.Platform, true)
			if err != nil {
				return err
			}
			defer done()
			out, err := oci.Describe(res.Image, res.Index)
			if err != nil {
				return fmt.Errorf("inspecting %s: %w", args[0], err)
			}
			out.Name, out.Source = res.Ref.Name(), "store"
			if res.FromRegistry {
				out.Source = "registry"
			}
			if o.JSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			out.WriteText(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Platform, "platform", "", "platform to pick from an index (default linux/<host arch>)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	return cmd
}
