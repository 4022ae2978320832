package commands

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

type pushOptions struct {
	Jobs      int
	MountFrom []string
	JSON      bool
	DryRun    bool
}

func newCmdPush(g *options.Global) *cobra.Command {
	o := &pushOptions{}
	cmd := &cobra.Command{
		Use:   "push REF... [--jobs N] [--mount-from REPO]...",
		Short: "Push images from the local store to their registry, moving only missing blobs",
		Long: `Push each image (or image index) of the local store to the registry its name
names. Each blob is checked first and skipped when the repository has it;
else mounted from another repository of that registry known to have it
(where it was pulled from, --mount-from, and the store's record of earlier
pushes and pulls); else uploaded, large blobs in chunks so that a rerun
resumes an interrupted upload. The manifest goes last, so a tag never names
an incomplete image. One line per blob, then a summary: bytes uploaded,
mounted and skipped.

--dry-run writes nothing: it prints, per image, the target, its digest,
its blobs (count and bytes), which the repository already has, which would
be mounted and which uploaded, and whether the tag is new, unchanged or
moves (--json: the same as one document).`,
		Example: `  ssebench push localhost:5000/ssebench/tool/kvconf-12-afb9ee1:0.1.0-dev
  ssebench push --dry-run --json localhost:5000/ssebench/tool/kvconf-12-afb9ee1:0.1.0-dev
  ssebench push localhost:5000/ssebench/tool/kvconf-12-afb9ee1:0.1.0-dev --mount-from localhost:5000/ssebench/case/examples/kvconf-12-afb9ee1`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runPush(cmd, g, o, args) },
	}
	f := cmd.Flags()
	f.IntVar(&o.Jobs, "jobs", 4, "blobs uploaded at once")
	f.StringSliceVar(&o.MountFrom, "mount-from", nil, "repository of the same registry that may hold some blobs (repeatable)")
	f.BoolVar(&o.DryRun, "dry-run", false, "print what would be uploaded, mounted and tagged (HEAD requests only) and write nothing")
	addJSONFlag(cmd, &o.JSON)
	return cmd
}

func runPush(cmd *cobra.Command, g *options.Global, o *pushOptions, args []string) error {
	s, ropts, err := g.StoreOptions(nil)
	if err != nil {
		return err
	}
	defer s.Close()
	pp := newProgress(cmd, g.Quiet || o.DryRun)
	ropts = append(ropts, remote.WithJobs(o.Jobs), remote.WithMountFrom(o.MountFrom...), remote.WithBlobProgress(pp))
	total := &remote.PushReport{}
	if !o.DryRun {
		defer pp.Finish(total)
	}
	refs, contents, err := storeContents(s, args, pp)
	if err != nil {
		return err
	}
	if o.DryRun {
		targets := make([]remote.Target, len(refs))
		for i, ref := range refs {
			targets[i] = remote.Target{Ref: ref.Name(), Content: contents[i]}
		}
		plan, err := remote.PlanPush(cmd.Context(), targets, ropts...)
		if err != nil {
			return err
		}
		return printPlan(cmd.OutOrStdout(), plan, o.JSON)
	}
	pushed := []remote.ImageDigest{}
	for i, ref := range refs {
		rep, err := remote.Push(cmd.Context(), ref.Name(), contents[i], ropts...)
		total.Merge(rep)
		if err != nil {
			return err
		}
		d, err := contents[i].(interface{ Digest() (v1.Hash, error) }).Digest()
		if err != nil {
			return err
		}
		pushed = append(pushed, remote.ImageDigest{Name: ref.Name(), Digest: d.String()})
		if !o.JSON {
			fmt.Fprintf(cmd.OutOrStdout(), "%s@%s\n", ref.Name(), d)
		}
	}
	if o.JSON {
		return writeJSONTo(cmd.OutOrStdout(), remote.PushOutput{Images: pushed, Push: total.Summary()})
	}
	return nil
}

// storeContents finds every image args names in the store before
// anything moves: a typo in the last name fails at once, and the
// progress's totals cover them all.
func storeContents(s *store.Store, args []string, pp *remote.ProgressPrinter) ([]name.Reference, []ggremote.Taggable, error) {
	refs := make([]name.Reference, len(args))
	contents := make([]ggremote.Taggable, len(args))
	for i, a := range args {
		ref, err := name.ParseReference(a)
		if err != nil {
			return nil, nil, fmt.Errorf("parsing image reference %q: %w", a, err)
		}
		if contents[i], err = s.Content(ref); err != nil {
			return nil, nil, err
		}
		refs[i] = ref
		pp.Expect(contents[i])
	}
	return refs, contents, nil
}

// ProgressInterval is how often the progress of a push, and the phases of
// an assembly, are said off a terminal. A variable so that tests need not
// wait ten seconds.
var ProgressInterval = remote.ProgressInterval

// newProgress is a command's push progress on stderr (quiet: only the
// summary).
func newProgress(cmd *cobra.Command, quiet bool) *remote.ProgressPrinter {
	return remote.NewProgressPrinter(cmd.ErrOrStderr(), remote.ProgressQuiet(quiet), remote.ProgressEvery(ProgressInterval))
}
