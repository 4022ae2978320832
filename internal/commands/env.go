package commands

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/buildkit"
	"github.com/42-b3yond-6ug/ssebench/catalog"
	"github.com/42-b3yond-6ug/ssebench/internal/commands/options"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/remote"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
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
		RuntimeRef: runtime, Facts: facts, Trust: policy, Log: cmd.ErrOrStderr(),
		CatalogOptions: []catalog.Option{catalog.WithLock(g.Lookup(catalog.LockEnv))},
		BuildKit: func(ctx context.Context) (*buildkit.Client, error) {
			opts := []buildkit.Option{buildkit.WithProgress(cmd.ErrOrStderr()), buildkit.WithTempDir(s.TempDir()), buildkit.WithPlainHTTP(acc.PlainHTTP)}
			if g.BuildKitAddr != "" {
				opts = append(opts, buildkit.WithAddress(g.BuildKitAddr))
			}
			return buildkit.New(ctx, opts...)
		},
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
func resolve(cmd *cobra.Command, g *options.Global, ref, platform string) (_ *remote.Resolved, done func(), err error) {
	p, err := options.ParsePlatform(platform)
	if err != nil {
		return nil, nil, err
	}
	s, ropts, err := g.StoreOptions(p)
	if err != nil {
		return nil, nil, err
	}
	r, err := remote.NewResolver(ropts...)
	if err == nil {
		var res *remote.Resolved
		if res, err = r.Resolve(cmd.Context(), ref); err == nil {
			return res, func() { s.Close() }, nil
		}
	}
	s.Close()
	return nil, nil, err
}
