package commands

import (
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/archive"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/task"
)

type saveOptions struct {
	Output, Platform string
	Since            []string
}

func newCmdSave(g *options.Global) *cobra.Command {
	o := &saveOptions{}
	cmd := &cobra.Command{
		Use:   "save -o FILE.tar REF... [--since OLD.tar]...",
		Short: "Write images into one OCI layout archive for an air-gapped machine",
		Long: `Write the images into one OCI image layout archive (a tar of oci-layout,
index.json naming each image with its full reference, and blobs/sha256/...),
each unique blob once. Images come from the local store when it has them,
else from their registry. The archive is deterministic: the same images give
the same bytes. With --since, blobs that an earlier archive carried are left
out (and listed in index.json, so that load checks they are already there).
The archive records REGISTRY, which load --push replaces.`,
		Example: `  ssebench save -o week1.tar localhost:5000/ssebench/tool/kvconf-12-afb9ee1:0.1.0-dev localhost:5000/ssebench/runtime:0.1.0-dev
  ssebench save -o week2.tar --since week1.tar localhost:5000/ssebench/tool/libqs-3-b2a739e:0.1.0-dev`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Output == "" {
				return fmt.Errorf("-o is required: name the archive to write, e.g. -o images.tar")
			}
			names, err := g.Names()
			if err != nil {
				return err
			}
			p, err := options.ParsePlatform(o.Platform)
			if err != nil {
				return err
			}
			s, ropts, err := g.StoreOptions(nil)
			if err != nil {
				return err
			}
			defer s.Close()
			rep, err := archive.SaveFile(cmd.Context(), o.Output, args, archive.WithStore(s), archive.WithRemote(ropts...),
				archive.WithSince(o.Since...), archive.WithRegistryPrefix(names.Registry), archive.WithPlatform(p))
			if err != nil {
				return missingImage(g, err)
			}
			for _, im := range rep.Images {
				fmt.Fprintf(cmd.OutOrStdout(), "%s@%s\n", im.Name, im.Descriptor.Digest)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "saved %s to %s\n", rep, o.Output)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Output, "output", "o", "", "archive to write (required)")
	f.StringSliceVar(&o.Since, "since", nil, "earlier archive whose blobs to leave out (repeatable)")
	f.StringVar(&o.Platform, "platform", "", "take only this platform's image out of image indexes (default: whole indexes)")
	return cmd
}

type loadOptions struct {
	Push  string
	Jobs  int
	Force bool
	JSON  bool
}

func newCmdLoad(g *options.Global) *cobra.Command {
	o := &loadOptions{}
	cmd := &cobra.Command{
		Use:   "load FILE.tar [--push PREFIX]",
		Short: "Import an image archive into the local store, or push it to a registry",
		Long: `Read an archive written by save (or any OCI image layout in a tar), verify
every blob's digest while reading, and import the images into the local
store. Nothing is tagged unless every blob of every image is there, so a
truncated or tampered archive changes no name. With --push PREFIX, the images
then go to a registry: names under the REGISTRY the archive was saved with
get PREFIX instead, other names keep their repository path under PREFIX.`,
		Example: `  ssebench load week1.tar
  ssebench load week1.tar --push mirror.lan:5000/ssebench`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runLoad(cmd, g, o, args[0]) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Push, "push", "", "push the images under this registry prefix, e.g. mirror.lan:5000/ssebench")
	f.BoolVar(&o.Force, "force", false, "replace a runtime or tool image the store holds with other content")
	f.IntVar(&o.Jobs, "jobs", 4, "blobs uploaded at once")
	addJSONFlag(cmd, &o.JSON)
	return cmd
}

func runLoad(cmd *cobra.Command, g *options.Global, o *loadOptions, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading the archive: %w", err)
	}
	defer f.Close()
	s, ropts, err := g.StoreOptions(nil)
	if err != nil {
		return err
	}
	defer s.Close()
	rep, err := archive.Load(cmd.Context(), f, archive.WithStore(s), archive.WithNameCheck(task.CheckImageName),
		archive.WithProtected(naming.IsGrader), archive.WithForce(o.Force))
	if err != nil {
		return fmt.Errorf("loading %s: %w", path, err)
	}
	for _, r := range rep.Replaced {
		fmt.Fprintf(cmd.ErrOrStderr(), "replaced %s (was %s, now %s)\n", r.Name, units.Digest(r.Old), units.Digest(r.New))
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "loaded %s\n", rep)
	if o.Push == "" && o.JSON {
		return writeJSONTo(cmd.OutOrStdout(), rep.Summary())
	}
	if o.Push == "" {
		for _, im := range rep.Images {
			fmt.Fprintf(cmd.OutOrStdout(), "%s@%s\n", im.Name, im.Descriptor.Digest)
		}
		return nil
	}
	return pushLoaded(cmd, g, o, s, ropts, rep)
}

// pushLoaded is load --push: the loaded images go under o.Push.
func pushLoaded(cmd *cobra.Command, g *options.Global, o *loadOptions, s *store.Store, ropts []remote.Option, rep *archive.Report) error {
	pp := newProgress(cmd, g.Quiet)
	for _, im := range rep.Images {
		if ref, err := name.ParseReference(im.Name); err == nil {
			if content, err := s.Content(ref); err == nil {
				pp.Expect(content)
			}
		}
	}
	ropts = append(ropts, remote.WithJobs(o.Jobs), remote.WithBlobProgress(pp))
	prep, err := archive.PushLoaded(cmd.Context(), rep, o.Push, archive.WithStore(s), archive.WithRemote(ropts...))
	pp.Finish(prep)
	if err != nil {
		return err
	}
	out := rep.Summary()
	out.Push = prep.Summary()
	if out.Images, err = rep.Retargeted(o.Push); err != nil {
		return err
	}
	if o.JSON {
		return writeJSONTo(cmd.OutOrStdout(), out)
	}
	for _, im := range out.Images {
		fmt.Fprintf(cmd.OutOrStdout(), "%s@%s\n", im.Name, im.Digest)
	}
	return nil
}
