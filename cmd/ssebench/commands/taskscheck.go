package commands

import (
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/pipeline/preflight"
)

// ExitMustBuild is the exit status of `tasks check` (and `eval --check`)
// when an image of the plan must be built.
const ExitMustBuild = 2

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
	if asJSON {
		if err := writeJSONTo(cmd.OutOrStdout(), checks); err != nil {
			return err
		}
	} else {
		preflight.WriteTable(cmd.OutOrStdout(), checks, want)
	}
	if preflight.MustBuild(checks) > 0 {
		return &ExitError{Code: ExitMustBuild}
	}
	return nil
}

func platformString(p *v1.Platform) string {
	if p == nil {
		return "linux/" + runtime.GOARCH
	}
	return p.OS + "/" + p.Architecture
}
