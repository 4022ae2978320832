package commands

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/release"
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
		RunE: func(cmd *cobra.Command, args []string) error { return runMirror(cmd, g, o, args) },
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

func runMirror(cmd *cobra.Command, g *options.Global, o *mirrorOptions, args []string) error {
	if err := o.validate(args); err != nil {
		return err
	}
	p, err := options.ParsePlatform(o.Platform)
	if err != nil {
		return err
	}
	var refs []string
	from := ""
	if o.All == "" {
		if refs, from, err = mirrorRefs(g, o, args); err != nil {
			return err
		}
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
		return mirrorDryRun(cmd, o, refs, from, append(ropts, remote.WithIndexPlatform(p)))
	}
	pp := newProgress(cmd, g.Quiet)
	ropts = append(ropts, remote.WithJobs(o.Jobs), remote.WithBlobProgress(pp), remote.WithIndexPlatform(p))
	rep, err := remote.Mirror(cmd.Context(), refs, from, o.To, ropts...)
	pp.Finish(nil)
	if rep != nil {
		if perr := printMirror(cmd, o, rep); perr != nil && err == nil {
			err = perr
		}
	}
	return mirrorMissing(err, o)
}

// validate refuses flags that name no mirror, or one that copies itself.
func (o *mirrorOptions) validate(args []string) error {
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
	return nil
}

// mirrorRefs are the images to mirror without --all: the set o selects
// and args; from is REGISTRY.
func mirrorRefs(g *options.Global, o *mirrorOptions, args []string) (refs []string, from string, err error) {
	names, err := g.Names()
	if err != nil {
		return nil, "", err
	}
	home, err := g.HomeDir()
	if err != nil {
		return nil, "", err
	}
	if !o.NoTaskImages {
		if refs, err = release.HomeImageSet(home, names, o.Datasets, o.Tasks, o.Agents); err != nil {
			return nil, "", err
		}
	}
	refs = append(refs, args...)
	if len(refs) == 0 {
		return nil, "", fmt.Errorf("no images to mirror: name a dataset with tasks (--dataset) or images as arguments")
	}
	return refs, names.Registry, nil
}

// mirrorDryRun prints what the mirror would do, and fails where it
// would: a plan with missing sources is not one to carry out.
func mirrorDryRun(cmd *cobra.Command, o *mirrorOptions, refs []string, from string, ropts []remote.Option) error {
	plan, err := remote.PlanMirror(cmd.Context(), refs, from, o.To, ropts...)
	if err != nil {
		return err
	}
	if err := printPlan(cmd.OutOrStdout(), plan, o.JSON); err != nil {
		return err
	}
	if len(plan.Missing) > 0 {
		return mirrorMissing(&remote.MissingError{Refs: plan.Missing}, o)
	}
	return nil
}

// printMirror prints the images rep copied (--json: as one document) and
// its figures on stderr.
func printMirror(cmd *cobra.Command, o *mirrorOptions, rep *remote.MirrorReport) error {
	var err error
	if o.JSON {
		err = writeJSONTo(cmd.OutOrStdout(), rep.Summary())
	} else {
		for _, im := range rep.Images {
			fmt.Fprintf(cmd.OutOrStdout(), "%s@%s\n", im.Target, im.Digest)
		}
	}
	fmt.Fprintln(cmd.ErrOrStderr(), rep.String())
	return err
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
