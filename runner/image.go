package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/diff"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/remotes"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/errdefs"
	"github.com/containerd/platforms"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/identity"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// leaseExpiry bounds how long content written by a run that crashed stays
// protected from containerd's garbage collector. A healthy run deletes its
// lease as soon as the image record and the container reference the
// content.
const leaseExpiry = time.Hour

// cleanupTimeout bounds each clean-up call to containerd made after the
// caller's context is done.
const cleanupTimeout = 30 * time.Second

// Image is an image that containerd holds and has unpacked for the
// runner's platform and snapshotter.
type Image struct {
	// Name is containerd's name for the image: the full reference, with
	// Docker Hub spelled docker.io.
	Name string
	// Target is the descriptor the name points at: a manifest, or an
	// index for a multi-platform image.
	Target ocispec.Descriptor
	// Stats says what getting the image into containerd took.
	Stats ImportStats
}

// ImportStats says what Import or Pull had to do. A second Import or Pull
// of an unchanged image writes no blob and unpacks no layer.
type ImportStats struct {
	// Blobs is the number of blobs (index, manifest, config and layers)
	// the image needs for the platform.
	Blobs int
	// BlobsWritten is how many of them containerd lacked and were
	// written from the store (Import) or fetched (Pull).
	BlobsWritten int
	// BytesWritten is their total size.
	BytesWritten int64
	// Layers is the number of layers of the platform's manifest.
	Layers int
	// LayersUnpacked is how many layer snapshots did not exist yet and
	// were unpacked; LayersFromStore how many of those were unpacked
	// straight from the local store's file (see unpackFromStore), never
	// written to containerd's content store.
	LayersUnpacked  int
	LayersFromStore int
	// Duration is the wall time of the whole step; Unpack the part of it
	// spent unpacking layers (the rest is the content and the image
	// record: the import, or the pull).
	Duration, Unpack time.Duration
}

// Import copies the image ref from the local image store (see WithStore)
// into containerd, writing only the index, manifest and config blobs
// containerd's content store lacks, points containerd's image record ref
// at it and unpacks it for the runner's platform: each layer that has no
// snapshot yet is unpacked once, straight from its file in the store
// (containerd's content store never holds a second copy of it), or, where
// this process cannot write the snapshot, written to containerd and
// unpacked by it.
func (r *Runner) Import(ctx context.Context, ref string) (*Image, error) {
	ctx, done, err := r.lease(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return r.importImage(ctx, ref, nil)
}

// Pull fetches the image ref from its registry into containerd (only the
// blobs containerd lacks; plain HTTP for localhost and 127.0.0.1) and
// unpacks it for the runner's platform. Credentials come from the
// keychain (see WithKeychain).
func (r *Runner) Pull(ctx context.Context, ref string) (*Image, error) {
	ctx, done, err := r.lease(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	return r.pullImage(ctx, ref, nil)
}

// lease puts the runner's namespace and a fresh lease on ctx, so that
// content and snapshots written by multi-step work survive containerd's
// garbage collector until something references them. The returned done
// deletes the lease even when ctx is cancelled.
func (r *Runner) lease(ctx context.Context) (context.Context, func(), error) {
	ctx = r.withNamespace(ctx)
	ctx, done, err := r.client.WithLease(ctx, leases.WithRandomID(), leases.WithExpiration(leaseExpiry))
	if err != nil {
		return nil, nil, fmt.Errorf("creating a containerd lease: %w", err)
	}
	return ctx, func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		done(cctx)
	}, nil
}

// containerdName spells ref as containerd names images: the whole
// reference, with docker.io for Docker Hub (go-containerregistry says
// index.docker.io, which containerd's resolver does not map).
func containerdName(ref name.Reference) string {
	reg := ref.Context().RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	repo := reg + "/" + ref.Context().RepositoryStr()
	if d, ok := ref.(name.Digest); ok {
		return repo + "@" + d.DigestStr()
	}
	return repo + ":" + ref.Identifier()
}

func (r *Runner) matcher() platforms.MatchComparer { return platforms.Only(r.opts.platform) }

// labels are extra labels of a record it creates.
func (r *Runner) importImage(ctx context.Context, ref string, labels map[string]string) (*Image, error) {
	start := time.Now()
	st := r.opts.store
	if st == nil {
		return nil, fmt.Errorf("importing %s: no local image store is configured (pull it from a registry instead)", ref)
	}
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("importing %s: %w", ref, err)
	}
	desc, err := st.Descriptor(parsed)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("image %s is not in the local store %s: build or pull it first: %w", ref, st.Dir(), err)
	}
	if err != nil {
		return nil, fmt.Errorf("importing %s: %w", ref, err)
	}
	target := ociDescriptor(desc)
	cs := r.client.ContentStore()
	src := &storeProvider{s: st}

	var stats ImportStats
	ensure := images.HandlerFunc(func(ctx context.Context, d ocispec.Descriptor) ([]ocispec.Descriptor, error) {
		stats.Blobs++
		if images.IsLayerType(d.MediaType) {
			// Layers are read from the store by unpack, and only those
			// that have no snapshot yet.
			return nil, nil
		}
		written, err := r.ensureBlob(ctx, cs, src, d)
		if err != nil {
			return nil, err
		}
		if written {
			stats.BlobsWritten++
			stats.BytesWritten += d.Size
		}
		return nil, nil
	})
	m := r.matcher()
	children := images.LimitManifests(images.FilterPlatforms(images.ChildrenHandler(src), m), m, 1)
	// SetChildrenLabels writes the gc.ref labels that make a manifest
	// (or index) hold its children: without them containerd's garbage
	// collector would remove the config and layers once the lease ends,
	// since only the image record is a root.
	label := images.SetChildrenLabels(cs, children)
	// Walk is sequential and depth-first, so a handler never runs twice
	// at once and stats needs no lock.
	if err := images.Walk(ctx, images.Handlers(ensure, label), target); err != nil {
		return nil, fmt.Errorf("importing %s into containerd: %w", ref, err)
	}

	img := images.Image{Name: containerdName(parsed), Target: target, Labels: importLabels(labels)}
	if err := r.putImage(ctx, img); err != nil {
		return nil, err
	}
	if err := r.unpack(ctx, img, &stats, src); err != nil {
		return nil, err
	}
	stats.Duration = time.Since(start)
	return &Image{Name: img.Name, Target: target, Stats: stats}, nil
}

// ensureBlob writes d from the store unless containerd has it; it reports
// whether it wrote.
func (r *Runner) ensureBlob(ctx context.Context, cs content.Store, src *storeProvider, d ocispec.Descriptor) (bool, error) {
	// Lease first, then look: a blob that is present but held by nothing
	// (an image another run just removed) could otherwise be collected
	// between the look and the lease, and the image record would then
	// name a blob containerd no longer has ("content digest ... not
	// found", seen when two test packages ran at once).
	if err := r.leaseContent(ctx, d.Digest); err != nil {
		return false, err
	}
	_, err := cs.Info(ctx, d.Digest)
	if err == nil {
		return false, nil
	}
	if !errdefs.IsNotFound(err) {
		return false, fmt.Errorf("checking containerd for blob %s: %w", d.Digest, err)
	}
	h, err := v1.NewHash(d.Digest.String())
	if err != nil {
		return false, fmt.Errorf("blob %s: %w", d.Digest, err)
	}
	rc, err := src.s.Blob(h, d.Size)
	if err != nil {
		return false, err
	}
	defer rc.Close()
	// WriteBlob verifies size and digest on commit; the store's reader
	// verifies them too, so a corrupt blob names the store file to remove.
	if err := content.WriteBlob(ctx, cs, "ssebench-import-"+d.Digest.String(), rc, d); err != nil {
		return false, fmt.Errorf("writing blob %s to containerd: %w", d.Digest, err)
	}
	return true, nil
}

func (r *Runner) leaseContent(ctx context.Context, d digest.Digest) error {
	return r.leaseResource(ctx, leases.Resource{ID: d.String(), Type: "content"})
}

// leaseResource adds res to the lease on ctx, if any.
func (r *Runner) leaseResource(ctx context.Context, res leases.Resource) error {
	id, ok := leases.FromContext(ctx)
	if !ok {
		return nil
	}
	err := r.client.LeasesService().AddResource(ctx, leases.Lease{ID: id}, res)
	if err != nil && !errdefs.IsAlreadyExists(err) {
		return fmt.Errorf("protecting %s %s with a lease: %w", res.Type, res.ID, err)
	}
	return nil
}

// putImage creates containerd's image record, or points an existing one
// at the new target; an existing record keeps its labels, so an image that
// was there before (another tool's, or a kept one) stays what it was.
func (r *Runner) putImage(ctx context.Context, img images.Image) error {
	is := r.client.ImageService()
	if _, err := is.Create(ctx, img); err != nil {
		if !errdefs.IsAlreadyExists(err) {
			return fmt.Errorf("creating containerd image %s: %w", img.Name, err)
		}
		if _, err := is.Update(ctx, img, "target"); err != nil {
			return fmt.Errorf("updating containerd image %s: %w", img.Name, err)
		}
	}
	return nil
}

func (r *Runner) pullImage(ctx context.Context, ref string, extra map[string]string) (*Image, error) {
	start := time.Now()
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("pulling %s: %w", ref, err)
	}
	cname := containerdName(parsed)
	cs := r.client.ContentStore()

	var (
		mu    sync.Mutex
		stats ImportStats
	)
	// count sees every descriptor the pull visits before it is fetched;
	// the fetch skips what containerd has, so what Info does not find is
	// what gets downloaded. Pull dispatches children concurrently.
	count := func(h images.Handler) images.Handler {
		return images.HandlerFunc(func(ctx context.Context, d ocispec.Descriptor) ([]ocispec.Descriptor, error) {
			_, err := cs.Info(ctx, d.Digest)
			mu.Lock()
			stats.Blobs++
			if errdefs.IsNotFound(err) {
				stats.BlobsWritten++
				stats.BytesWritten += d.Size
			}
			mu.Unlock()
			return h.Handle(ctx, d)
		})
	}
	// Unpacking is left to r.unpack, the same as for Import, so that both
	// paths count unpacked layers alike and use only the diff and
	// snapshot services (no transfer service, which containerd 1.6 lacks).
	// Pull replaces an existing record whole, labels included: they are
	// put back after it.
	before, err := r.client.ImageService().Get(ctx, cname)
	if err != nil && !errdefs.IsNotFound(err) {
		return nil, fmt.Errorf("checking containerd for image %s: %w", cname, err)
	}
	labels := importLabels(extra)
	if err == nil {
		labels = before.Labels
	}
	ci, err := r.client.Pull(ctx, cname,
		client.WithPullLabels(labels),
		client.WithResolver(r.resolver()),
		client.WithPlatformMatcher(r.matcher()),
		client.WithImageHandlerWrapper(count),
	)
	if err != nil {
		return nil, fmt.Errorf("pulling %s: %w", cname, err)
	}
	img := ci.Metadata()
	if err := r.unpack(ctx, img, &stats, nil); err != nil {
		return nil, err
	}
	stats.Duration = time.Since(start)
	return &Image{Name: img.Name, Target: img.Target, Stats: stats}, nil
}

// resolver talks plain HTTP to registries on this machine (the test and
// development registry listens on 127.0.0.1) and to those of
// WithPlainHTTP, and HTTPS elsewhere.
func (r *Runner) resolver() remotes.Resolver {
	auth := docker.NewDockerAuthorizer(docker.WithAuthCreds(r.credentials))
	return docker.NewResolver(docker.ResolverOptions{
		Hosts: docker.ConfigureDefaultRegistries(
			docker.WithPlainHTTP(func(host string) (bool, error) {
				if local, err := docker.MatchLocalhost(host); local || err != nil {
					return local, err
				}
				return r.opts.plainHTTP != nil && r.opts.plainHTTP(host), nil
			}),
			docker.WithAuthorizer(auth),
		),
	})
}

// credentials answers containerd's authorizer from the keychain.
func (r *Runner) credentials(host string) (string, string, error) {
	if host == "registry-1.docker.io" {
		host = name.DefaultRegistry
	}
	reg, err := name.NewRegistry(host)
	if err != nil {
		return "", "", nil
	}
	a, err := r.opts.keychain.Resolve(reg)
	if err != nil {
		return "", "", fmt.Errorf("finding credentials for %s: %w", host, err)
	}
	cfg, err := authn.Authorization(context.Background(), a)
	if err != nil {
		return "", "", fmt.Errorf("finding credentials for %s: %w", host, err)
	}
	if cfg.IdentityToken != "" {
		return "", cfg.IdentityToken, nil
	}
	return cfg.Username, cfg.Password, nil
}

// unpack applies the platform's layers that have no snapshot yet, one by
// one on their parent chain, and labels the config so that the garbage
// collector keeps the snapshots as long as the image exists. With src (an
// import), a layer's bytes come from the local store (see applyLayer);
// without (a pull), from containerd's content store.
//
// It does what client.Image.Unpack does, by hand: against Debian's
// containerd 1.6 daemon the v2 client's Unpack failed on images that ctr
// and this loop unpack fine ("wrong diff id calculated on extraction" for a
// layer whose diff id was right), and the loop also lets us count what was
// unpacked.
func (r *Runner) unpack(ctx context.Context, img images.Image, stats *ImportStats, src *storeProvider) error {
	start := time.Now()
	defer func() { stats.Unpack = time.Since(start) }()
	cs := r.client.ContentStore()
	m, err := images.Manifest(ctx, cs, img.Target, r.matcher())
	if err != nil {
		return fmt.Errorf("reading the manifest of %s for %s: %w", img.Name, platforms.Format(r.opts.platform), err)
	}
	diffIDs, err := images.RootFS(ctx, cs, m.Config)
	if err != nil {
		return fmt.Errorf("reading the layers of %s: %w", img.Name, err)
	}
	var layers []ocispec.Descriptor
	for _, l := range m.Layers {
		if images.IsLayerType(l.MediaType) {
			layers = append(layers, l)
		}
	}
	if len(layers) != len(diffIDs) {
		return fmt.Errorf("image %s has %d layers but its config lists %d: rebuild it", img.Name, len(layers), len(diffIDs))
	}
	stats.Layers = len(diffIDs)
	sn := r.client.SnapshotService(r.snapshotter)
	a := r.client.DiffService()
	for i, l := range layers {
		chain := identity.ChainID(diffIDs[:i+1]).String()
		if _, err := sn.Stat(ctx, chain); err == nil {
			// Present, but perhaps held only by an image another run is
			// about to remove: the lease holds it until the container
			// does.
			if err := r.leaseResource(ctx, leases.Resource{ID: chain, Type: "snapshots/" + r.snapshotter}); err != nil {
				return err
			}
			continue
		} else if !errdefs.IsNotFound(err) {
			return fmt.Errorf("checking snapshot %s: %w", chain, err)
		}
		parent := ""
		if i > 0 {
			parent = identity.ChainID(diffIDs[:i]).String()
		}
		fromStore, err := r.applyLayer(ctx, sn, a, src, l, diffIDs[i], parent, chain)
		if err != nil {
			return fmt.Errorf("unpacking layer %d/%d (%s) of %s into the %s snapshotter: %w", i+1, len(layers), l.Digest, img.Name, r.snapshotter, err)
		}
		stats.LayersUnpacked++
		if fromStore {
			stats.LayersFromStore++
		}
	}
	top := identity.ChainID(diffIDs).String()
	label := "containerd.io/gc.ref.snapshot." + r.snapshotter
	if _, err := cs.Update(ctx, content.Info{Digest: m.Config.Digest, Labels: map[string]string{label: top}}, "labels."+label); err != nil {
		return fmt.Errorf("labelling the config of %s: %w", img.Name, err)
	}
	return nil
}

// applyLayer extracts one layer on its parent snapshot and commits it under
// its chain id, checking the uncompressed digest. With src, the layer is
// read from the store's file and written into the snapshot by this process
// (unpackFromStore) when it can; otherwise (a pull, or a snapshot this
// process cannot write) containerd applies it from its content store, the
// blob written there first for an import. It reports whether the layer
// came from the store.
func (r *Runner) applyLayer(ctx context.Context, sn snapshots.Snapshotter, a diff.Applier, src *storeProvider, layer ocispec.Descriptor, diffID digest.Digest, parent, chain string) (fromStore bool, retErr error) {
	key := fmt.Sprintf("extract-%d-%s", time.Now().UnixNano(), chain)
	// The lease on ctx holds the extract snapshot, and nothing else does:
	// a gc.root label here kept every snapshot of an interrupted unpack
	// forever (hundreds of them on a test machine), while the lease
	// expires (leaseExpiry) and the collector then takes it.
	mounts, err := sn.Prepare(ctx, key, parent)
	if err != nil {
		return false, err
	}
	defer func() {
		if retErr != nil {
			sn.Remove(context.WithoutCancel(ctx), key)
		}
	}()
	if src != nil && !r.opts.unpackInDaemon {
		err := unpackFromStore(ctx, src.s, layer, diffID, mounts)
		if err == nil {
			return true, r.commit(ctx, sn, key, chain)
		}
		if !errors.Is(err, errNotWritableHere) {
			return false, err
		}
	}
	if src != nil {
		if _, err := r.ensureBlob(ctx, r.client.ContentStore(), src, layer); err != nil {
			return false, err
		}
	}
	d, err := a.Apply(ctx, layer, mounts)
	if err != nil {
		return false, err
	}
	if d.Digest != diffID {
		return false, fmt.Errorf("its content has diff id %s, the config says %s", d.Digest, diffID)
	}
	if err := r.commit(ctx, sn, key, chain); err != nil {
		return false, err
	}
	// What Unpack records: the blob's uncompressed digest, checked above.
	info := content.Info{Digest: layer.Digest, Labels: map[string]string{"containerd.io/uncompressed": diffID.String()}}
	if _, err := r.client.ContentStore().Update(ctx, info, "labels.containerd.io/uncompressed"); err != nil {
		return false, err
	}
	return false, nil
}

// commit commits the extract snapshot key under chain, or removes it when
// another run committed chain first.
func (r *Runner) commit(ctx context.Context, sn snapshots.Snapshotter, key, chain string) error {
	if err := sn.Commit(ctx, chain, key); errdefs.IsAlreadyExists(err) {
		// Another run (eval --jobs, a reference beside a dummy) committed
		// the same layer first: this copy is a whole unpacked layer that
		// nothing will ever use, so it goes now, not when the lease ends.
		if err := sn.Remove(context.WithoutCancel(ctx), key); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("removing a second unpack of %s: %w", chain, err)
		}
	} else if err != nil {
		return err
	}
	return nil
}

// ociDescriptor converts a store descriptor; the annotations (the
// store's ref name) stay behind.
func ociDescriptor(d v1.Descriptor) ocispec.Descriptor {
	return ocispec.Descriptor{
		MediaType: string(d.MediaType),
		Digest:    digest.Digest(d.Digest.String()),
		Size:      d.Size,
	}
}

// storeProvider reads blobs from the local image store for containerd's
// image handlers.
type storeProvider struct {
	s *store.Store
}

var _ content.Provider = (*storeProvider)(nil)

// ReaderAt implements content.Provider.
func (p *storeProvider) ReaderAt(_ context.Context, d ocispec.Descriptor) (content.ReaderAt, error) {
	h, err := v1.NewHash(d.Digest.String())
	if err != nil {
		return nil, fmt.Errorf("blob %s: %w", d.Digest, err)
	}
	f, err := os.Open(p.s.BlobPath(h))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blob %s is missing from the image store %s: pull or build the image again: %w", d.Digest, p.s.Dir(), errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &fileReaderAt{File: f, size: fi.Size()}, nil
}

type fileReaderAt struct {
	*os.File
	size int64
}

// Size implements content.ReaderAt.
func (f *fileReaderAt) Size() int64 { return f.size }
