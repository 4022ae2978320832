package commands

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
)

func newCmdRuntime(g *options.Global) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runtime",
		Short: "Build the runtime image (entrypoint and daemon)",
		Example: `  ssebench runtime build
  ssebench runtime build --platform linux/amd64 --push --registry localhost:5000/ssebench`,
	}
	cmd.AddCommand(newCmdRuntimeBuild(g))
	return groupCommand(cmd)
}

func newCmdRuntimeBuild(g *options.Global) *cobra.Command {
	var platforms []string
	var push bool
	var entrypoint, openCode string
	cmd := &cobra.Command{
		Use:   "build [--platform linux/ARCH|all]... [--push]",
		Short: "Cross-compile the entrypoint, daemon and MCP server and assemble REGISTRY/runtime:VERSION",
		Long: `Cross-compile cmd/ssebench-entrypoint, cmd/ssebench-daemon and
cmd/ssebench-mcp (static, reproducible) for each platform (default: this
machine's, as docker build does; --platform all for linux/amd64 and
linux/arm64) and assemble the runtime image natively as an OCI index, FROM scratch: /ssebench/ssebench-daemon,
/ssebench/mcp/ssebench-mcp and /usr/local/bin/entrypoint. It needs the ssebench source tree (the home) and
the Go toolchain. The index goes to the local store (and the registry with
--push) as REGISTRY/runtime:VERSION.

Each platform's image also carries OpenCode (--opencode-version, pinned by
default; none leaves it out): /usr/local/bin/opencode from the npm package
opencode-linux-x64 or opencode-linux-arm64 and its plugin SDK under
/home/model/.config/opencode, downloaded from the machine's npm registry
(NPM_CONFIG_REGISTRY or ~/.npmrc) over its HTTP API, each tarball checked
against the registry's sha512 integrity and kept in the cache
($SSEBENCH_CACHE/npm), so a rebuild works offline and gives the same digest.
A machine that cannot reach the registry builds the image without OpenCode
and says so.`,
		Example: `  ssebench runtime build
  ssebench runtime build --platform all --push --registry localhost:5000/ssebench
  ssebench runtime build --entrypoint ./cmd/my-entrypoint`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRuntimeBuild(cmd, g, platforms, push, openCode, entrypoint)
		},
	}
	cmd.Flags().StringSliceVar(&platforms, "platform", nil, "platforms to build, or all (linux/amd64 and linux/arm64) (default linux/<host arch>)")
	cmd.Flags().BoolVar(&push, "push", false, "push the runtime index to its registry too")
	cmd.Flags().StringVar(&openCode, "opencode-version", runtimebin.DefaultOpenCodeVersion, "npm version of OpenCode (opencode-ai) to carry, or none")
	cmd.Flags().StringVar(&entrypoint, "entrypoint", "", "main package of the entrypoint, relative to the home or an import path (default "+runtimebin.EntrypointPackage+"); see package sserun/entrypoint for adding a mode")
	return cmd
}

func runRuntimeBuild(cmd *cobra.Command, g *options.Global, platforms []string, toRegistry bool, openCode, entrypoint string) error {
	ctx := cmd.Context()
	names, err := g.Names()
	if err != nil {
		return err
	}
	home, err := g.HomeDir()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(home, "go.mod")); err != nil {
		return fmt.Errorf("building the runtime needs the ssebench source tree: %s has no go.mod (pass --home)", home)
	}
	s, err := g.OpenStore()
	if err != nil {
		return err
	}
	defer s.Close()
	opts := []runtimebin.BuildOption{runtimebin.WithModuleDir(home), runtimebin.WithTempDir(s.TempDir()),
		runtimebin.WithOpenCode(openCode), runtimebin.WithLog(cmd.ErrOrStderr())}
	if entrypoint != "" {
		opts = append(opts, runtimebin.WithEntrypointPackage(entrypoint))
	}
	ps, err := runtimebin.ParsePlatforms(platforms)
	if err != nil {
		return err
	}
	idx, err := runtimebin.Build(ctx, append(opts, runtimebin.WithPlatforms(ps...))...)
	if err != nil {
		return err
	}
	var push func() ([]remote.Option, error)
	if toRegistry {
		push = func() ([]remote.Option, error) { return g.RegistryOptions(nil, nil) }
	}
	rname := names.Runtime()
	d, err := runtimebin.Publish(ctx, s, rname, idx, push)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s@%s\n", rname, d)
	return nil
}
