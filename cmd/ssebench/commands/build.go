package commands

import (
	"context"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/images/buildkit"
	"github.com/42-b3yond-6ug/ssebench/images/casebuild"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"io"
)

// OSImageEnv names the OS image the base images start from, read from the
// environment or .env; sidecar mode's tool-sidecar-agent starts from it
// too.
const OSImageEnv = "SSEBENCH_OS_IMAGE"

// newBuilder connects to buildkitd and opens the store for a build command.
// The caller closes what it returns through the returned func.
func newBuilder(ctx context.Context, g *options.Global, push bool, cmd *cobra.Command, bopts ...buildkit.Option) (*casebuild.Builder, func(), error) {
	names, err := g.Names()
	if err != nil {
		return nil, nil, err
	}
	s, err := g.OpenStore()
	if err != nil {
		return nil, nil, err
	}
	if g.BuildKitAddr != "" {
		bopts = append(bopts, buildkit.WithAddress(g.BuildKitAddr))
	}
	acc, err := g.Access()
	if err != nil {
		return nil, nil, err
	}
	bopts = append(bopts, buildkit.WithProgress(g.Progress(cmd.ErrOrStderr())), buildkit.WithTempDir(s.TempDir()), buildkit.WithPlainHTTP(acc.PlainHTTP))
	bk, err := buildkit.New(ctx, bopts...)
	if err != nil {
		return nil, nil, err
	}
	ropts, err := g.RegistryOptions(s, nil)
	if err != nil {
		bk.Close()
		return nil, nil, err
	}
	r, err := remote.NewResolver(ropts...)
	if err != nil {
		bk.Close()
		return nil, nil, err
	}
	b := &casebuild.Builder{BuildKit: bk, Store: s, Resolver: r, Names: names, Push: push, Log: g.Progress(cmd.ErrOrStderr())}
	return b, func() { bk.Close(); s.Close() }, nil
}

func newCmdBaseImages(g *options.Global) *cobra.Command {
	var osImage, platform string
	var push, force bool
	cmd := &cobra.Command{
		Use:   "base-images [NAME...] [--push]",
		Short: "Build the base images (one toolchain per language) with BuildKit",
		Long: `Build images/base-images/generic-<NAME>/Dockerfile (default: every one) with
the build context images/base-images and the OS image as the OS_IMAGE build
argument. Each image is tagged VERSION, latest and every tag a dataset
manifest pins, into the local store (or the registry with --push). A base whose
names already hold an image built from the same inputs (the files of
images/base-images, the OS image's digest, the platform: the label
ssebench.base-inputs) is not built again; --force builds it anyway.`,
		Example: `  ssebench base-images --os-image 127.0.0.1:5000/ssebench/os/debian:bookworm
  ssebench base-images go c --push --registry localhost:5000/ssebench`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			home, err := g.HomeDir()
			if err != nil {
				return err
			}
			if osImage == "" {
				osImage = g.Lookup(OSImageEnv)
			}
			// Checked before buildkitd is dialled, so that the error
			// says what is missing rather than that no daemon answers.
			if osImage == "" {
				return fmt.Errorf("no OS image: pass --os-image (e.g. 127.0.0.1:5000/ssebench/os/debian:bookworm, made by scripts/setup.sh) or set %s", OSImageEnv)
			}
			langs, err := casebuild.PickBases(home, args)
			if err != nil {
				return err
			}
			var bopts []buildkit.Option
			if len(langs) > 1 {
				// Builds at once on one terminal: plain lines, each
				// prefixed with its step, not redrawn screens that
				// overwrite each other.
				bopts = append(bopts, buildkit.WithProgressMode(buildkit.ProgressPlain))
			}
			b, done, err := newBuilder(ctx, g, push, cmd, bopts...)
			if err != nil {
				return err
			}
			defer done()
			digests, err := b.BuildBases(ctx, home, langs, osImage, platform, force)
			if err != nil {
				return err
			}
			for i, lang := range langs {
				names, _ := b.BaseNames(home, lang)
				printDigest(cmd.OutOrStdout(), digests[i], names...)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&osImage, "os-image", "", "OS image the base images start from (default $"+OSImageEnv+", from the environment or .env)")
	cmd.Flags().StringVar(&platform, "platform", "", "platform to build for (default: buildkitd's)")
	cmd.Flags().BoolVar(&push, "push", false, "push to the registry instead of the local store")
	cmd.Flags().BoolVar(&force, "force", false, "build even the base images whose inputs are unchanged")
	return cmd
}

func newCmdBuildCase(g *options.Global) *cobra.Command {
	var dir string
	var tasks []string
	var force, push, asJSON bool
	cmd := &cobra.Command{
		Use:   "build-case --benchmarks DIR [--tasks a,b] [--force] [--push]",
		Short: "Build the case images of a dataset whose task folders changed",
		Long: `Build each task's case image with BuildKit: context the task folder,
SSEBENCH_REGISTRY as build argument, the label ssebench.task-files set to the
folder's files digest, the task's platform. An image whose label equals the
folder's digest is skipped; one without the label is skipped with a warning;
one whose label differs is rebuilt with a warning; --force rebuilds all.
Exits 1 listing the tasks whose build failed.`,
		Example: `  ssebench build-case --benchmarks datasets/examples
  ssebench build-case --benchmarks datasets/examples --tasks kvconf-12-afb9ee1 --force`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return fmt.Errorf("--benchmarks is required: pass a dataset folder such as datasets/examples")
			}
			ctx := cmd.Context()
			b, done, err := newBuilder(ctx, g, push, cmd)
			if err != nil {
				return err
			}
			defer done()
			out, err := b.BuildCases(ctx, dir, casebuild.CaseOptions{Tasks: tasks, Force: force, HostArch: runtime.GOARCH})
			if asJSON {
				if jerr := writeJSONTo(cmd.OutOrStdout(), casebuild.OutcomesJSON(out, Redact)); jerr != nil {
					return jerr
				}
				return err
			}
			for _, oc := range out {
				if oc.Err == nil {
					fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\t%s\n", oc.Action, oc.Task, oc.Image)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "failed\t%s\t%s\n", oc.Task, oc.Image)
				}
			}
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "benchmarks", "", "dataset folder (required)")
	cmd.Flags().StringSliceVar(&tasks, "tasks", nil, "only these task ids")
	cmd.Flags().BoolVar(&force, "force", false, "rebuild images that are up to date")
	cmd.Flags().BoolVar(&push, "push", false, "push to the registry instead of the local store")
	addJSONFlag(cmd, &asJSON)
	return cmd
}

// printDigest prints name@d for each name: the images a build wrote.
func printDigest(w io.Writer, d fmt.Stringer, names ...string) {
	for _, n := range names {
		fmt.Fprintf(w, "%s@%s\n", n, d)
	}
}
