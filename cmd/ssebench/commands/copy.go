package commands

import (
	"errors"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

type copyOptions struct {
	Platform string
	Jobs     int
	JSON     bool
}

func newCmdCopy(g *options.Global) *cobra.Command {
	o := &copyOptions{}
	cmd := &cobra.Command{
		Use:   "copy SRC DST [--platform OS/ARCH] [--json]",
		Short: "Copy one image or index to another name in a registry, digest unchanged",
		Long: `Copy the image or image index SRC names to DST, as crane copy does: the
manifest is copied byte for byte, so DST has SRC's digest, and an index keeps
every platform unless --platform picks one. SRC is read from the local store
when it has it (following --pull, like inspect), else from its registry, and
streamed: no layer is held in memory or written to disk. DST is a registry
reference. Each blob is skipped when DST's repository has it, mounted when
another repository of DST's registry holds it (SRC's own, when both are in
one registry: then no layer bytes move), and uploaded otherwise. The
manifest goes last, so an interrupted copy leaves DST as it was.`,
		Example: `  ssebench copy localhost:5000/ssebench/tool/kvconf-12-afb9ee1:0.1.0-dev localhost:5000/team/tool/kvconf-12-afb9ee1:pinned
  ssebench copy --pull always localhost:5000/ssebench/runtime:0.1.0-dev mirror.lan:5000/ssebench/runtime:0.1.0-dev`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := options.ParsePlatform(o.Platform)
			if err != nil {
				return err
			}
			if _, err := name.ParseReference(args[1]); err != nil {
				return fmt.Errorf("DST %q is not an image reference: name it as REGISTRY/REPOSITORY:TAG", args[1])
			}
			s, ropts, err := g.StoreOptions(nil)
			if err != nil {
				return err
			}
			defer s.Close()
			pp := newProgress(cmd, g.Quiet)
			ropts = append(ropts, remote.WithJobs(o.Jobs), remote.WithBlobProgress(pp), remote.WithIndexPlatform(p))
			res, err := remote.Copy(cmd.Context(), args[0], args[1], ropts...)
			if res != nil {
				pp.Finish(&res.Push)
			} else {
				pp.Finish(nil)
			}
			if err != nil {
				return missingImage(g, err)
			}
			return printCopied(cmd.OutOrStdout(), res, o.JSON)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Platform, "platform", "", "copy only this platform's image out of an index (default: the whole index)")
	f.IntVar(&o.Jobs, "jobs", 4, "blobs copied at once")
	addJSONFlag(cmd, &o.JSON)
	return cmd
}

// missingImage turns the error of an image that does not exist into one
// line naming it and saying what to do; any other error is returned as it
// is. The local store was asked first unless --pull is always.
func missingImage(g *options.Global, err error) error {
	var nf *remote.NotFoundError
	if !errors.As(err, &nf) {
		return err
	}
	where := "in the local store or its registry"
	if g.Pull == string(remote.PullAlways) {
		where = "in its registry"
	}
	return fmt.Errorf("image %s does not exist %s: check the name (`ssebench store ls` lists the store's images, `ssebench names --task ID` a task's)", nf.Ref, where)
}

func printCopied(w io.Writer, res *remote.Copied, asJSON bool) error {
	return printResult(w, asJSON, res.Summary(), fmt.Sprintf("%s@%s", res.Target, res.Digest))
}

func newCmdTag(g *options.Global) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tag IMAGE NEWTAG [--json]",
		Short: "Add a tag to an image that exists, in the local store or its registry",
		Long: `Make NEWTAG name the image or index IMAGE names, as crane tag does, without
pulling a layer. NEWTAG is a tag ("v2", in IMAGE's repository) or a full
reference in the same registry; a tag in another registry is refused (copy
the image there with "ssebench copy"). When the local store has IMAGE (and
--pull is not always) the tag is added in the store only, and stderr says
so; else in IMAGE's registry: within one repository only the manifest is
put again, into another repository every blob is mounted. IMAGE must
exist: nothing is created.`,
		Example: `  ssebench tag localhost:5000/ssebench/case/examples/kvconf-12-afb9ee1:0.1.0 v1
  ssebench tag --pull always localhost:5000/ssebench/runtime:0.1.0-dev localhost:5000/ssebench/runtime:stable`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := name.ParseReference(args[0])
			if err != nil {
				return fmt.Errorf("IMAGE %q is not an image reference: name it as REGISTRY/REPOSITORY:TAG", args[0])
			}
			dst, err := remote.ParseNewTag(src, args[1])
			if err != nil {
				return err
			}
			s, ropts, err := g.StoreOptions(nil)
			if err != nil {
				return err
			}
			defer s.Close()
			pull, err := remote.ParsePullPolicy(g.Pull)
			if err != nil {
				return err
			}
			res, err := remote.TagWhere(cmd.Context(), s, src, dst, pull, ropts...)
			if err != nil {
				return missingImage(g, err)
			}
			if res.FromStore {
				// Said apart from a registry's tag, which prints the
				// same name: this one is on this machine only.
				fmt.Fprintf(cmd.ErrOrStderr(), "tagged in the local store only (%s is unchanged): `ssebench push %s` sends it, or tag it there with --pull always\n", src.Context().RegistryStr(), dst.Name())
			}
			return printCopied(cmd.OutOrStdout(), res, asJSON)
		},
	}
	addJSONFlag(cmd, &asJSON)
	return cmd
}

// printPlan prints what a --dry-run would do; nothing is written anywhere.
func printPlan(w io.Writer, plan *remote.Plan, asJSON bool) error {
	if asJSON {
		return writeJSONTo(w, plan)
	}
	return plan.WriteTable(w)
}
