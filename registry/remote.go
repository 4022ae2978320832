package registry

import (
	"context"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Push uploads an image or an image index to ref. Loopback hosts and
// WithInsecureRegistries may use plain HTTP; credentials come from
// WithKeychain; WithJobs and WithProgress apply. Blobs the registry has are
// not uploaded again. Retries, cross-repository mounts beyond what
// remote.Write does, and resuming are left to a later, richer push.
func Push(ctx context.Context, ref string, content remote.Taggable, opts ...Option) error {
	o, err := makeOptions(opts...)
	if err != nil {
		return err
	}
	r, err := o.parseReference(ref)
	if err != nil {
		return err
	}
	ro := o.remoteOptions(ctx)
	switch c := content.(type) {
	case v1.ImageIndex:
		err = remote.WriteIndex(r, c, ro...)
	case v1.Image:
		err = remote.Write(r, c, ro...)
	default:
		if o.progress != nil {
			close(o.progress)
		}
		return fmt.Errorf("pushing %s: %T is neither an image nor an image index", r.Name(), content)
	}
	if err != nil {
		return fmt.Errorf("pushing %s: %w", r.Name(), err)
	}
	return nil
}

// Pull fetches ref from its registry, whatever the pull policy, and, with
// WithStore, writes the whole image (every layer) into the store under ref
// before returning. For an index it pulls the image of the platform (see
// WithPlatform).
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
	}
	return res, nil
}

// Tag makes dst name the manifest that src names. Only the manifest moves,
// so dst must be in src's registry (its blobs are already there; a
// repository that lacks them is refused by the registry).
func Tag(ctx context.Context, src, dst string, opts ...Option) error {
	o, err := makeOptions(opts...)
	if err != nil {
		return err
	}
	s, err := o.parseReference(src)
	if err != nil {
		return err
	}
	d, err := o.parseReference(dst)
	if err != nil {
		return err
	}
	desc, err := remote.Get(s, o.remoteOptions(ctx)...)
	if err != nil {
		return fmt.Errorf("reading %s: %w", s.Name(), err)
	}
	if err := remote.Put(d, desc, o.remoteOptions(ctx)...); err != nil {
		return fmt.Errorf("tagging %s as %s: %w", s.Name(), d.Name(), err)
	}
	return nil
}
