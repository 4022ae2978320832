package remote

import (
	"context"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/store"
)

// pull fetches ref from its registry, whatever the pull policy, and, with
// WithStore, writes the whole image (every layer of the platform's image)
// into the store under ref before returning, and records which blobs ref's
// repository holds (so that a later push to that registry can mount them).
// For an index the store keeps the index; the image returned is the
// platform's (see WithPlatform).
func pull(ctx context.Context, ref string, opts ...Option) (*Resolved, error) {
	r, err := NewResolver(append(opts, WithPullPolicy(PullAlways))...)
	if err != nil {
		return nil, err
	}
	res, err := r.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	if s := r.o.store; s != nil {
		if err := s.Complete(ctx, res.Descriptor); err != nil {
			return nil, fmt.Errorf("pulling %s: %w", res.Ref.Name(), err)
		}
	}
	return res, nil
}

// recordHolders notes that ref's repository holds img's blobs.
func recordHolders(s *store.Store, ref name.Reference, img v1.Image) {
	m, err := img.Manifest()
	if err != nil {
		return
	}
	ds := []v1.Hash{m.Config.Digest}
	for _, l := range m.Layers {
		ds = append(ds, l.Digest)
	}
	s.Holders(ref.Context().RegistryStr()).Add(ref.Context().RepositoryStr(), ds...)
}

// Access is how this process reaches registries, built once from the
// flags (see New): credentials, which hosts may use plain HTTP (or skip
// certificate checks), retries, the platform and the store. Every client
// of a registry takes its policy from here: the resolver and pusher of
// this package (with the same options), BuildKit's pushes and containerd's pulls
// (with PlainHTTP), the layer facts (Repository), and the store, which fetches through it the layers it
// recorded without their bytes (FetchBlob).
type Access struct {
	o *options
}

// New returns the Access of opts.
func New(opts ...Option) (*Access, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	return &Access{o: o}, nil
}

// PlainHTTP reports whether host (host or host:port) is reached over plain
// HTTP: a loopback host, or one named with WithInsecureRegistries.
func (a *Access) PlainHTTP(host string) bool { return a.o.allowHTTP(host) }

// FetchBlob implements store.Fetcher: it opens blob d of repo, verified
// against d's digest as it is read.
func (a *Access) FetchBlob(ctx context.Context, repo string, d v1.Descriptor) (io.ReadCloser, error) {
	r, err := a.o.parseRepository(repo)
	if err != nil {
		return nil, err
	}
	l, err := remote.Layer(r.Digest(d.Digest.String()), a.o.remoteOptions(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("fetching blob %s from %s: %w", d.Digest, repo, err)
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, fmt.Errorf("fetching blob %s from %s: %w", d.Digest, repo, err)
	}
	return rc, nil
}

var _ store.Fetcher = (*Access)(nil)
