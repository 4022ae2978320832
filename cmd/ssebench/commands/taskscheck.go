package commands

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/agent"
	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// ExitMustBuild is the exit status of `tasks check` (and `eval --check`)
// when an image of the plan must be built.
const ExitMustBuild = 2

// imageCheck is one image of a preflight: where it is and for which
// platforms.
type imageCheck struct {
	Task      string   `json:"task"`
	Agent     string   `json:"agent,omitempty"`
	Kind      string   `json:"kind"`
	Ref       string   `json:"ref"`
	Where     string   `json:"where"`
	Digest    string   `json:"digest,omitempty"`
	Platforms []string `json:"platforms"`
	Build     bool     `json:"build"`
	// Fix is the command that makes a missing image a run does not make
	// itself (a base image, the runtime); "" for the others.
	Fix string `json:"fix,omitempty"`
}

func newCmdTasksCheck(g *options.Global) *cobra.Command {
	var agents []string
	var platform string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check [DATASET|TASK...] [--agents a,b] [--platform OS/ARCH] [--json]",
		Short: "Say which images of the tasks exist, for which platform, and which must be built",
		Long: `A preflight, as SWE-bench's images check: for each task (every task of the
named datasets, or the named task ids; default: every dataset under the
home) and each --agents folder, the base, case, tool and agent images, and
the runtime image, where each is (the local store, else REGISTRY, asked
with HEAD-sized reads only: no layer is pulled, nothing is written), the
platforms it has, and what a run must do for --platform (default
linux/<host arch>): ok, build (a run builds it), make (a base image a
missing case image is built on, or the runtime a missing tool image is
assembled on: a run does not make those, and the command that does is
printed after the table), or - (missing, and not needed). Nothing is built
and no model is called.

Exit status: 0 when every image exists for the platform, 2 when one must be
built (a run would build it first), 1 on an error.`,
		Example: `  ssebench tasks check examples --agents dummy
  ssebench tasks check kvconf-12-afb9ee1 --agents dummy,patcher --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTasksCheck(cmd, g, args, agents, platform, asJSON)
		},
	}
	cmd.Flags().StringSliceVar(&agents, "agents", nil, "agent folders whose agent images to check")
	cmd.Flags().StringVar(&platform, "platform", "", "the platform the images must have (default linux/<host arch>)")
	addJSONFlag(cmd, &asJSON)
	return cmd
}

func runTasksCheck(cmd *cobra.Command, g *options.Global, args, agentNames []string, platform string, asJSON bool) error {
	p, err := options.ParsePlatform(platform)
	if err != nil {
		return err
	}
	want := platformString(p)
	names, err := g.Names()
	if err != nil {
		return err
	}
	home, err := g.HomeDir()
	if err != nil {
		return err
	}
	s, ropts, err := g.StoreOptions(nil)
	if err != nil {
		return err
	}
	defer s.Close()
	checks, err := runNeeds(cmd.Context(), g, names, home, args, nil, agentNames, runtimeRef(g, names, ""), want, s, ropts)
	if err != nil {
		return err
	}
	build := 0
	for _, c := range checks {
		if c.Build {
			build++
		}
	}
	if asJSON {
		err = writeJSONTo(cmd.OutOrStdout(), checks)
	} else {
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK\tKIND\tAGENT\tWHERE\tPLATFORMS\tACTION\tIMAGE")
		for _, c := range checks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", orDash(c.Task), c.Kind, orDash(c.Agent), c.Where, orDash(strings.Join(c.Platforms, ",")), checkAction(c), c.Ref)
		}
		tw.Flush()
		fmt.Fprintf(cmd.OutOrStdout(), "%d of %s must be built for %s\n", build, units.Plural(len(checks), "image"), want)
		if fixes := fixLines(checks); len(fixes) > 0 {
			fmt.Fprintf(cmd.OutOrStdout(), "a run does not make the base images or the runtime; make what is missing first:\n")
			for _, f := range fixes {
				fmt.Fprintf(cmd.OutOrStdout(), "  %s\n", f)
			}
			if strings.Contains(strings.Join(fixes, " "), osImagePlaceholder) {
				fmt.Fprintf(cmd.OutOrStdout(), "(%s)\n", osImageNote)
			}
		}
	}
	if err != nil {
		return err
	}
	if build > 0 {
		return &ExitError{Code: ExitMustBuild}
	}
	return nil
}

// checkAction is a check's ACTION: ok, build (a run builds it), make (a
// run needs it and does not make it: Fix does), or - (missing and not
// needed: its case or tool images exist).
func checkAction(c imageCheck) string {
	switch {
	case c.Fix != "":
		return "make"
	case c.Build:
		return "build"
	case c.Where == "missing":
		return "-"
	}
	return "ok"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

func platformString(p *v1.Platform) string {
	if p == nil {
		return "linux/" + runtime.GOARCH
	}
	return p.OS + "/" + p.Architecture
}

// checkPlan lists the images of the tasks args names (datasets or task
// ids; none means every dataset) and of agents.
func checkPlan(home string, names naming.Names, args, agentNames []string) ([]imageCheck, error) {
	all, err := filepath.Glob(filepath.Join(home, "datasets", "*", task.DatasetFile))
	if err != nil {
		return nil, err
	}
	var datasets []*task.Dataset
	for _, a := range all {
		d, err := task.LoadDataset(filepath.Dir(a))
		if err != nil {
			return nil, fmt.Errorf("reading dataset %s: %w", filepath.Dir(a), err)
		}
		datasets = append(datasets, d)
	}
	var agents []*agent.Agent
	for _, f := range agentNames {
		a, err := agent.Load(home, f)
		if err != nil {
			return nil, err
		}
		agents = append(agents, a)
	}
	type pick struct {
		d *task.Dataset
		t *task.Task
	}
	var picks []pick
	seen := map[string]bool{}
	add := func(d *task.Dataset, t *task.Task) {
		if !seen[d.Name+"/"+t.ID] {
			seen[d.Name+"/"+t.ID] = true
			picks = append(picks, pick{d, t})
		}
	}
	for _, a := range args {
		found := false
		if st, err := os.Stat(filepath.Join(a, task.DatasetFile)); err == nil && !st.IsDir() {
			// A dataset folder outside the home (eval --local DIR).
			d, err := task.LoadDataset(a)
			if err != nil {
				return nil, fmt.Errorf("reading dataset %s: %w", a, err)
			}
			for _, t := range d.Tasks {
				add(d, t)
			}
			continue
		}
		for _, d := range datasets {
			if d.Name == a || filepath.Base(filepath.Clean(a)) == d.Name {
				found = true
				for _, t := range d.Tasks {
					add(d, t)
				}
				continue
			}
			for _, t := range d.Tasks {
				if t.ID == a {
					found = true
					add(d, t)
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("%q is neither a dataset nor a task under %s: run `ssebench tasks list` for the names", a, filepath.Join(home, "datasets"))
		}
	}
	if len(args) == 0 {
		for _, d := range datasets {
			for _, t := range d.Tasks {
				add(d, t)
			}
		}
	}
	var out []imageCheck
	for _, p := range picks {
		t := p.t
		if t.Base != "" {
			out = append(out, imageCheck{Task: t.ID, Kind: "base", Ref: names.Prefixed(t.Base)})
		}
		out = append(out,
			imageCheck{Task: t.ID, Kind: "case", Ref: names.Case(p.d.Name, t.ID)},
			imageCheck{Task: t.ID, Kind: "tool", Ref: names.Tool(t.ID)})
		for _, a := range agents {
			out = append(out, imageCheck{Task: t.ID, Kind: "agent", Agent: a.Name, Ref: names.Agent(a.Name, t.ID, a.Version)})
		}
	}
	return out, nil
}

// locate finds c's image in the store, else (when REGISTRY is configured)
// in its registry, reading manifests and configs only.
func locate(ctx context.Context, s *store.Store, ropts []remote.Option, askRegistry bool, c *imageCheck) error {
	c.Where, c.Platforms = "missing", []string{}
	ref, err := name.ParseReference(c.Ref)
	if err != nil {
		return fmt.Errorf("image name %q of task %s: %w", c.Ref, c.Task, err)
	}
	if desc, err := s.Descriptor(ref); err == nil {
		content, err := storeContent(s, ref)
		if err != nil {
			return err
		}
		c.Where, c.Digest = "store", desc.Digest.String()
		c.Platforms, err = platformsOf(content)
		return err
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if !askRegistry {
		return nil
	}
	content, desc, err := remote.Fetch(ctx, c.Ref, ropts...)
	if remote.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	c.Where, c.Digest = "registry", desc.Digest.String()
	c.Platforms, err = platformsOf(content)
	return err
}

// platformsOf lists the platforms of an image (its config's) or an index
// (its manifests').
func platformsOf(content any) ([]string, error) {
	switch c := content.(type) {
	case v1.ImageIndex:
		im, err := c.IndexManifest()
		if err != nil {
			return nil, err
		}
		var out []string
		for _, m := range im.Manifests {
			if m.Platform != nil && m.Platform.OS != "unknown" {
				out = append(out, m.Platform.OS+"/"+m.Platform.Architecture)
			}
		}
		sort.Strings(out)
		return out, nil
	case v1.Image:
		cf, err := c.ConfigFile()
		if err != nil {
			return nil, err
		}
		return []string{cf.OS + "/" + cf.Architecture}, nil
	}
	return []string{}, nil
}
