package commands

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/pipeline/preflight"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// What a run makes and what it needs made: a run builds the case image
// (from its base), assembles the tool image (from the case image and the
// runtime) and the agent image; it never makes a base image or the
// runtime. A user moving to a registry prefix met the missing ones one
// run at a time, first the base (with a hint that named neither
// --registry nor --os-image), then the runtime, which `tasks check` did
// not list.

// runtimeRef is the runtime image a tool image is assembled on:
// --runtime, else SSEBENCH_RUNTIME_IMAGE, else REGISTRY/runtime:VERSION.
func runtimeRef(g *options.Global, names naming.Names, flag string) string {
	return firstSet(flag, g.Lookup("SSEBENCH_RUNTIME_IMAGE"), names.Runtime())
}

// runNeeds is the image plan of a run of tasks (ids, or dataset folders)
// with agents, for the platform want ("" any), looked for where the
// global flags say: the store, then REGISTRY when one is set and --pull
// allows. The runtime is rt; only, when not empty, keeps the tasks it
// names.
func runNeeds(ctx context.Context, g *options.Global, names naming.Names, home string, args, only, agents []string, rt, want string, s *store.Store, ropts []remote.Option) ([]preflight.Image, error) {
	askRegistry := strings.TrimSpace(g.Registry) != "" || strings.TrimSpace(g.Lookup(naming.RegistryEnv)) != ""
	if g.Pull == string(remote.PullNever) {
		askRegistry = false
	}
	return preflight.Plan(ctx, preflight.Request{
		Home: home, Names: names, Args: args, Only: only, Agents: agents, Runtime: rt, Platform: want,
		Store: s, Remote: ropts, AskRegistry: askRegistry,
		Registry: strings.TrimSpace(g.Registry), OSImage: g.Lookup(OSImageEnv),
	})
}

// checkHost refuses, before any image, runs this machine cannot make (of
// command, who for short): whoever may not use the daemons hears it
// once, now; so does an upstream that does not answer (a cluster's
// gateway asks it from there), and every image the runs of tasks and
// agents need and do not make, at once. req holds what the runs share;
// backend and rt are --backend and --runtime.
func checkHost(cmd *cobra.Command, g *options.Global, e *pipeline.Env, command, who, backend, rt string, req pipeline.RunRequest, tasks, agents []string) error {
	onHost := containerdBackend(cmd, g, backend)
	if err := checkDaemons(g, command, daemonNeeds{Containerd: onHost, BuildKit: !req.Prebuilt}); err != nil {
		return err
	}
	if onHost {
		if err := checkUpstream(cmd.Context(), g, e.Home, req.Model, req.ModelFile, req.ModelsDir); err != nil {
			return err
		}
	}
	if preflightRuns(req.Prebuilt, req.Mode, req.ToolLayer, req.Catalog, req.Build) {
		return checkRunNeeds(cmd.Context(), g, e, who, req.Dataset, tasks, agents, rt)
	}
	return nil
}

// checkRunNeeds fails a run (or every run of an evaluation) of tasks
// (of the dataset folder local, else of the home's datasets) whose base
// images or runtime are missing, before anything is built, naming them
// all at once. It looks only where a run would (the store, then REGISTRY
// when one is set and --pull allows), reading manifests and configs, and
// takes an image of any platform as there (the run's platform is the
// task's, which the pipeline picks).
func checkRunNeeds(ctx context.Context, g *options.Global, e *pipeline.Env, who, local string, tasks, agents []string, rtFlag string) error {
	args := tasks
	if local != "" {
		args = []string{local}
	}
	checks, err := runNeeds(ctx, g, e.Names, e.Home, args, tasks, agents, runtimeRef(g, e.Names, rtFlag), "", e.Store, e.RegistryOptions)
	if err != nil {
		return err
	}
	return preflight.Missing(who, checks)
}

// preflightRuns says whether checkRunNeeds knows what the runs need: a
// sandbox run of the default tool layer that builds its case image from a
// task folder. Prebuilt runs, catalogs' case images and other tool layers
// are checked where they are read.
func preflightRuns(prebuilt bool, mode, toolLayer, catalog string, build bool) bool {
	return !prebuilt && (mode == "" || mode == pipeline.ModeSandbox) &&
		(toolLayer == "" || toolLayer == pipeline.DefaultToolLayer) && (catalog == "" || build)
}
