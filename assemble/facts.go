package assemble

import (
	"cmp"
	"path"
	"runtime"
	"slices"
	"sync/atomic"

	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/klauspost/compress/gzip"
	"golang.org/x/sync/errgroup"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/oci"
)

// Facts caches what a layer teaches, keyed by the layer's digest: its
// index (every entry's header) and the content of the few small files the
// assembler reads (account files, .gitignore files). Base layers are shared
// by every task of a language, so the second tool image on a base reads only
// the layers it has not seen.
//
// A nil *Facts caches nothing. Facts is safe for concurrent use by several
// processes: entries are written to a temporary name and renamed.
type Facts struct {
	dir string
	// indexed counts the layers that were read to index them, for tests and
	// benchmarks that check the cache works; fetched those whose facts
	// came from the registry.
	indexed, fetched atomic.Int64
	// remote shares facts through a registry (see WithRemote); nil when
	// there is none.
	remote *remoteFacts
}

// NewFacts returns a cache in dir, created if missing.
func NewFacts(dir string) (*Facts, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating layer facts cache: %w", err)
	}
	return &Facts{dir: dir}, nil
}

// Indexed returns how many layers this Facts had to read to index them.
func (f *Facts) Indexed() int {
	if f == nil {
		return 0
	}
	return int(f.indexed.Load())
}

type layerFacts struct {
	Index *oci.LayerIndex `json:"index"`
	// Files maps a path inside the layer to its content, base64.
	Files map[string]string `json:"files,omitempty"`
}

func (f *Facts) path(d v1.Hash, kind string) string {
	return filepath.Join(f.dir, fmt.Sprintf("v%d", oci.IndexFormat), d.Algorithm, d.Hex+"."+kind+".json.gz")
}

// Index returns l's index, from the cache when it has it.
func (f *Facts) Index(ctx context.Context, l v1.Layer) (*oci.LayerIndex, error) {
	d, err := l.Digest()
	if err != nil {
		return nil, err
	}
	if f != nil {
		var idx oci.LayerIndex
		if ok := f.load(f.path(d, "index"), &idx); ok && idx.Format == oci.IndexFormat && idx.Digest == d.String() {
			return &idx, nil
		}
	}
	if f == nil {
		return oci.IndexLayer(ctx, l)
	}
	if f.remote != nil {
		if lf, ok := f.remote.fetch(d); ok {
			f.fetched.Add(1)
			f.store(f.path(d, "index"), lf.Index)
			if len(lf.Files) > 0 {
				f.store(f.path(d, "files"), lf.Files)
			}
			return lf.Index, nil
		}
	}
	// The small files the assembler reads come along with the index, so
	// that no layer is read a second time for them.
	idx, files, err := oci.IndexLayerCapture(ctx, l, wantSmall)
	if err != nil {
		return nil, err
	}
	f.indexed.Add(1)
	f.store(f.path(d, "index"), idx)
	if len(files) > 0 {
		enc := make(map[string]string, len(files))
		for k, v := range files {
			enc[k] = base64.StdEncoding.EncodeToString(v)
		}
		f.store(f.path(d, "files"), enc)
	}
	if f.remote != nil && f.remote.publish {
		f.remote.push(d, idx, files)
	}
	return idx, nil
}

// capturedFiles are the account files read from the case image.
var capturedFiles = map[string]bool{
	"etc/passwd": true, "etc/group": true, "etc/shadow": true, "etc/gshadow": true,
	"etc/subuid": true, "etc/subgid": true, "etc/login.defs": true,
}

// maxCaptured bounds one captured file: account, ignore and attributes
// files are small.
const maxCaptured = 256 << 10

// wantSmall says which files Index keeps: the account files and every
// .gitignore and .gitattributes, when small.
func wantSmall(name string, size int64) bool {
	if size > maxCaptured {
		return false
	}
	base := path.Base(name)
	return capturedFiles[name] || base == ".gitignore" || base == ".gitattributes"
}

// indexJobs is how many layers View indexes at once: each decompresses a
// stream on its own core.
var indexJobs = runtime.GOMAXPROCS(0)

// View indexes every layer (bottom first), several at once, and merges
// them.
func (f *Facts) View(ctx context.Context, layers []v1.Layer) (*oci.View, error) {
	idxs, err := f.indexes(ctx, layers)
	if err != nil {
		return nil, err
	}
	return oci.Merge(idxs)
}

// indexes indexes every layer, several at once.
func (f *Facts) indexes(ctx context.Context, layers []v1.Layer) ([]*oci.LayerIndex, error) {
	set := indexSet{layers: layers}
	if err := f.indexSets(ctx, &set); err != nil {
		return nil, err
	}
	return set.idxs, nil
}

// indexSet is the layers of one image to index, for indexSets: what names
// the image in errors ("reading <what>: …"; none when empty), and idxs
// receives the indexes.
type indexSet struct {
	layers []v1.Layer
	what   string
	idxs   []*oci.LayerIndex
}

// indexSets indexes the layers of several images in one pool, largest
// first: a cold tool assembly decompresses them all, on every core, and a
// 200 MB layer started last (or the runtime's 64 MB one while the other
// cores had nothing left) kept the assembly waiting on one core.
func (f *Facts) indexSets(ctx context.Context, sets ...*indexSet) error {
	type job struct {
		set  *indexSet
		i    int
		size int64
	}
	var jobs []job
	for _, s := range sets {
		s.idxs = make([]*oci.LayerIndex, len(s.layers))
		for i, l := range s.layers {
			size, err := l.Size()
			if err != nil {
				size = 0
			}
			jobs = append(jobs, job{s, i, size})
		}
	}
	slices.SortStableFunc(jobs, func(a, b job) int { return cmp.Compare(b.size, a.size) })
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(indexJobs)
	for _, j := range jobs {
		g.Go(func() error {
			idx, err := f.Index(gctx, j.set.layers[j.i])
			if err != nil && j.set.what != "" {
				return fmt.Errorf("reading %s: %w", j.set.what, err)
			}
			j.set.idxs[j.i] = idx
			return err
		})
	}
	return g.Wait()
}

// ReadSmall returns the content of the regular-file nodes, which must be
// small (they are held in memory), keyed by node path. Content cached for a
// (layer, path) pair is not read again.
func (f *Facts) ReadSmall(ctx context.Context, layers []v1.Layer, nodes []oci.Node) (map[string][]byte, error) {
	out := make(map[string][]byte, len(nodes))
	cached := map[int]map[string]string{}
	var missing []oci.Node
	for _, n := range nodes {
		if f != nil {
			if _, ok := cached[n.Layer]; !ok {
				cached[n.Layer] = f.files(layers[n.Layer])
			}
			if s, ok := cached[n.Layer][n.ContentPath]; ok {
				if b, err := base64.StdEncoding.DecodeString(s); err == nil {
					out[n.Path] = b
					continue
				}
			}
		}
		missing = append(missing, n)
	}
	if len(missing) == 0 {
		return out, nil
	}
	read := map[int]map[string]string{}
	err := oci.ReadFiles(ctx, layers, missing, func(n oci.Node, r io.Reader) error {
		b, err := io.ReadAll(io.LimitReader(r, maxSmallFile+1))
		if err != nil {
			return err
		}
		if len(b) > maxSmallFile {
			return fmt.Errorf("/%s is larger than %d bytes: it cannot be an account, ignore or attributes file", n.Path, maxSmallFile)
		}
		out[n.Path] = b
		if f == nil {
			return nil // nothing to cache
		}
		if read[n.Layer] == nil {
			read[n.Layer] = map[string]string{}
		}
		read[n.Layer][n.ContentPath] = base64.StdEncoding.EncodeToString(b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if f != nil {
		for li, files := range read {
			merged := cached[li]
			if merged == nil {
				merged = map[string]string{}
			}
			for k, v := range files {
				merged[k] = v
			}
			d, err := layers[li].Digest()
			if err == nil {
				f.store(f.path(d, "files"), merged)
			}
		}
	}
	return out, nil
}

// maxSmallFile bounds what ReadSmall holds in memory per file.
const maxSmallFile = 16 << 20

func (f *Facts) files(l v1.Layer) map[string]string {
	d, err := l.Digest()
	if err != nil {
		return nil
	}
	m := map[string]string{}
	f.load(f.path(d, "files"), &m)
	return m
}

// load reads a cache entry; any problem is a miss.
func (f *Facts) load(p string, v any) bool {
	fh, err := os.Open(p)
	if err != nil {
		return false
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		return false
	}
	if idx, ok := v.(*oci.LayerIndex); ok {
		// An entry at a time: a decoder holds the whole document.
		got, err := oci.ReadLayerIndexJSON(zr)
		if err != nil {
			return false
		}
		*idx = *got
		return true
	}
	return json.NewDecoder(zr).Decode(v) == nil
}

// store writes a cache entry; a failure only costs a later re-read.
func (f *Facts) store(p string, v any) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return
	}
	// Mode 0600, the mode cache entries have always had (CreateTemp's).
	_ = safefile.WriteFile(p, 0o600, func(f *os.File) error {
		// The fastest level: a cold assembly writes the facts of every
		// layer it reads, and the cache's size hardly matters.
		zw, err := gzip.NewWriterLevel(f, gzip.BestSpeed)
		if err != nil {
			return err
		}
		if idx, ok := v.(*oci.LayerIndex); ok {
			// An entry at a time: an encoder builds the whole
			// document in memory first (40 MB for 200,000 files).
			err = idx.WriteJSON(zw)
		} else {
			err = json.NewEncoder(zw).Encode(v)
		}
		if cerr := zw.Close(); err == nil {
			err = cerr
		}
		return err
	})
}
