package commands

import (
	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/task/catalog"
)

func newCmdTasks(g *options.Global) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "tasks",
		Short:   "List the tasks of catalogs and datasets",
		Example: `  ssebench tasks list --catalog oci://localhost:5000/ssebench/catalog/examples:examples-v1`,
	}
	cmd.AddCommand(newCmdTasksList(g), newCmdTasksCheck(g))
	return groupCommand(cmd)
}

func newCmdTasksList(g *options.Global) *cobra.Command {
	var loc string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list [--catalog LOC] [--json]",
		Short: "List the tasks of a catalog (default: every dataset under the home)",
		Long: `List every task of the catalog: id, language, arch, and the case image
runs pull, registry-prefixed and pinned by digest where the catalog's
images lock pins it. A catalog is a folder (its manifest.json and
images.lock.json), a manifest.json path, an https:// URL of a manifest.json
pinned with "#sha256=<hex>" (and its lock with "&lock-sha256=<hex>"), or
oci://REGISTRY/catalog/<dataset>:<version>, the artifact "dataset publish"
pushes (whose images are under REGISTRY). Without --catalog, SSEBENCH_CATALOG
names it, else every dataset under the home's datasets/ is listed.
SSEBENCH_IMAGES_LOCK replaces the catalog's lock. A lock that is malformed,
stale or missing is a warning on stderr.`,
		Example: `  ssebench tasks list
  ssebench tasks list --catalog datasets/examples --json
  ssebench tasks list --catalog oci://localhost:5000/ssebench/catalog/examples:examples-v1
  ssebench tasks list --catalog 'https://example.invalid/examples/manifest.json#sha256=<hex>'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTasksList(cmd, g, loc, asJSON) },
	}
	cmd.Flags().StringVar(&loc, "catalog", "", "catalog: folder, manifest.json, pinned https:// URL or oci://REGISTRY/catalog/<dataset>:<version> (default $"+catalog.CatalogEnv+", else every dataset under the home)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the tasks as a JSON array")
	return cmd
}

func runTasksList(cmd *cobra.Command, g *options.Global, loc string, asJSON bool) error {
	names, err := g.Names()
	if err != nil {
		return err
	}
	locs, err := taskCatalogs(g, loc)
	if err != nil {
		return err
	}
	ropts, err := g.RegistryOptions(nil, nil)
	if err != nil {
		return err
	}
	entries, err := catalog.List(cmd.Context(), locs, names.Registry, cmd.ErrOrStderr(), catalog.WithRemote(ropts...), catalog.WithLock(g.Lookup(catalog.LockEnv)))
	if err != nil {
		return err
	}
	if asJSON {
		if entries == nil {
			entries = []catalog.Entry{}
		}
		return writeJSONTo(cmd.OutOrStdout(), entries)
	}
	return catalog.WriteTable(cmd.OutOrStdout(), entries)
}

// taskCatalogs are the catalogs tasks list reads: --catalog, else
// SSEBENCH_CATALOG, else every dataset of the home with a manifest.
func taskCatalogs(g *options.Global, loc string) ([]string, error) {
	if loc == "" {
		loc = g.Lookup(catalog.CatalogEnv)
	}
	if loc != "" {
		return []string{loc}, nil
	}
	home, err := g.HomeDir()
	if err != nil {
		return nil, err
	}
	return catalog.HomeCatalogs(home)
}
