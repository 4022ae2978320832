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
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, ropts, err := g.StoreOptions(nil)
			if err != nil {
				return err
			}
			defer s.Close()
			pp := NewProgressPrinter(cmd.ErrOrStderr(), ProgressQuiet(g.Quiet || o.DryRun))
			ropts = append(ropts, remote.WithJobs(o.Jobs), remote.WithMountFrom(o.MountFrom...), remote.WithBlobProgress(pp))
			total := &remote.PushReport{}
			pushed := []imageJSON{}
			defer func() {
				if !o.DryRun {
					pp.Finish(total)
				}
			}()
			// Every image is found before anything moves: a typo in the
			// last name fails at once, and the totals cover them all.
			refs := make([]name.Reference, len(args))
			contents := make([]ggremote.Taggable, len(args))
			for i, a := range args {
				ref, err := name.ParseReference(a)
				if err != nil {
					return fmt.Errorf("parsing image reference %q: %w", a, err)
				}
				if contents[i], err = storeContent(s, ref); err != nil {
					return err
				}
				refs[i] = ref
				pp.Expect(contents[i])
			}
			if o.DryRun {
				targets := make([]remote.Target, len(refs))
				for i, ref := range refs {
					targets[i] = remote.Target{Ref: ref.Name(), Content: contents[i]}
				}
				plan, err := remote.PlanPush(ctx, targets, ropts...)
				if err != nil {
					return err
				}
				return printPlan(cmd.OutOrStdout(), plan, o.JSON)
			}
			for i, ref := range refs {
				content := contents[i]
				rep, err := remote.Push(ctx, ref.Name(), content, ropts...)
				total.Merge(rep)
				if err != nil {
					return err
				}
				d, err := content.(interface{ Digest() (v1.Hash, error) }).Digest()
				if err != nil {
					return err
				}
				pushed = append(pushed, imageJSON{Name: ref.Name(), Digest: d.String()})
				if !o.JSON {
					fmt.Fprintf(cmd.OutOrStdout(), "%s@%s\n", ref.Name(), d)
				}
			}
			if o.JSON {
				return writeJSONTo(cmd.OutOrStdout(), pushOutput{Images: pushed, Push: pushReportJSON(total)})
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Jobs, "jobs", 4, "blobs uploaded at once")
	f.StringSliceVar(&o.MountFrom, "mount-from", nil, "repository of the same registry that may hold some blobs (repeatable)")
	f.BoolVar(&o.DryRun, "dry-run", false, "print what would be uploaded, mounted and tagged (HEAD requests only) and write nothing")
	addJSONFlag(cmd, &o.JSON)
	return cmd
}

// storeContent returns the store's image or image index for ref.
func storeContent(s *store.Store, ref name.Reference) (ggremote.Taggable, error) {
	desc, err := s.Descriptor(ref)
	if err != nil {
		return nil, err
	}
	if desc.MediaType.IsIndex() {
		return s.Index(ref)
	}
	return s.Image(ref)
}
