package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/42-b3yond-6ug/ssebench/oci"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Fetcher reads a blob from a registry repository. The store asks it for
// the layers it recorded without their bytes (see Write): the store says
// which repository holds the blob, the Fetcher knows how to reach it
// (credentials, plain HTTP, retries). remote.Access is one.
type Fetcher interface {
	// FetchBlob opens the blob d of repo (a full repository name such as
	// localhost:5000/ssebench/case/examples/gocsv-1).
	FetchBlob(ctx context.Context, repo string, d v1.Descriptor) (io.ReadCloser, error)
}

// Lend makes f the store's Fetcher unless it has one already (see
// WithFetcher): a resolver or pusher given the store lends it its own
// registry access, so that whoever else holds the store (the containerd
// runner, say) can read what the resolver recorded without its bytes.
func (s *Store) Lend(f Fetcher) {
	s.fetch.mu.Lock()
	defer s.fetch.mu.Unlock()
	if s.fetch.f == nil {
		s.fetch.f = f
	}
}

// fetcher returns the store's Fetcher, or nil.
func (s *Store) fetcher() Fetcher {
	s.fetch.mu.Lock()
	defer s.fetch.mu.Unlock()
	return s.fetch.f
}

// fetchState is the Fetcher of a Store, set once.
type fetchState struct {
	mu sync.Mutex
	f  Fetcher
}

// remoteBlob reads a blob the pool lacks from a repository recorded as
// holding it, storing it as it is read: the reader commits the blob
// (verified against h and size) when it reaches the end, and discards it
// when closed earlier. It returns the "missing" error when no holder is
// known or none can be reached.
func (s *Store) remoteBlob(ctx context.Context, h v1.Hash, size int64, image string) (io.ReadCloser, error) {
	missing := &blobError{store: s, digest: h, image: image, missing: true}
	srcs := s.sources(h)
	if len(srcs) == 0 {
		return nil, missing
	}
	missing.sources = srcs
	f := s.fetcher()
	if f == nil {
		return nil, missing
	}
	var errs []error
	for _, repo := range srcs {
		rc, err := f.FetchBlob(ctx, repo, v1.Descriptor{Digest: h, Size: size})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", repo, err))
			continue
		}
		w, err := s.newIngest()
		if err != nil {
			rc.Close()
			return nil, err
		}
		return &teeReader{rc: rc, w: w, digest: h, size: size}, nil
	}
	missing.fetchErr = errors.Join(errs...)
	return nil, missing
}

// teeReader passes a registry blob through while writing it to an ingest;
// at the end it commits the blob, verified, into the pool.
type teeReader struct {
	rc     io.ReadCloser
	w      *ingest
	digest v1.Hash
	size   int64
}

func (t *teeReader) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if t.w == nil {
		return n, err
	}
	if n > 0 {
		if _, werr := t.w.Write(p[:n]); werr != nil {
			t.w.abort()
			t.w = nil
			return n, fmt.Errorf("storing blob %s: %w", t.digest, werr)
		}
	}
	if err == io.EOF {
		w := t.w
		t.w = nil
		if _, _, cerr := w.commit(t.digest, t.size); cerr != nil {
			return n, fmt.Errorf("storing blob %s fetched from its registry: %w", t.digest, cerr)
		}
	}
	return n, err
}

// The store's blob readers check what they hand out: a layer read from
// them is not hashed again (oci.VerifiedBlob).
var (
	_ oci.VerifiedBlob = (*teeReader)(nil)
	_ oci.VerifiedBlob = (*verifyingReader)(nil)
)

// VerifiedDigest implements oci.VerifiedBlob: the blob is checked against
// its digest and size when its end is read, and that read fails if it does
// not match.
func (t *teeReader) VerifiedDigest() v1.Hash { return t.digest }

// Close discards an unfinished blob: the pool never sees part of a blob.
func (t *teeReader) Close() error {
	if t.w != nil {
		t.w.abort()
		t.w = nil
	}
	return t.rc.Close()
}

// Complete fetches every blob the entry desc needs and the pool lacks,
// for readers that take the layout's files directly (BuildKit's
// oci-layout contexts, containerd's import, skopeo): after it, the entry
// is whole on disk.
func (s *Store) Complete(ctx context.Context, desc v1.Descriptor) error {
	if err := s.writable(); err != nil {
		return err
	}
	unlock, err := s.lock(ctx, gcLock, false)
	if err != nil {
		return err
	}
	defer unlock()
	return s.walk(ctx, desc, "", func(d v1.Descriptor) error {
		if s.HasBlob(d.Digest) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rc, err := s.openBlob(ctx, d.Digest, d.Size, "")
		if err != nil {
			return err
		}
		defer rc.Close()
		if _, err := io.Copy(io.Discard, oci.ContextReader(ctx, rc)); err != nil {
			return err
		}
		return nil
	})
}

// walk calls f for desc and every descriptor it reaches (child manifests,
// configs, distributable layers), parents before children, each digest
// once (see oci.WalkManifests). Manifests are read under ctx; one that
// cannot be read stops the walk with its error.
func (s *Store) walk(ctx context.Context, desc v1.Descriptor, image string, f func(d v1.Descriptor) error, opts ...oci.WalkOption) error {
	read := func(d v1.Descriptor) ([]byte, error) { return s.readBlob(ctx, d.Digest, d.Size, image) }
	return oci.WalkManifests(ctx, desc, image, read, func(d v1.Descriptor, _ bool) error { return f(d) }, opts...)
}

// sourcesLine is the hint of a missing blob's error: where it was
// recorded from.
func sourcesLine(srcs []string) string {
	if len(srcs) == 0 {
		return ""
	}
	return " (it was recorded without its bytes from " + strings.Join(srcs, ", ") + ")"
}

// recordedRemote reports whether Write may record layer l (digest h, not
// in the pool) without its bytes, because a registry holds it: either the
// store already knows a repository that holds h (the layer of an image
// resolved from a registry, or one pushed before), or l is a registry
// layer (go-containerregistry's MountableLayer), whose repository is then
// recorded as its holder. The bytes come when something reads the layer,
// so a store without a Fetcher records nothing this way.
func recordedRemote(s *Store, l v1.Layer, h v1.Hash) bool {
	if s.fetcher() == nil {
		return false // it could never be read: store the bytes now
	}
	if ml, ok := l.(*remote.MountableLayer); ok {
		repo := ml.Reference.Context()
		s.Holders(repo.RegistryStr()).Add(repo.RepositoryStr(), h)
		return true
	}
	return len(s.sources(h)) > 0
}
