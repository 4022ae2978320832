package commands

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

type copyOptions struct {
	Platform string
	Jobs     int
	JSON     bool
}

// copyOutput is `copy --json` and `tag --json`.
type copyOutput struct {
	Source    string    `json:"source"`
	Target    string    `json:"target"`
	Digest    string    `json:"digest"`
	FromStore bool      `json:"from_store"`
	Push      *pushJSON `json:"push,omitempty"`
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
	if asJSON {
		out := copyOutput{Source: res.Source, Target: res.Target, Digest: res.Digest.String(), FromStore: res.FromStore}
		if res.Push.Manifests > 0 || len(res.Push.Blobs) > 0 {
			out.Push = pushReportJSON(&res.Push)
		}
		return writeJSONTo(w, out)
	}
	_, err := fmt.Fprintf(w, "%s@%s\n", res.Target, res.Digest)
	return err
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
			dst, err := newTag(src, args[1])
			if err != nil {
				return err
			}
			// A tag names an image where the image is: another registry
			// gets it by a copy, in the store as in a registry.
			if src.Context().RegistryStr() != dst.Context().RegistryStr() {
				return fmt.Errorf("cannot tag %s as %s: a tag stays in its registry; copy it there with `ssebench copy %s %s`", src.Name(), dst.Name(), src.Name(), dst.Name())
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
			if pull != remote.PullAlways {
				desc, err := s.Descriptor(src)
				switch {
				case err == nil:
					if err := s.Tag(cmd.Context(), src, dst); err != nil {
						return fmt.Errorf("tagging %s as %s in the local store: %w", src.Name(), dst.Name(), err)
					}
					// Said apart from a registry's tag, which prints the
					// same name: this one is on this machine only.
					fmt.Fprintf(cmd.ErrOrStderr(), "tagged in the local store only (%s is unchanged): `ssebench push %s` sends it, or tag it there with --pull always\n", src.Context().RegistryStr(), dst.Name())
					return printCopied(cmd.OutOrStdout(), &remote.Copied{Source: src.Name(), Target: dst.Name(), Digest: desc.Digest, FromStore: true}, asJSON)
				case !errors.Is(err, store.ErrNotFound):
					return err
				case pull == remote.PullNever:
					return fmt.Errorf("%w; --pull=never forbids tagging it in its registry", err)
				}
			}
			res, err := remote.Retag(cmd.Context(), src.Name(), dst.Name(), ropts...)
			if err != nil {
				return missingImage(g, err)
			}
			return printCopied(cmd.OutOrStdout(), res, asJSON)
		},
	}
	addJSONFlag(cmd, &asJSON)
	return cmd
}

// newTag reads NEWTAG: a bare tag names src's repository, anything else
// is a full reference.
func newTag(src name.Reference, s string) (name.Reference, error) {
	if !strings.ContainsAny(s, "/:@") {
		t, err := name.NewTag(src.Context().Name() + ":" + s)
		if err != nil {
			return nil, fmt.Errorf("NEWTAG %q is not a valid tag: use letters, digits, '_', '.' and '-' (at most 128, not starting with '.' or '-')", s)
		}
		return t, nil
	}
	r, err := name.ParseReference(s)
	if err != nil {
		return nil, fmt.Errorf("NEWTAG %q is neither a tag nor an image reference: name it as TAG or REGISTRY/REPOSITORY:TAG", s)
	}
	if _, ok := r.(name.Digest); ok {
		return nil, fmt.Errorf("NEWTAG %q is a digest: a tag is needed, as in REGISTRY/REPOSITORY:TAG", s)
	}
	return r, nil
}

// printPlan prints what a --dry-run would do: one line per image, then
// the totals; nothing is written anywhere.
func printPlan(w io.Writer, plan *remote.Plan, asJSON bool) error {
	if asJSON {
		return writeJSONTo(w, plan)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tDIGEST\tBLOBS\tEXISTING\tMOUNT\tUPLOAD\tTAG")
	for _, im := range plan.Images {
		tag := "new"
		switch im.Current {
		case "":
		case im.Digest:
			tag = "unchanged"
		default:
			tag = "moves from " + shortDigest(im.Current)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d (%s)\t%d (%s)\t%d (%s)\t%d (%s)\t%s\n", im.Target, shortDigest(im.Digest),
			im.Blobs, units.Bytes(im.Bytes), im.Existing, units.Bytes(im.ExistingBytes),
			im.Mountable, units.Bytes(im.MountableBytes), im.Upload, units.Bytes(im.UploadBytes), tag)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range plan.Missing {
		fmt.Fprintf(w, "missing from the source registry: %s\n", m)
	}
	_, err := fmt.Fprintf(w, "dry run: would upload %s (%s) for %s; nothing was written\n",
		units.Bytes(plan.UploadBytes), units.Plural(plan.UploadBlobs, "blob"), units.Plural(len(plan.Images), "image"))
	return err
}

func shortDigest(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}
