package commands

import (
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/task"
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

// taskEntry is one line of `tasks list`.
type taskEntry struct {
	ID       string   `json:"id"`
	Dataset  string   `json:"dataset"`
	Version  string   `json:"version"`
	Language string   `json:"language"`
	Project  string   `json:"project"`
	Arch     []string `json:"arch"`
	Checks   []string `json:"checks"`
	// Image is the case image, registry-prefixed, pinned by digest when
	// the lock pins it (Pinned), else tagged with the dataset version.
	Image   string `json:"image"`
	Pinned  bool   `json:"pinned"`
	Catalog string `json:"catalog"`
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
	entries, err := catalogTasks(cmd, g, names, locs)
	if err != nil {
		return err
	}
	if asJSON {
		if entries == nil {
			entries = []taskEntry{}
		}
		return writeJSONTo(cmd.OutOrStdout(), entries)
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tDATASET\tLANGUAGE\tARCH\tCASE IMAGE")
	for _, e := range entries {
		// Every field is a catalog's: the ids and names are checked
		// when it is opened, the free text is escaped.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", printable(e.ID), printable(e.Dataset+" "+e.Version), printable(e.Language), printable(strings.Join(e.Arch, ",")), printable(e.Image))
	}
	return tw.Flush()
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
	all, _ := filepath.Glob(filepath.Join(home, "datasets", "*", task.ManifestFile))
	if len(all) == 0 {
		return nil, fmt.Errorf("no catalog: pass --catalog, set %s, or generate manifest.json in a dataset under %s", catalog.CatalogEnv, filepath.Join(home, "datasets"))
	}
	var locs []string
	for _, a := range all {
		locs = append(locs, filepath.Dir(a))
	}
	return locs, nil
}

// catalogTasks opens each catalog of locs and lists its tasks, printing
// the catalogs' warnings on stderr.
func catalogTasks(cmd *cobra.Command, g *options.Global, names naming.Names, locs []string) ([]taskEntry, error) {
	ropts, err := g.RegistryOptions(nil, nil)
	if err != nil {
		return nil, err
	}
	var entries []taskEntry
	for _, l := range locs {
		c, err := catalog.Open(cmd.Context(), l, catalog.WithRemote(ropts...), catalog.WithLock(g.Lookup(catalog.LockEnv)))
		if err != nil {
			return nil, err
		}
		for _, w := range c.Warnings {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
		}
		for _, t := range c.Manifest.Tasks {
			ref, pinned, warning, err := c.CaseRef(names.Registry, t.ID)
			if err != nil {
				return nil, err
			}
			if warning != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", warning)
			}
			entries = append(entries, taskEntry{
				ID: t.ID, Dataset: c.Manifest.Dataset, Version: c.Manifest.Version, Language: t.Language, Project: t.Project,
				Arch: t.Arch, Checks: t.Checks, Image: ref, Pinned: pinned, Catalog: l,
			})
		}
	}
	return entries, nil
}
