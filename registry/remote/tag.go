package remote

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
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

// ParseNewTag reads the NEWTAG of a tag of src: a bare tag names src's
// repository, anything else is a full reference (not a digest).
func ParseNewTag(src name.Reference, s string) (name.Reference, error) {
	if !strings.ContainsAny(s, "/:@") {
		t, err := name.NewTag(src.Context().Name() + ":" + s)
		if err != nil {
			return nil, fmt.Errorf("NEWTAG %q is not a valid tag: use letters, digits, '_', '.' and '-' (at most 128, not starting with '.' or '-')", s)
		}
		return t, nil
	}
	r, err := name.ParseReference(s)
	if err != nil {
		return nil, fmt.Errorf("NEWTAG %q is neither a tag nor an image reference: name it as TAG or REGISTRY/REPOSITORY:TAG", s)
	}
	if _, ok := r.(name.Digest); ok {
		return nil, fmt.Errorf("NEWTAG %q is a digest: a tag is needed, as in REGISTRY/REPOSITORY:TAG", s)
	}
	return r, nil
}

// TagWhere makes dst name the image src names where that image is: in the
// store s when it has src (and pull is not PullAlways; FromStore then
// says so), else in src's registry (Retag). A tag stays in its registry:
// another one gets the image by a copy.
func TagWhere(ctx context.Context, s *store.Store, src, dst name.Reference, pull PullPolicy, opts ...Option) (*Copied, error) {
	if src.Context().RegistryStr() != dst.Context().RegistryStr() {
		return nil, fmt.Errorf("cannot tag %s as %s: a tag stays in its registry; copy it there with `ssebench copy %s %s`", src.Name(), dst.Name(), src.Name(), dst.Name())
	}
	if pull != PullAlways {
		desc, err := s.Descriptor(src)
		switch {
		case err == nil:
			if err := s.Tag(ctx, src, dst); err != nil {
				return nil, fmt.Errorf("tagging %s as %s in the local store: %w", src.Name(), dst.Name(), err)
			}
			return &Copied{Source: src.Name(), Target: dst.Name(), Digest: desc.Digest, FromStore: true}, nil
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		case pull == PullNever:
			return nil, fmt.Errorf("%w; --pull=never forbids tagging it in its registry", err)
		}
	}
	return Retag(ctx, src.Name(), dst.Name(), opts...)
}
