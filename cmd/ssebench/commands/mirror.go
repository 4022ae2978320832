package commands

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/agent"
	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/task"
)

type mirrorOptions struct {
	To, Platform  string
	Datasets      []string
	Tasks, Agents []string
	Jobs          int
	NoTaskImages  bool
	All           string
	DryRun, JSON  bool
}

func newCmdMirror(g *options.Global) *cobra.Command {
	o := &mirrorOptions{}
	cmd := &cobra.Command{
		Use:   "mirror --to PREFIX [--dataset DIR]... [--tasks a,b] [--agents x,y] [--platform OS/ARCH] [--dry-run] [REF...] | mirror --all SRCPREFIX --to PREFIX",
		Short: "Copy the images of tasks and agents from REGISTRY to another prefix, each blob once",
		Long: `Copy every image a set of tasks needs (base, case, tool, agent and runtime,
named from REGISTRY and VERSION) to the same names under PREFIX, keeping
digests: manifests are copied byte for byte. Each unique blob moves once:
blobs shared between images are uploaded once and mounted for the others,
and within one registry every blob is mounted, so no layer bytes move.

The tasks are those of --dataset (a name under the home's datasets/, or a
folder path with a slash, e.g. ./mine; default: every dataset), narrowed
by --tasks; agent images are made for each --agents folder. The case image
is tagged with the dataset version. More images may be named as arguments. Source images that do not
exist are listed together at the end, and the command then fails.

--all SRCPREFIX copies, as skopeo sync does, every tag of every repository
at or below SRCPREFIX (a registry host, or a host and a path), found in the
registry's catalog (/v2/_catalog) and tag lists: SRCPREFIX/a/b:t goes to
PREFIX/a/b:t. A catalog or tag list that names an invalid repository or tag
(such as "..") or leaves the registry, or pages beyond the limits, is
refused; a registry that hides its catalog cannot be mirrored this way.

--dry-run writes nothing: it prints each image's target and digest, its
blobs (count and bytes), which the target already has, which would be
mounted and which uploaded, and whether the tag is new, unchanged or moves;
--json prints the same as one document.`,
		Example: `  ssebench mirror --registry localhost:5000/ssebench --to mirror.lan:5000/ssebench --dataset examples --agents dummy
  ssebench mirror --to localhost:5000/ssebench-archive --tasks kvconf-12-afb9ee1 --platform linux/amd64
  ssebench mirror --all localhost:5000/ssebench --to mirror.lan:5000/ssebench --dry-run`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.To == "" {
				return fmt.Errorf("--to is required: name the target prefix, e.g. --to mirror.lan:5000/ssebench")
			}
			if o.All != "" && (len(o.Datasets) > 0 || len(o.Tasks) > 0 || len(o.Agents) > 0 || len(args) > 0 || o.NoTaskImages) {
				return fmt.Errorf("--all copies every image under its prefix: drop --dataset, --tasks, --agents, --only-args and the image arguments")
			}
			if err := remote.CheckPrefix(o.To); err != nil {
				return fmt.Errorf("--to: %w", err)
			}
			if o.All != "" {
				all, to := strings.TrimRight(o.All, "/"), strings.TrimRight(o.To, "/")
				if to == all || strings.HasPrefix(to, all+"/") {
					return fmt.Errorf("--to %s is under --all %s: the copy would be copied again by the next run; name a prefix beside it", o.To, o.All)
				}
			}
			p, err := options.ParsePlatform(o.Platform)
			if err != nil {
				return err
			}
			var refs []string
			from := ""
			if o.All == "" {
				names, err := g.Names()
				if err != nil {
					return err
				}
				home, err := g.HomeDir()
				if err != nil {
					return err
				}
				if refs, err = mirrorSet(home, names, o); err != nil {
					return err
				}
				refs = append(refs, args...)
				if len(refs) == 0 {
					return fmt.Errorf("no images to mirror: name a dataset with tasks (--dataset) or images as arguments")
				}
				from = names.Registry
			}
			s, ropts, err := g.StoreOptions(nil)
			if err != nil {
				return err
			}
			defer s.Close()
			if o.All != "" {
				from = strings.TrimRight(o.All, "/")
				if refs, err = remote.ListAll(cmd.Context(), from, ropts...); err != nil {
					return err
				}
				if len(refs) == 0 {
					return fmt.Errorf("no images under %s: the registry's catalog lists no repository with a tag there", from)
				}
			}
			if o.DryRun {
				plan, err := remote.PlanMirror(cmd.Context(), refs, from, o.To, append(ropts, remote.WithIndexPlatform(p))...)
				if err != nil {
					return err
				}
				if err := printPlan(cmd.OutOrStdout(), plan, o.JSON); err != nil {
					return err
				}
				// A dry run fails where the copy would: a plan with
				// missing sources is not one to carry out.
				if len(plan.Missing) > 0 {
					return mirrorMissing(&remote.MissingError{Refs: plan.Missing}, o)
				}
				return nil
			}
			pp := NewProgressPrinter(cmd.ErrOrStderr(), ProgressQuiet(g.Quiet))
			ropts = append(ropts, remote.WithJobs(o.Jobs), remote.WithBlobProgress(pp), remote.WithIndexPlatform(p))
			rep, err := remote.Mirror(cmd.Context(), refs, from, o.To, ropts...)
			pp.Finish(nil)
			if rep != nil {
				if o.JSON {
					out := mirrorOutput{Images: []mirroredJSON{}, Missing: rep.Missing, Push: pushReportJSON(&rep.Push)}
					for _, im := range rep.Images {
						out.Images = append(out.Images, mirroredJSON{Source: im.Source, Target: im.Target, Digest: im.Digest.String()})
					}
					if jerr := writeJSONTo(cmd.OutOrStdout(), out); jerr != nil && err == nil {
						err = jerr
					}
				} else {
					for _, im := range rep.Images {
						fmt.Fprintf(cmd.OutOrStdout(), "%s@%s\n", im.Target, im.Digest)
					}
				}
				fmt.Fprintln(cmd.ErrOrStderr(), rep.String())
			}
			return mirrorMissing(err, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.To, "to", "", "target prefix (required), e.g. mirror.lan:5000/ssebench")
	f.StringSliceVar(&o.Datasets, "dataset", nil, "dataset name under the home's datasets/, or a folder path with a slash (repeatable; default: every dataset)")
	f.StringSliceVar(&o.Tasks, "tasks", nil, "only these task ids")
	f.StringSliceVar(&o.Agents, "agents", nil, "agent folders whose agent images to copy too")
	f.StringVar(&o.Platform, "platform", "", "take only this platform's image out of image indexes (default: whole indexes)")
	f.IntVar(&o.Jobs, "jobs", 4, "blobs copied at once")
	f.BoolVar(&o.NoTaskImages, "only-args", false, "copy only the images named as arguments")
	f.StringVar(&o.All, "all", "", "copy every tag of every repository under this registry prefix (from the registry's catalog), as skopeo sync")
	f.BoolVar(&o.DryRun, "dry-run", false, "print what would be copied, mounted and tagged (HEAD requests only) and write nothing")
	addJSONFlag(cmd, &o.JSON)
	return cmd
}

// mirrorSet names the images of the tasks and agents o selects: the base
// each task pins, its case image (tagged with the dataset version), its tool
// image, its agent images, and the runtime image. The result is sorted and
// without duplicates.
func mirrorSet(home string, names naming.Names, o *mirrorOptions) ([]string, error) {
	if o.NoTaskImages {
		return nil, nil
	}
	dirs := o.Datasets
	if len(dirs) == 0 {
		all, err := filepath.Glob(filepath.Join(home, "datasets", "*", task.DatasetFile))
		if err != nil {
			return nil, err
		}
		for _, a := range all {
			dirs = append(dirs, filepath.Dir(a))
		}
	}
	var agents []*agent.Agent
	for _, f := range o.Agents {
		a, err := agent.Load(home, f)
		if err != nil {
			return nil, err
		}
		agents = append(agents, a)
	}
	want := map[string]bool{}
	for _, id := range o.Tasks {
		want[id] = true
	}
	set := map[string]bool{}
	found := map[string]bool{}
	for _, dir := range dirs {
		dir = datasetArg(home, dir)
		d, err := task.LoadDataset(dir)
		if err != nil {
			return nil, fmt.Errorf("reading dataset %s: %w", dir, err)
		}
		m, err := task.ReadManifest(filepath.Join(dir, task.ManifestFile))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		for _, t := range d.Tasks {
			if len(want) > 0 && !want[t.ID] {
				continue
			}
			found[t.ID] = true
			base := t.Base
			if m != nil {
				if mt := m.Task(t.ID); mt != nil && mt.Base != "" {
					base = mt.Base
				}
			}
			if base != "" {
				set[names.Prefixed(base)] = true
			}
			if d.Version != "" {
				set[names.CaseTagged(d.Name, t.ID, d.Version)] = true
			} else {
				set[names.Case(d.Name, t.ID)] = true
			}
			set[names.Tool(t.ID)] = true
			for _, a := range agents {
				set[names.Agent(a.Name, t.ID, a.Version)] = true
			}
		}
	}
	for id := range want {
		if !found[id] {
			return nil, fmt.Errorf("task %s is in none of the datasets %v", id, dirs)
		}
	}
	if len(set) > 0 {
		set[names.Runtime()] = true
	}
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Strings(out)
	return out, nil
}

// mirrorMissing adds to a MissingError of a mirror of task images how
// such images come to be in a registry; other errors are returned as they
// are.
func mirrorMissing(err error, o *mirrorOptions) error {
	var missing *remote.MissingError
	if errors.As(err, &missing) && !o.NoTaskImages {
		return fmt.Errorf("%w; mirror copies a published set: case images are tagged with their dataset's version by `ssebench dataset publish`, tool images are in the registry once `ssebench assemble tool --push` (or `eval --registry`) made them; or name the images to copy with --only-args", err)
	}
	return err
}

// mirrorOutput is `mirror --json`.
type mirrorOutput struct {
	Images  []mirroredJSON `json:"images"`
	Missing []string       `json:"missing,omitempty"`
	Push    *pushJSON      `json:"push"`
}

type mirroredJSON struct {
	Source string `json:"source"`
	Target string `json:"target"`
	Digest string `json:"digest"`
}
