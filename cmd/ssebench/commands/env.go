package commands

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/images/buildkit"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
	"github.com/42-b3yond-6ug/ssebench/task/catalog"
)

// newEnv turns the shared flags into the pipeline's environment. runtime is
// the --runtime flag of the command, if it has one. Call the returned func
// when done.
func newEnv(g *options.Global, cmd *cobra.Command, runtime string) (*pipeline.Env, func(), error) {
	names, err := g.Names()
	if err != nil {
		return nil, nil, err
	}
	home, err := g.HomeDir()
	if err != nil {
		return nil, nil, err
	}
	s, err := g.OpenStore()
	if err != nil {
		return nil, nil, err
	}
	ropts, err := g.RegistryOptions(nil, nil)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	acc, err := g.Access()
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	policy, err := g.Trust()
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	facts, err := openFacts()
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	if runtime == "" {
		runtime = g.Lookup(runtimebin.Env)
	}
	e := &pipeline.Env{
		Home: home, Names: names, Store: s, RegistryOptions: ropts,
		RuntimeRef: runtime, Facts: facts, Trust: policy, Log: g.Progress(cmd.ErrOrStderr()),
		CatalogOptions: []catalog.Option{catalog.WithLock(g.Lookup(catalog.LockEnv))},
		BuildKit: func(ctx context.Context) (*buildkit.Client, error) {
			opts := []buildkit.Option{buildkit.WithProgress(g.Progress(cmd.ErrOrStderr())), buildkit.WithTempDir(s.TempDir()), buildkit.WithPlainHTTP(acc.PlainHTTP)}
			if g.BuildKitAddr != "" {
				opts = append(opts, buildkit.WithAddress(g.BuildKitAddr))
			}
			return buildkit.New(ctx, opts...)
		},
	}
	if !g.Quiet {
		phases := pipeline.NewPhasePrinter(cmd.ErrOrStderr(), "tool image", ProgressInterval)
		e.Phase = phases.Phase
		return e, func() { phases.Close(); s.Close() }, nil
	}
	return e, func() { s.Close() }, nil
}

// openFacts opens the layer facts cache: $SSEBENCH_CACHE/facts, else the
// user cache directory's ssebench/facts.
func openFacts() (*assemble.Facts, error) {
	dir := os.Getenv("SSEBENCH_CACHE")
	if dir == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("finding a cache directory: %w (set SSEBENCH_CACHE)", err)
		}
		dir = filepath.Join(c, "ssebench")
	}
	return assemble.NewFacts(filepath.Join(dir, "facts"))
}

// resolve finds ref (store first, then its registry, as --pull says) for
// platform ("" = the default). The store stays open, since lazily pulled
// layers are written to it as they are read; call done afterwards.
// resolve finds ref for a command that only looks at it: in the store
// when there is one (opened read-only when readOnly), else in its
// registry; it never creates a store.
func resolve(cmd *cobra.Command, g *options.Global, ref, platform string, readOnly bool) (_ *remote.Resolved, done func(), err error) {
	p, err := options.ParsePlatform(platform)
	if err != nil {
		return nil, nil, err
	}
	s, err := g.LookStore(readOnly)
	if err != nil {
		return nil, nil, err
	}
	if s == nil && g.Pull == string(remote.PullNever) {
		dir := g.Store
		if dir == "" {
			dir, _ = store.DefaultDir()
		}
		return nil, nil, fmt.Errorf("image %s is not in the local store (%s, which holds nothing yet); pull it with --pull=missing or build it first", ref, dir)
	}
	closeStore := func() {
		if s != nil {
			s.Close()
		}
	}
	ropts, err := g.RegistryOptions(s, p)
	if err != nil {
		closeStore()
		return nil, nil, err
	}
	r, err := remote.NewResolver(ropts...)
	if err == nil {
		var res *remote.Resolved
		if res, err = r.Resolve(cmd.Context(), ref); err == nil {
			return res, closeStore, nil
		}
	}
	closeStore()
	return nil, nil, err
}
