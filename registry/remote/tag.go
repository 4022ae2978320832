package remote

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

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

// Repository parses repo with the plain-HTTP rules of a and returns it
// with go-containerregistry options that carry a's keychain, transport and
// user agent, for code that talks to a registry directly (the layer facts
// of package assemble). ctx bounds those requests.
func (a *Access) Repository(ctx context.Context, repo string) (name.Repository, []remote.Option, error) {
	r, err := a.o.parseReference(repo + ":latest")
	if err != nil {
		return name.Repository{}, nil, err
	}
	return r.Context(), a.o.remoteOptions(ctx), nil
}
