package runtimebin

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// Publish writes the runtime index idx that Build made to the store s as
// ref (REGISTRY/runtime:VERSION) and, when push is not nil, pushes it to
// ref's registry with the options push returns. push is asked only once
// the store has the index, so that a registry's deadline does not start
// before. Publish returns the index's digest.
func Publish(ctx context.Context, s *store.Store, ref string, idx v1.ImageIndex, push func() ([]remote.Option, error)) (v1.Hash, error) {
	r, err := name.ParseReference(ref, name.WeakValidation)
	if err != nil {
		return v1.Hash{}, fmt.Errorf("runtime image name %q: %w", ref, err)
	}
	if err := s.WriteIndex(ctx, r, idx); err != nil {
		return v1.Hash{}, err
	}
	if push != nil {
		ropts, err := push()
		if err != nil {
			return v1.Hash{}, err
		}
		if _, err := remote.Push(ctx, ref, idx, ropts...); err != nil {
			return v1.Hash{}, err
		}
	}
	return idx.Digest()
}
