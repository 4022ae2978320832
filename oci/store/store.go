package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
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
)

// MaxManifestSize bounds every manifest and config ssebench reads into
// memory, from the store, an archive or a registry: registries refuse
// manifests above 4 MiB, and a config with a long history is a few hundred
// KiB. One cap for every source: a registry read that allowed more (it
// allowed 100 MiB) let a registry make a command parse what the store
// would then refuse, at hundreds of MB of memory.
const MaxManifestSize = 8 << 20

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
	dir   string
	fetch *fetchState
	temp  *tempClaim
	// ctx is WithContext's: the context of the reads that take none
	// (see WithContext).
	ctx      context.Context
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
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, fmt.Errorf("opening image store %s: %w", abs, err)
	}
	s := &Store{dir: abs, fetch: &fetchState{f: o.fetcher}, ctx: o.ctx, readOnly: o.readOnly}
	if s.readOnly {
		if _, err := os.Stat(filepath.Join(abs, layoutFile)); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w at %s", ErrNoStore, abs)
		} else if err != nil {
			return nil, fmt.Errorf("opening image store %s: %w", abs, err)
		}
		s.temp = &tempClaim{}
		return s, nil
	}
	if err := s.init(o.ctx); err != nil {
		return nil, fmt.Errorf("opening image store %s: %w", abs, err)
	}
	if err := s.claimTemp(); err != nil {
		return nil, fmt.Errorf("opening image store %s: %w", abs, err)
	}
	return s, nil
}

func (s *Store) init(ctx context.Context) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(s.dir, layoutFile))
	if errors.Is(err, fs.ErrNotExist) {
		// Two commands may create one store at once: the one that gets
		// the lock creates it, the other then finds it.
		unlock, lerr := s.lock(ctx, indexLock, true)
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
