package casebuild

import (
	"context"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sync/errgroup"
)

// BuildBases builds the base images langs as BuildBase does, all at once,
// and returns their manifest digests in the order of langs. The base
// images do not depend on each other: BuildKit builds them together,
// sharing the OS image's layers, so that one image's apt download
// overlaps another's compile. The first failure cancels the others.
func (b *Builder) BuildBases(ctx context.Context, home string, langs []string, osImage, platform string, force bool) ([]v1.Hash, error) {
	digests := make([]v1.Hash, len(langs))
	eg, ectx := errgroup.WithContext(ctx)
	for i, lang := range langs {
		eg.Go(func() error {
			d, err := b.BuildBase(ectx, home, lang, osImage, platform, force)
			if err != nil {
				return fmt.Errorf("base image %s: %w", lang, err)
			}
			digests[i] = d
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	return digests, nil
}
