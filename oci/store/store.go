package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/stream"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"
)

// DirEnv is the environment variable that overrides the default store
// directory (see DefaultDir).
const DirEnv = "SSEBENCH_STORE"

const (
	// AnnotationRefName carries an entry's full image reference in
	// index.json, e.g. localhost:5000/ssebench/tool/x:1.0.0.
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// AnnotationSource, on an index.json entry, is the repository the
	// entry was pulled from (see Record); entries this machine wrote
	// itself have none. What a registry said is trusted less than what
	// was computed here (package trust).
	AnnotationSource = "dev.ssebench.source"
	// AnnotationContainerdName is what `ctr import` reads for the image
	// name; we write it too so an import keeps the full reference.
	AnnotationContainerdName = "io.containerd.image.name"

	layoutFile   = "oci-layout"
	layoutJSON   = `{"imageLayoutVersion":"1.0.0"}`
	indexFile    = "index.json"
	tmpDirName   = ".tmp"
	indexLock    = ".index.lock"
	gcLock       = ".gc.lock"
	ingestPrefix = "ingest-"
	// lockRetry is how often a context-aware lock attempt retries.
	lockRetry = 10 * time.Millisecond
	// blobJobs is how many layers Write copies at once.
	blobJobs = 4
	// maxManifestSize bounds what is read into memory as a manifest or
	// config (registries reject manifests above 4 MiB).
	maxManifestSize = 32 << 20
)

// ErrNotFound means the store has no entry for a reference. Match it with
// errors.Is.
var ErrNotFound = errors.New("not in the local store")

// ErrCorruptBlob means a blob in the store does not match its digest or
// size, or is missing although an entry needs it. Match it with errors.Is.
var ErrCorruptBlob = errors.New("corrupt blob")

// Store is a local OCI image layout: one blob pool under blobs/sha256, an
// oci-layout file and one index.json whose entries carry the full image
// reference in AnnotationRefName. skopeo, crane, oras, `ctr import` and
// BuildKit's oci-layout:// can read it.
//
// Blobs are written to a temporary file, verified, synced and renamed into
// place, so a blob path always holds the blob's exact content; index.json is
// replaced by rename, under a file lock, and only once every blob an entry
// needs is present. Several processes may use one store at once.
type Store struct {
	dir      string
	fetch    *fetchState
	temp     *tempClaim
	readOnly bool
}

// ErrReadOnly is the error of a write to a store opened with ReadOnly.
var ErrReadOnly = errors.New("the image store was opened read-only")

// ErrNoStore is the error of opening, ReadOnly, a directory that holds no
// store.
var ErrNoStore = errors.New("no image store")

func (s *Store) writable() error {
	if s.readOnly {
		return ErrReadOnly
	}
	return nil
}

// Entry is one image in the store.
type Entry struct {
	// Name is the full image reference, as written by Write.
	Name string
	// Descriptor is the entry's manifest descriptor in index.json.
	Descriptor v1.Descriptor
}

// GCResult says what GC removed.
type GCResult struct {
	// Blobs is the number of blobs removed.
	Blobs int
	// Bytes is their total size.
	Bytes int64
}

// DefaultDir returns $SSEBENCH_STORE when set, else
// ${XDG_DATA_HOME:-~/.local/share}/ssebench/store.
func DefaultDir() (string, error) {
	if d := strings.TrimSpace(os.Getenv(DirEnv)); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "ssebench", "store"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the image store: %w (set %s)", err, DirEnv)
	}
	return filepath.Join(home, ".local", "share", "ssebench", "store"), nil
}

// Open opens the image layout at dir, creating it when dir is missing
// or empty. A non-empty directory without an oci-layout file is refused.
func Open(dir string, opts ...Option) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("opening image store %s: %w", dir, err)
	}
	s := &Store{dir: abs, fetch: &fetchState{}}
	for _, opt := range opts {
		opt(s)
	}
	if s.readOnly {
		if _, err := os.Stat(filepath.Join(abs, layoutFile)); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w at %s", ErrNoStore, abs)
		} else if err != nil {
			return nil, fmt.Errorf("opening image store %s: %w", abs, err)
		}
		s.temp = &tempClaim{}
		return s, nil
	}
	if err := s.init(); err != nil {
		return nil, fmt.Errorf("opening image store %s: %w", abs, err)
	}
	if err := s.claimTemp(); err != nil {
		return nil, fmt.Errorf("opening image store %s: %w", abs, err)
	}
	return s, nil
}

func (s *Store) init() error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(s.dir, layoutFile))
	if errors.Is(err, fs.ErrNotExist) {
		// Two commands may create one store at once: the one that gets
		// the lock creates it, the other then finds it.
		unlock, lerr := s.lock(context.Background(), indexLock, true)
		if lerr != nil {
			return lerr
		}
		defer unlock()
		b, err = os.ReadFile(filepath.Join(s.dir, layoutFile))
		if errors.Is(err, fs.ErrNotExist) {
			return s.create()
		}
	}
	if err != nil {
		return err
	}
	var l struct {
		Version string `json:"imageLayoutVersion"`
	}
	if err := json.Unmarshal(b, &l); err != nil || l.Version != "1.0.0" {
		return fmt.Errorf("unsupported %s %q: expected image layout version 1.0.0", layoutFile, b)
	}
	for _, d := range []string{s.blobDir(), s.tmpRoot()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// create makes a new layout in an empty directory; the caller holds
// indexLock. oci-layout is written last, so a directory without it is at
// most a store whose creation was interrupted.
func (s *Store) create() error {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if n := e.Name(); !strings.HasPrefix(n, ".") && n != "blobs" && n != indexFile {
			return fmt.Errorf("the directory is not empty and is not an OCI image layout (no %s file); choose another directory with --store or %s", layoutFile, DirEnv)
		}
	}
	for _, d := range []string{s.blobDir(), s.tmpRoot()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(s.dir, indexFile)); errors.Is(err, fs.ErrNotExist) {
		if err := s.writeIndexFile(emptyIndex()); err != nil {
			return err
		}
	}
	return s.writeFileAtomic(layoutFile, []byte(layoutJSON))
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// TempDir returns a directory inside the store, on the same file system as
// the blob pool, where layer writers may spool files and then hand them to
// AdoptBlob. Callers remove their own files; GC removes only its own
// abandoned "ingest-" files there.
func (s *Store) TempDir() string { return s.temp.dir }

// tmpRoot holds every process's temporary directory.
func (s *Store) tmpRoot() string { return filepath.Join(s.dir, tmpDirName) }

// Close releases the store: its temporary directory (and whatever a
// command left there) goes. The store must not be used afterwards.
func (s *Store) Close() error {
	if t := s.temp; t != nil && t.lock != nil {
		os.RemoveAll(t.dir)
		os.Remove(t.dir + ".lock")
		t.lock.Close()
		t.lock = nil
	}
	return nil
}

func (s *Store) blobDir() string { return filepath.Join(s.dir, "blobs", "sha256") }

// BlobPath returns where the blob h lives (or would live) in the store.
func (s *Store) BlobPath(h v1.Hash) string {
	return filepath.Join(s.dir, "blobs", h.Algorithm, h.Hex)
}

// HasBlob reports whether the blob pool holds h. It does not verify it.
func (s *Store) HasBlob(h v1.Hash) bool {
	if h.Algorithm != "sha256" {
		return false
	}
	fi, err := os.Stat(s.BlobPath(h))
	return err == nil && fi.Mode().IsRegular()
}

// Blob opens the blob h for reading. The reader verifies the content as it
// goes: a read that reaches the end of a blob that does not match h (or
// size, when size ≥ 0) fails with ErrCorruptBlob. The caller closes it.
func (s *Store) Blob(h v1.Hash, size int64) (io.ReadCloser, error) {
	return s.openBlob(h, size, "")
}

func (s *Store) openBlob(h v1.Hash, size int64, image string) (io.ReadCloser, error) {
	if h.Algorithm != "sha256" {
		return nil, fmt.Errorf("blob %s: unsupported digest algorithm %q", h, h.Algorithm)
	}
	f, err := os.Open(s.BlobPath(h))
	if errors.Is(err, fs.ErrNotExist) {
		return s.remoteBlob(h, size, image)
	}
	if err != nil {
		return nil, err
	}
	return &verifyingReader{f: f, h: sha256.New(), want: h, size: size, store: s, image: image}, nil
}

// ReadBlob reads and verifies a small blob (manifest or config).
func (s *Store) ReadBlob(h v1.Hash, size int64, image string) ([]byte, error) {
	if size > maxManifestSize {
		return nil, fmt.Errorf("blob %s of image %s is %d bytes, too large for a manifest or config", h, image, size)
	}
	rc, err := s.openBlob(h, size, image)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, maxManifestSize+1))
}

// blobError is the one-line message for a missing or corrupt blob: which
// blob, which image, which store, and what to do about it.
type blobError struct {
	store     *Store
	digest    v1.Hash
	image     string
	missing   bool
	got       string
	gotSize   int64
	wantSize  int64
	sizeError bool
	// sources are the repositories a missing blob was recorded from;
	// fetchErr is why fetching it from them failed.
	sources  []string
	fetchErr error
}

func (e *blobError) Error() string {
	of := ""
	if e.image != "" {
		of = " of image " + e.image
	}
	if e.missing {
		if e.fetchErr != nil {
			return fmt.Sprintf("blob %s%s is not in the image store %s and could not be fetched%s: %v", e.digest, of, e.store.dir, sourcesLine(e.sources), e.fetchErr)
		}
		if len(e.sources) > 0 {
			return fmt.Sprintf("blob %s%s is not in the image store %s%s: run the command with --pull=missing so that it can be fetched", e.digest, of, e.store.dir, sourcesLine(e.sources))
		}
		return fmt.Sprintf("blob %s%s is missing from the image store %s: pull or build the image again", e.digest, of, e.store.dir)
	}
	what := fmt.Sprintf("has digest %s", e.got)
	if e.sizeError {
		what = fmt.Sprintf("has %d bytes, expected %d", e.gotSize, e.wantSize)
	}
	return fmt.Sprintf("blob %s%s in the image store is corrupt (it %s): remove it with `rm %s` and pull or build the image again", e.digest, of, what, e.store.BlobPath(e.digest))
}

// Is makes errors.Is(err, ErrCorruptBlob) match.
func (e *blobError) Is(target error) bool { return target == ErrCorruptBlob }

// verifyingReader hashes a blob as it is read and turns the end of a blob
// that does not match into an error instead of io.EOF.
type verifyingReader struct {
	f     *os.File
	h     hash.Hash
	n     int64
	want  v1.Hash
	size  int64
	store *Store
	image string
}

func (r *verifyingReader) Read(p []byte) (int, error) {
	n, err := r.f.Read(p)
	r.h.Write(p[:n])
	r.n += int64(n)
	if r.size >= 0 && r.n > r.size {
		return n, &blobError{store: r.store, digest: r.want, image: r.image, sizeError: true, gotSize: r.n, wantSize: r.size}
	}
	if err == io.EOF {
		if r.size >= 0 && r.n != r.size {
			return n, &blobError{store: r.store, digest: r.want, image: r.image, sizeError: true, gotSize: r.n, wantSize: r.size}
		}
		if got := hex.EncodeToString(r.h.Sum(nil)); got != r.want.Hex {
			return n, &blobError{store: r.store, digest: r.want, image: r.image, got: "sha256:" + got}
		}
	}
	return n, err
}

func (r *verifyingReader) Close() error { return r.f.Close() }

// ingest is a blob being written: a temporary file in the store and a
// running hash. commit verifies and renames it into the pool; abort removes
// it. Exactly one of them must be called.
type ingest struct {
	s *Store
	f *os.File
	h hash.Hash
	n int64
}

func (s *Store) newIngest() (*ingest, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(s.TempDir(), ingestPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("creating a temporary blob: %w", err)
	}
	return &ingest{s: s, f: f, h: sha256.New()}, nil
}

func (w *ingest) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	return n, err
}

func (w *ingest) abort() {
	w.f.Close()
	os.Remove(w.f.Name())
}

// commit checks the content against want (when want.Hex is set) and size
// (when ≥ 0), then syncs and renames it into the pool. It returns the
// digest and size written.
func (w *ingest) commit(want v1.Hash, size int64) (v1.Hash, int64, error) {
	got := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(w.h.Sum(nil))}
	if size >= 0 && w.n != size {
		w.abort()
		return v1.Hash{}, 0, fmt.Errorf("writing blob %s: expected %d bytes, but got %d: %w", want, size, w.n, ErrCorruptBlob)
	}
	if want.Hex != "" && got != want {
		w.abort()
		return v1.Hash{}, 0, fmt.Errorf("writing blob %s: content has digest %s: %w", want, got, ErrCorruptBlob)
	}
	// Sync before rename: after a crash the blob path must hold either
	// nothing or the whole blob, never a file whose data never hit disk.
	if err := w.f.Chmod(0o644); err != nil {
		w.abort()
		return v1.Hash{}, 0, err
	}
	if err := w.f.Sync(); err != nil {
		w.abort()
		return v1.Hash{}, 0, fmt.Errorf("writing blob %s: %w", got, err)
	}
	if err := w.f.Close(); err != nil {
		os.Remove(w.f.Name())
		return v1.Hash{}, 0, fmt.Errorf("writing blob %s: %w", got, err)
	}
	if err := os.Rename(w.f.Name(), w.s.BlobPath(got)); err != nil {
		os.Remove(w.f.Name())
		return v1.Hash{}, 0, fmt.Errorf("writing blob %s: %w", got, err)
	}
	return got, w.n, syncDir(w.s.blobDir())
}

// PutBlob streams r into the pool, verified. want may be zero when the digest is not
// known in advance (a stream.Layer); size may be -1.
func (s *Store) PutBlob(ctx context.Context, r io.Reader, want v1.Hash, size int64) (v1.Hash, int64, error) {
	if err := s.writable(); err != nil {
		return v1.Hash{}, 0, err
	}
	w, err := s.newIngest()
	if err != nil {
		return v1.Hash{}, 0, err
	}
	buf := make([]byte, 1<<20)
	if _, err := io.CopyBuffer(w, &ctxReader{ctx: ctx, r: r}, buf); err != nil {
		w.abort()
		return v1.Hash{}, 0, err
	}
	return w.commit(want, size)
}

func (s *Store) putBytes(ctx context.Context, b []byte, want v1.Hash) error {
	if s.HasBlob(want) {
		return nil
	}
	_, _, err := s.PutBlob(ctx, bytes.NewReader(b), want, int64(len(b)))
	return err
}

// AdoptBlob moves the file at path (which must be in TempDir, so the rename
// is atomic) into the blob pool as h, after verifying it against h and size
// (when ≥ 0). On success the file is gone from path; on failure it is left
// for the caller to remove.
func (s *Store) AdoptBlob(ctx context.Context, path string, h v1.Hash, size int64) error {
	if err := s.writable(); err != nil {
		return err
	}
	if s.HasBlob(h) {
		return os.Remove(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("adopting blob %s: %w", h, err)
	}
	defer f.Close()
	d := sha256.New()
	n, err := io.Copy(d, &ctxReader{ctx: ctx, r: f})
	if err != nil {
		return fmt.Errorf("adopting blob %s: %w", h, err)
	}
	if got := hex.EncodeToString(d.Sum(nil)); got != h.Hex || h.Algorithm != "sha256" || (size >= 0 && n != size) {
		return fmt.Errorf("adopting blob %s from %s: content has digest sha256:%s and %d bytes", h, path, got, n)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := os.Chmod(path, 0o644); err != nil {
		return err
	}
	if err := os.Rename(path, s.BlobPath(h)); err != nil {
		return fmt.Errorf("adopting blob %s: %w", h, err)
	}
	return syncDir(s.blobDir())
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r *ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// Write stores img under ref, replacing any entry ref had. It writes each
// blob the pool lacks (layers first, streamed, then config and manifest)
// and only then points index.json at the manifest.
func (s *Store) Write(ctx context.Context, ref name.Reference, img v1.Image) error {
	if err := s.writable(); err != nil {
		return err
	}
	unlock, err := s.lock(ctx, gcLock, false)
	if err != nil {
		return err
	}
	defer unlock()
	desc, err := s.writeImageBlobs(ctx, img)
	if err != nil {
		return fmt.Errorf("writing %s to the image store: %w", ref.Name(), err)
	}
	return s.setEntry(ctx, ref, desc, "")
}

// Record stores what a registry repository from holds under ref (an image
// or an index), as Write and WriteIndex do, and notes in the entry that it
// was pulled from there (AnnotationSource). Layers the store lacks are
// recorded without their bytes when it can fetch them later.
func (s *Store) Record(ctx context.Context, ref name.Reference, content partial.Describable, from name.Repository) error {
	if err := s.writable(); err != nil {
		return err
	}
	unlock, err := s.lock(ctx, gcLock, false)
	if err != nil {
		return err
	}
	defer unlock()
	var desc v1.Descriptor
	switch c := content.(type) {
	case v1.ImageIndex:
		desc, err = s.writeIndexBlobs(ctx, c)
	case v1.Image:
		desc, err = s.writeImageBlobs(ctx, c)
	default:
		err = fmt.Errorf("%T is neither an image nor an image index", content)
	}
	if err != nil {
		return fmt.Errorf("recording %s in the image store: %w", ref.Name(), err)
	}
	return s.setEntry(ctx, ref, desc, from.Name())
}

// WriteIndex stores idx, every child manifest and all their blobs under ref,
// replacing any entry ref had.
func (s *Store) WriteIndex(ctx context.Context, ref name.Reference, idx v1.ImageIndex) error {
	if err := s.writable(); err != nil {
		return err
	}
	unlock, err := s.lock(ctx, gcLock, false)
	if err != nil {
		return err
	}
	defer unlock()
	desc, err := s.writeIndexBlobs(ctx, idx)
	if err != nil {
		return fmt.Errorf("writing %s to the image store: %w", ref.Name(), err)
	}
	return s.setEntry(ctx, ref, desc, "")
}

func (s *Store) writeImageBlobs(ctx context.Context, img v1.Image) (v1.Descriptor, error) {
	layers, err := img.Layers()
	if err != nil {
		return v1.Descriptor{}, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(blobJobs)
	seen := map[v1.Hash]bool{}
	for _, l := range layers {
		if d, err := l.Digest(); err == nil {
			if seen[d] {
				continue
			}
			seen[d] = true
		}
		g.Go(func() error { return s.writeLayer(gctx, l) })
	}
	if err := g.Wait(); err != nil {
		return v1.Descriptor{}, err
	}
	// The config and manifest come after the layers: a stream.Layer only
	// knows its digest once read, and the manifest names it.
	cfg, err := img.RawConfigFile()
	if err != nil {
		return v1.Descriptor{}, err
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return v1.Descriptor{}, err
	}
	if err := s.putBytes(ctx, cfg, cfgName); err != nil {
		return v1.Descriptor{}, err
	}
	return s.putManifest(ctx, img)
}

func (s *Store) writeIndexBlobs(ctx context.Context, idx v1.ImageIndex) (v1.Descriptor, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	for _, child := range im.Manifests {
		var desc v1.Descriptor
		switch {
		case child.MediaType.IsIndex():
			sub, err := idx.ImageIndex(child.Digest)
			if err != nil {
				return v1.Descriptor{}, err
			}
			if desc, err = s.writeIndexBlobs(ctx, sub); err != nil {
				return v1.Descriptor{}, err
			}
		case child.MediaType.IsImage():
			img, err := idx.Image(child.Digest)
			if err != nil {
				return v1.Descriptor{}, err
			}
			if desc, err = s.writeImageBlobs(ctx, img); err != nil {
				return v1.Descriptor{}, err
			}
		default:
			return v1.Descriptor{}, fmt.Errorf("index child %s has media type %q, which is neither an image nor an index", child.Digest, child.MediaType)
		}
		if desc.Digest != child.Digest {
			return v1.Descriptor{}, fmt.Errorf("index child %s has digest %s when read", child.Digest, desc.Digest)
		}
	}
	return s.putManifest(ctx, idx)
}

type manifestBlob interface {
	partial.Describable
	RawManifest() ([]byte, error)
}

func (s *Store) putManifest(ctx context.Context, m manifestBlob) (v1.Descriptor, error) {
	raw, err := m.RawManifest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	desc, err := partial.Descriptor(m)
	if err != nil {
		return v1.Descriptor{}, err
	}
	if err := s.putBytes(ctx, raw, desc.Digest); err != nil {
		return v1.Descriptor{}, err
	}
	return *desc, nil
}

func (s *Store) writeLayer(ctx context.Context, l v1.Layer) error {
	want, err := l.Digest()
	switch {
	case errors.Is(err, stream.ErrNotComputed):
		want = v1.Hash{}
	case err != nil:
		return err
	case s.HasBlob(want):
		return nil
	}
	size := int64(-1)
	if want.Hex != "" {
		if size, err = l.Size(); err != nil {
			return err
		}
		if done, err := s.adoptSpool(ctx, l, want, size); done || err != nil {
			return err
		}
		// A layer a registry holds is recorded without its bytes:
		// they come when something reads it (see remoteBlob).
		if recordedRemote(s, l, want) {
			return nil
		}
	}
	rc, err := l.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	if _, _, err := s.PutBlob(ctx, rc, want, size); err != nil {
		return fmt.Errorf("writing layer %s: %w", want, err)
	}
	return nil
}

// adoptSpool moves a layer that was spooled to a file in the store's
// temporary directory (as the assembler's layers are) into the pool by a
// hard link and a rename: the bytes are neither copied nor read again. It reports false when the layer is not such a file.
func (s *Store) adoptSpool(ctx context.Context, l v1.Layer, h v1.Hash, size int64) (bool, error) {
	sp, ok := l.(interface{ Path() string })
	if !ok {
		return false, nil
	}
	p := sp.Path()
	if filepath.Dir(p) != s.TempDir() {
		return false, nil
	}
	// A name of this call's own: two assemblies of one task adopt the
	// same digest at once.
	link := filepath.Join(s.TempDir(), fmt.Sprintf("adopt-%s-%d-%d", h.Hex[:16], os.Getpid(), adoptSeq.Add(1)))
	if err := os.Link(p, link); err != nil {
		return false, nil // another filesystem or no links: copy instead
	}
	// The digest was computed from these very bytes as they were written,
	// in this process, and every read of the store verifies them again:
	// hashing them here too would only read them a second time.
	if err := s.renameBlob(link, h); err != nil {
		os.Remove(link)
		return true, err
	}
	return true, nil
}

// renameBlob moves a complete file of TempDir into the pool as h, durably.
func (s *Store) renameBlob(path string, h v1.Hash) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("adopting blob %s: %w", h, err)
	}
	err = f.Sync()
	f.Close()
	if err != nil {
		return fmt.Errorf("adopting blob %s: %w", h, err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		return err
	}
	if err := os.Rename(path, s.BlobPath(h)); err != nil {
		return fmt.Errorf("adopting blob %s: %w", h, err)
	}
	return syncDir(s.blobDir())
}

// adoptSeq numbers adoptSpool's links within this process.
var adoptSeq atomic.Int64

// lockFile takes an exclusive lock on path, waiting for it.
func lockFile(path string) (func(), error) {
	fl := flock.New(path)
	if err := fl.Lock(); err != nil {
		return nil, err
	}
	return func() { fl.Close() }, nil
}

// HoldGC keeps GC from running until the returned release is called: a
// writer that adds blobs before it names them in index.json (as Load does)
// holds it throughout.
func (s *Store) HoldGC(ctx context.Context) (func(), error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	return s.lock(ctx, gcLock, false)
}

// lock takes the lock file name, exclusive or shared, and returns its
// release. Each call opens its own file descriptor, so flock(2) excludes
// goroutines of one process as it excludes processes.
func (s *Store) lock(ctx context.Context, file string, exclusive bool) (func(), error) {
	fl := flock.New(filepath.Join(s.dir, file))
	var ok bool
	var err error
	if exclusive {
		ok, err = fl.TryLockContext(ctx, lockRetry)
	} else {
		ok, err = fl.TryRLockContext(ctx, lockRetry)
	}
	if err == nil && !ok {
		err = errors.New("lock not acquired")
	}
	if err != nil {
		fl.Close()
		return nil, fmt.Errorf("locking the image store %s: %w", s.dir, err)
	}
	return func() { fl.Close() }, nil
}

func emptyIndex() *v1.IndexManifest {
	return &v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{}}
}

func (s *Store) readIndexFile() (*v1.IndexManifest, error) {
	f, err := os.Open(filepath.Join(s.dir, indexFile))
	if err != nil {
		return nil, fmt.Errorf("reading the image store index: %w", err)
	}
	defer f.Close()
	im, err := v1.ParseIndexManifest(f)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(s.dir, indexFile), err)
	}
	return im, nil
}

// writeIndexFile replaces index.json by rename; callers hold indexLock.
func (s *Store) writeIndexFile(im *v1.IndexManifest) error {
	// Sorted by name so that the same set of entries gives the same bytes
	// whatever order concurrent writers committed in.
	sort.SliceStable(im.Manifests, func(i, j int) bool {
		return EntryName(im.Manifests[i]) < EntryName(im.Manifests[j])
	})
	b, err := json.MarshalIndent(im, "", "  ")
	if err != nil {
		return err
	}
	return s.writeFileAtomic(indexFile, append(b, '\n'))
}

func (s *Store) writeFileAtomic(file string, b []byte) error {
	// In this command's own temporary directory, so that a kill between
	// create and rename leaves nothing the next command does not remove;
	// while the store is being created it has none yet.
	dir := s.tmpRoot()
	if s.temp != nil {
		dir = s.temp.dir
	}
	f, err := os.CreateTemp(dir, "."+file+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), filepath.Join(s.dir, file)); err != nil {
		return err
	}
	return syncDir(s.dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	// Some file systems cannot sync a directory; the rename is still
	// atomic there, only its durability is up to the file system.
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

// EntryName is the image name an index.json entry carries.
func EntryName(d v1.Descriptor) string {
	if n := d.Annotations[AnnotationRefName]; n != "" {
		return n
	}
	return d.Annotations[AnnotationContainerdName]
}

// matches reports whether index entry d is ref: its ref.name (or
// containerd name) annotation parses to the same reference, or, for a
// digest reference, it has that digest.
func matches(d v1.Descriptor, ref name.Reference) bool {
	if dg, ok := ref.(name.Digest); ok && d.Digest.String() == dg.DigestStr() {
		return true
	}
	for _, k := range []string{AnnotationRefName, AnnotationContainerdName} {
		v := d.Annotations[k]
		if v == "" {
			continue
		}
		if v == ref.Name() {
			return true
		}
		// Other tools may write short forms ("ubuntu:24.04").
		if r, err := name.ParseReference(v); err == nil && r.Name() == ref.Name() {
			return true
		}
	}
	return false
}

// SetEntry points ref at desc in index.json. The caller has made sure the
// blobs desc needs are in the pool (or recorded with a holder).
func (s *Store) SetEntry(ctx context.Context, ref name.Reference, desc v1.Descriptor) error {
	if err := s.writable(); err != nil {
		return err
	}
	return s.setEntry(ctx, ref, desc, "")
}

// setEntry points ref at desc, noting source (the repository the entry was
// pulled from) when it is not "".
func (s *Store) setEntry(ctx context.Context, ref name.Reference, desc v1.Descriptor, source string) error {
	unlock, err := s.lock(ctx, indexLock, true)
	if err != nil {
		return err
	}
	defer unlock()
	im, err := s.readIndexFile()
	if err != nil {
		return err
	}
	desc.Annotations = map[string]string{
		AnnotationRefName:        ref.Name(),
		AnnotationContainerdName: ref.Name(),
	}
	if source != "" {
		desc.Annotations[AnnotationSource] = source
	}
	if _, ok := ref.(name.Digest); ok {
		// A digest names content, not an entry: keep the other
		// entries with this digest.
		delete(desc.Annotations, AnnotationContainerdName)
	}
	kept := im.Manifests[:0]
	for _, d := range im.Manifests {
		if EntryName(d) != ref.Name() {
			kept = append(kept, d)
		}
	}
	im.Manifests = append(kept, desc)
	if err := s.writeIndexFile(im); err != nil {
		return fmt.Errorf("updating the image store index: %w", err)
	}
	return nil
}

// List returns the store's entries, sorted by name.
func (s *Store) List() ([]Entry, error) {
	im, err := s.readIndexFile()
	if err != nil {
		return nil, err
	}
	es := make([]Entry, 0, len(im.Manifests))
	for _, d := range im.Manifests {
		es = append(es, Entry{Name: EntryName(d), Descriptor: d})
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].Name < es[j].Name })
	return es, nil
}

// Descriptor returns the index.json entry of ref, or an error matching
// ErrNotFound.
func (s *Store) Descriptor(ref name.Reference) (v1.Descriptor, error) {
	im, err := s.readIndexFile()
	if err != nil {
		return v1.Descriptor{}, err
	}
	for i := len(im.Manifests) - 1; i >= 0; i-- {
		if matches(im.Manifests[i], ref) {
			return im.Manifests[i], nil
		}
	}
	return v1.Descriptor{}, fmt.Errorf("image %s is %w (%s)", ref.Name(), ErrNotFound, s.dir)
}

// Image returns the image stored under ref. Its manifest and config are
// read and verified now; each layer is verified as it is read.
func (s *Store) Image(ref name.Reference) (v1.Image, error) {
	desc, err := s.Descriptor(ref)
	if err != nil {
		return nil, err
	}
	if desc.MediaType.IsIndex() {
		return nil, fmt.Errorf("%s in the image store is an image index, not an image: pick a platform (see Resolver)", ref.Name())
	}
	return s.ImageAt(desc, ref.Name())
}

// Index returns the image index stored under ref.
func (s *Store) Index(ref name.Reference) (v1.ImageIndex, error) {
	desc, err := s.Descriptor(ref)
	if err != nil {
		return nil, err
	}
	if !desc.MediaType.IsIndex() {
		return nil, fmt.Errorf("%s in the image store is an image, not an image index", ref.Name())
	}
	return s.IndexAt(desc, ref.Name())
}

// Tag points dst at the entry of src.
func (s *Store) Tag(ctx context.Context, src, dst name.Reference) error {
	if err := s.writable(); err != nil {
		return err
	}
	desc, err := s.Descriptor(src)
	if err != nil {
		return err
	}
	return s.SetEntry(ctx, dst, desc)
}

// Delete removes the entry of ref (for a digest reference, every entry
// with that digest), or fails with ErrNotFound. Its blobs stay until GC.
func (s *Store) Delete(ctx context.Context, ref name.Reference) error {
	if err := s.writable(); err != nil {
		return err
	}
	unlock, err := s.lock(ctx, indexLock, true)
	if err != nil {
		return err
	}
	defer unlock()
	im, err := s.readIndexFile()
	if err != nil {
		return err
	}
	kept := im.Manifests[:0]
	for _, d := range im.Manifests {
		if !matches(d, ref) {
			kept = append(kept, d)
		}
	}
	if len(kept) == len(im.Manifests) {
		return fmt.Errorf("deleting image %s: %w (%s)", ref.Name(), ErrNotFound, s.dir)
	}
	im.Manifests = kept
	return s.writeIndexFile(im)
}

// GC removes every blob no index.json entry reaches, and temporary files
// abandoned by writers that died. It waits until no Write is in progress.
func (s *Store) GC(ctx context.Context) (GCResult, error) {
	if err := s.writable(); err != nil {
		return GCResult{}, err
	}
	var res GCResult
	unlockGC, err := s.lock(ctx, gcLock, true)
	if err != nil {
		return res, err
	}
	defer unlockGC()
	unlock, err := s.lock(ctx, indexLock, true)
	if err != nil {
		return res, err
	}
	defer unlock()
	im, err := s.readIndexFile()
	if err != nil {
		return res, err
	}
	keep := map[string]bool{}
	for _, d := range im.Manifests {
		if err := s.mark(d, EntryName(d), keep); err != nil {
			return res, fmt.Errorf("collecting garbage: %w", err)
		}
	}
	ents, err := os.ReadDir(s.blobDir())
	if err != nil {
		return res, err
	}
	for _, e := range ents {
		if keep[e.Name()] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if err := os.Remove(filepath.Join(s.blobDir(), e.Name())); err != nil {
			return res, fmt.Errorf("collecting garbage: %w", err)
		}
		res.Blobs++
		res.Bytes += fi.Size()
	}
	s.sweepTemp()
	return res, nil
}

// mark adds d and everything it references to keep. Content that is
// absent is skipped (another tool may have written a partial index), but
// a manifest that cannot be parsed stops GC: we cannot know what it needs.
func (s *Store) mark(d v1.Descriptor, image string, keep map[string]bool) error {
	if d.Digest.Algorithm != "sha256" {
		return nil
	}
	keep[d.Digest.Hex] = true
	switch {
	case d.MediaType.IsIndex():
		b, err := s.ReadBlob(d.Digest, d.Size, image)
		if errors.Is(err, ErrCorruptBlob) && !s.HasBlob(d.Digest) {
			return nil
		}
		if err != nil {
			return err
		}
		im, err := v1.ParseIndexManifest(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("parsing index %s of %s: %w", d.Digest, image, err)
		}
		for _, c := range im.Manifests {
			if err := s.mark(c, image, keep); err != nil {
				return err
			}
		}
	case d.MediaType.IsImage():
		b, err := s.ReadBlob(d.Digest, d.Size, image)
		if errors.Is(err, ErrCorruptBlob) && !s.HasBlob(d.Digest) {
			return nil
		}
		if err != nil {
			return err
		}
		m, err := v1.ParseManifest(bytes.NewReader(b))
		if err != nil {
			return fmt.Errorf("parsing manifest %s of %s: %w", d.Digest, image, err)
		}
		keep[m.Config.Digest.Hex] = true
		for _, l := range m.Layers {
			keep[l.Digest.Hex] = true
		}
		if m.Subject != nil {
			keep[m.Subject.Digest.Hex] = true
		}
	}
	return nil
}

// ImageAt returns a store-backed image for the manifest desc; name is
// the image named in errors.
func (s *Store) ImageAt(desc v1.Descriptor, image string) (v1.Image, error) {
	raw, err := s.ReadBlob(desc.Digest, desc.Size, image)
	if err != nil {
		return nil, err
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing manifest %s of image %s: %w", desc.Digest, image, err)
	}
	cfg, err := s.ReadBlob(m.Config.Digest, m.Config.Size, image)
	if err != nil {
		return nil, err
	}
	core := &storeImage{s: s, name: image, desc: desc, raw: raw, manifest: m, config: cfg}
	if cf, err := v1.ParseConfigFile(bytes.NewReader(cfg)); err == nil && len(cf.RootFS.DiffIDs) == len(m.Layers) {
		core.diffIDs = cf.RootFS.DiffIDs
	}
	return partial.CompressedToImage(core)
}

// storeImage is an image whose blobs live in the store.
type storeImage struct {
	s        *Store
	name     string
	desc     v1.Descriptor
	raw      []byte
	manifest *v1.Manifest
	config   []byte
	diffIDs  []v1.Hash
}

var _ partial.CompressedImageCore = (*storeImage)(nil)

// RawConfigFile implements partial.CompressedImageCore.
func (i *storeImage) RawConfigFile() ([]byte, error) { return i.config, nil }

// MediaType implements partial.CompressedImageCore.
func (i *storeImage) MediaType() (types.MediaType, error) {
	if i.manifest.MediaType != "" {
		return i.manifest.MediaType, nil
	}
	return i.desc.MediaType, nil
}

// RawManifest implements partial.CompressedImageCore.
func (i *storeImage) RawManifest() ([]byte, error) { return i.raw, nil }

// Descriptor keeps the entry's descriptor (and its platform). See
// partial.Descriptor.
func (i *storeImage) Descriptor() (*v1.Descriptor, error) {
	d := i.desc
	d.Annotations = nil
	return &d, nil
}

// LayerByDigest implements partial.CompressedImageCore.
func (i *storeImage) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	if h == i.manifest.Config.Digest {
		return &storeLayer{s: i.s, image: i.name, desc: i.manifest.Config}, nil
	}
	for n, l := range i.manifest.Layers {
		if l.Digest == h {
			sl := &storeLayer{s: i.s, image: i.name, desc: l}
			if i.diffIDs != nil {
				sl.diffID = &i.diffIDs[n]
			}
			return sl, nil
		}
	}
	return nil, fmt.Errorf("image %s has no layer %s", i.name, h)
}

// storeLayer is a blob in the store, verified as it is read.
type storeLayer struct {
	s      *Store
	image  string
	desc   v1.Descriptor
	diffID *v1.Hash
}

var _ partial.CompressedLayer = (*storeLayer)(nil)

// Digest implements partial.CompressedLayer.
func (l *storeLayer) Digest() (v1.Hash, error) { return l.desc.Digest, nil }

// Size implements partial.CompressedLayer.
func (l *storeLayer) Size() (int64, error) { return l.desc.Size, nil }

// MediaType implements partial.CompressedLayer.
func (l *storeLayer) MediaType() (types.MediaType, error) { return l.desc.MediaType, nil }

// Compressed implements partial.CompressedLayer.
func (l *storeLayer) Compressed() (io.ReadCloser, error) {
	return l.s.openBlob(l.desc.Digest, l.desc.Size, l.image)
}

// Descriptor keeps the manifest's layer descriptor (annotations, URLs).
func (l *storeLayer) Descriptor() (*v1.Descriptor, error) {
	d := l.desc
	return &d, nil
}

// DiffID implements partial.WithDiffID, from the config, so that asking
// for it does not decompress the layer.
func (l *storeLayer) DiffID() (v1.Hash, error) {
	if l.diffID != nil {
		return *l.diffID, nil
	}
	ext, err := partial.CompressedToLayer(&compressedOnly{l})
	if err != nil {
		return v1.Hash{}, err
	}
	return ext.DiffID()
}

// compressedOnly hides DiffID so partial computes it from the content.
type compressedOnly struct{ partial.CompressedLayer }

// IndexAt returns a store-backed image index for desc.
func (s *Store) IndexAt(desc v1.Descriptor, image string) (v1.ImageIndex, error) {
	raw, err := s.ReadBlob(desc.Digest, desc.Size, image)
	if err != nil {
		return nil, err
	}
	im, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing index %s of %s: %w", desc.Digest, image, err)
	}
	return &storeIndex{s: s, name: image, desc: desc, raw: raw, manifest: im}, nil
}

// storeIndex is an image index whose manifests live in the store.
type storeIndex struct {
	s        *Store
	name     string
	desc     v1.Descriptor
	raw      []byte
	manifest *v1.IndexManifest
}

var _ v1.ImageIndex = (*storeIndex)(nil)

// MediaType implements v1.ImageIndex.
func (x *storeIndex) MediaType() (types.MediaType, error) {
	if x.manifest.MediaType != "" {
		return x.manifest.MediaType, nil
	}
	return x.desc.MediaType, nil
}

// Digest implements v1.ImageIndex.
func (x *storeIndex) Digest() (v1.Hash, error) { return x.desc.Digest, nil }

// Size implements v1.ImageIndex.
func (x *storeIndex) Size() (int64, error) { return int64(len(x.raw)), nil }

// IndexManifest implements v1.ImageIndex.
func (x *storeIndex) IndexManifest() (*v1.IndexManifest, error) { return x.manifest.DeepCopy(), nil }

// RawManifest implements v1.ImageIndex.
func (x *storeIndex) RawManifest() ([]byte, error) { return x.raw, nil }

// Descriptor keeps the entry's descriptor. See partial.Descriptor.
func (x *storeIndex) Descriptor() (*v1.Descriptor, error) {
	d := x.desc
	d.Annotations = nil
	return &d, nil
}

func (x *storeIndex) child(h v1.Hash) (v1.Descriptor, error) {
	for _, d := range x.manifest.Manifests {
		if d.Digest == h {
			return d, nil
		}
	}
	return v1.Descriptor{}, fmt.Errorf("image index %s of %s has no manifest %s", x.desc.Digest, x.name, h)
}

// Image implements v1.ImageIndex.
func (x *storeIndex) Image(h v1.Hash) (v1.Image, error) {
	d, err := x.child(h)
	if err != nil {
		return nil, err
	}
	return x.s.ImageAt(d, x.name)
}

// ImageIndex implements v1.ImageIndex.
func (x *storeIndex) ImageIndex(h v1.Hash) (v1.ImageIndex, error) {
	d, err := x.child(h)
	if err != nil {
		return nil, err
	}
	return x.s.IndexAt(d, x.name)
}
