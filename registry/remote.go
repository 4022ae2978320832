package registry

import (
	"context"
	"fmt"
)

// Pull fetches ref from its registry, whatever the pull policy, and, with
// WithStore, writes the whole image (every layer) into the store under ref
// before returning, and records which blobs ref's repository holds (so that
// a later push to that registry can mount them). For an index it pulls the
// image of the platform (see WithPlatform).
func Pull(ctx context.Context, ref string, opts ...Option) (*Resolved, error) {
	r, err := NewResolver(append(opts, WithPullPolicy(PullAlways))...)
	if err != nil {
		return nil, err
	}
	res, err := r.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	if s := r.o.store; s != nil {
		if err := s.Write(ctx, res.Ref, res.Image); err != nil {
			return nil, fmt.Errorf("pulling %s: %w", res.Ref.Name(), err)
		}
		recordPull(s, res.Ref, res.Image)
	}
	return res, nil
}
