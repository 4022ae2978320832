package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/imagetest"
	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// fanIn is a graph of 8 levels of 64 indexes, each listing 16 of the
// level below: 584 distinct nodes, 16^8 (4 billion) paths from the root.
// A walk that does not remember what it visited never ends.
var fanIn = bomb{levels: 8, width: 64, fanout: 16}

const bombRef = "localhost:5000/ssebench/tool/bomb:1.0.0"

// quickly runs f under a context that ends after limit and fails t when f
// does not return by then: a walk that follows every path of a graph bomb
// is cut by the context, and the error it returns fails the case.
func quickly(t *testing.T, limit time.Duration, what string, f func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	if err := f(ctx); err != nil {
		t.Fatalf("%s: %v (after %s)", what, err, time.Since(start).Round(time.Millisecond))
	}
	if el := time.Since(start); el > limit {
		t.Fatalf("%s took %s, want under %s", what, el, limit)
	}
}

// loadedBomb loads g's archive (entries index.json entries naming its
// root) into a new store.
func loadedBomb(t *testing.T, g bomb, entries int) (*store.Store, *Report) {
	t.Helper()
	bs, root := g.blobs()
	ar := archiveOf(t, bs, root, bombRef, entries)
	s := imagetest.Store(t)
	var rep *Report
	quickly(t, 10*time.Second, "load", func(ctx context.Context) (err error) {
		rep, err = Load(ctx, bytes.NewReader(ar), WithStore(s))
		return err
	})
	return s, rep
}

func oneLine(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one saying %q", parts)
	}
	if strings.Contains(err.Error(), "\n") || len(err.Error()) > 500 {
		t.Errorf("error is not one short line: %q", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not say %q", err, p)
		}
	}
}

// TestHostileGraphBombs: manifest graphs built to exhaust a walk (heavy
// fan-in, many entries naming one graph, deep nesting) are loaded, saved,
// listed, verified, collected, pushed and mirrored in time linear in their
// distinct nodes, or refused in one line past the caps.
func TestHostileGraphBombs(t *testing.T) {
	t.Run("load fan-in", func(t *testing.T) {
		hostile.Case(t, "graph bombs")
		_, rep := loadedBomb(t, fanIn, 1)
		if len(rep.Images) != 1 {
			t.Errorf("load recorded %d images, want 1", len(rep.Images))
		}
	})
	t.Run("load 3000 entries naming one fan-in graph", func(t *testing.T) {
		hostile.Case(t, "graph bombs")
		// Each entry's walk alone is 584 nodes: 1.7 million visits
		// unless the entries share what they visited.
		_, rep := loadedBomb(t, bomb{levels: 4, width: 64, fanout: 16}, 3000)
		if len(rep.Images) != 3000 {
			t.Errorf("load recorded %d images, want 3000", len(rep.Images))
		}
	})
	t.Run("store ls verify and gc of a fan-in graph", func(t *testing.T) {
		hostile.Case(t, "graph bombs")
		s, _ := loadedBomb(t, fanIn, 1)
		quickly(t, 10*time.Second, "store ls", func(context.Context) error {
			u, err := s.Usage()
			if err == nil && len(u.Images) != 1 {
				t.Errorf("store ls shows %d images, want 1", len(u.Images))
			}
			return err
		})
		quickly(t, 10*time.Second, "store verify", func(ctx context.Context) error {
			probs, err := s.Verify(ctx)
			if len(probs) > 0 {
				t.Errorf("store verify: %v", probs)
			}
			return err
		})
		quickly(t, 10*time.Second, "store gc", func(ctx context.Context) error {
			res, err := s.GC(ctx)
			if err == nil && res.Blobs != 0 {
				t.Errorf("store gc removed %d blobs of the loaded graph", res.Blobs)
			}
			return err
		})
	})
	t.Run("save of a fan-in graph", func(t *testing.T) {
		hostile.Case(t, "graph bombs")
		s, _ := loadedBomb(t, fanIn, 1)
		var buf bytes.Buffer
		quickly(t, 10*time.Second, "save", func(ctx context.Context) error {
			_, err := Save(ctx, &buf, []string{bombRef}, noAuth, WithStore(s), WithRegistryPrefix("localhost:5000/ssebench"))
			return err
		})
		bs, _ := fanIn.blobs()
		if got := len(tarEntries(t, buf.Bytes())); got < len(bs) {
			t.Errorf("the saved archive has %d entries, want the graph's %d blobs and more", got, len(bs))
		}
	})
	t.Run("push and mirror of a fan-in graph", func(t *testing.T) {
		hostile.Case(t, "graph bombs")
		s, rep := loadedBomb(t, fanIn, 1)
		srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
		defer srv.Close()
		host := strings.TrimPrefix(srv.URL, "http://")
		var prep *remote.PushReport
		quickly(t, 20*time.Second, "push", func(ctx context.Context) (err error) {
			prep, err = PushLoaded(ctx, rep, host+"/src", noAuth, WithStore(s))
			return err
		})
		bs, _ := fanIn.blobs()
		if prep.Manifests != len(bs)-2 {
			t.Errorf("push wrote %d manifests, want each of the %d once", prep.Manifests, len(bs)-2)
		}
		quickly(t, 20*time.Second, "mirror", func(ctx context.Context) error {
			_, err := remote.Mirror(ctx, []string{host + "/src/ssebench/tool/bomb:1.0.0"}, host+"/src", host+"/dst", remote.WithKeychain(authn.NewMultiKeychain()))
			return err
		})
	})
	t.Run("indexes nested beyond the depth cap", func(t *testing.T) {
		hostile.Case(t, "graph bombs")
		bs, root := deepChain(oci.MaxGraphDepth + 1)
		_, _, err := load(t, archiveOf(t, bs, root, bombRef, 1))
		oneLine(t, err, bombRef, "nests more than 16 deep")
		if !errors.Is(err, oci.ErrGraphTooLarge) {
			t.Errorf("error %v is not ErrGraphTooLarge", err)
		}
		// At the cap (the image's layer two below the innermost
		// index) the graph loads.
		bs, root = deepChain(oci.MaxGraphDepth - 2)
		if _, _, err := load(t, archiveOf(t, bs, root, bombRef, 1)); err != nil {
			t.Fatalf("load of %d nested indexes: %v", oci.MaxGraphDepth-2, err)
		}
	})
}

// storedBlobs counts the blobs of s's pool.
func storedBlobs(t *testing.T, s *store.Store) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(s.Dir(), "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// archiveFile writes b to a file and opens it, as the load command does.
func archiveFile(t *testing.T, b []byte) *os.File {
	t.Helper()
	p := filepath.Join(t.TempDir(), "archive.tar")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestHostileArchiveSizes: an archive entry that stands for more bytes
// than it holds (a sparse file) or than any image holds is refused before
// a byte of it is written, in one line naming it.
func TestHostileArchiveSizes(t *testing.T) {
	bs, root := bomb{levels: 0, width: 1, fanout: 1}.blobs()
	good := archiveOf(t, bs, root, bombRef, 1)
	// withEntry is good with raw tar bytes (whole entries) before its
	// end.
	withEntry := func(raw []byte) []byte {
		var buf bytes.Buffer
		tr := tar.NewReader(bytes.NewReader(good))
		tw := tar.NewWriter(&buf)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			tw.WriteHeader(h)
			io.Copy(tw, tr)
		}
		tw.Flush()
		buf.Write(raw)
		tw.Close()
		return buf.Bytes()
	}
	sparse, err := hostile.SparseEntry("blobs/sha256/"+strings.Repeat("ab", 32), 2<<30, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	var hugeHdr bytes.Buffer
	tar.NewWriter(&hugeHdr).WriteHeader(&tar.Header{Name: "blobs/sha256/" + strings.Repeat("cd", 32), Mode: 0o644, Size: 1<<63 - 1, Typeflag: tar.TypeReg})
	for _, tc := range []struct {
		name string
		ar   []byte
		want string
	}{
		{"a sparse blob of 2 GiB", withEntry(sparse), "is a sparse file of 2.0 GiB"},
		{"a blob header of 8 EiB", append(hugeHdr.Bytes(), make([]byte, 1024)...), "more than any image holds"},
	} {
		for _, file := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s (file %v)", tc.name, file), func(t *testing.T) {
				hostile.Case(t, "sizes: sparse and huge entries")
				s := imagetest.Store(t)
				var r io.Reader = bytes.NewBuffer(tc.ar) // read once
				if file {
					r = archiveFile(t, tc.ar)
				}
				start := time.Now()
				_, err := Load(context.Background(), r, WithStore(s))
				oneLine(t, err, tc.want)
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("refusing took %s", d)
				}
				if n := storedBlobs(t, s); n > 0 && file {
					t.Errorf("the store holds %d blobs after a refused load, want none", n)
				}
			})
		}
	}
}

// TestHostileLoadChecksFirst: an archive refused for its graph (past the
// node or depth cap, a blob missing, a name refused) is refused before a
// blob is written: the store is left as it was.
func TestHostileLoadChecksFirst(t *testing.T) {
	deep, deepRoot := deepChain(oci.MaxGraphDepth + 1)
	bs, root := bomb{levels: 0, width: 1, fanout: 1}.blobs()
	for _, tc := range []struct {
		name  string
		ar    func(t *testing.T) []byte
		check func(string) error
		want  string
	}{
		{"indexes nested beyond the depth cap", func(t *testing.T) []byte { return archiveOf(t, deep, deepRoot, bombRef, 1) }, nil, "nests more than 16 deep"},
		{"a blob missing", func(t *testing.T) []byte { return archiveOf(t, bs[1:], root, bombRef, 1) }, nil, "is missing from the archive"},
		{"a name refused", func(t *testing.T) []byte { return archiveOf(t, bs, root, bombRef, 1) }, func(string) error { return errors.New("not a name of ours") }, "not a name of ours"},
		{"a size that is not the descriptor's", func(t *testing.T) []byte {
			forged := append([]blob(nil), bs...)
			forged[0].raw = append(bytes.Clone(forged[0].raw), 0) // the layer, one byte longer
			ar := archiveOf(t, forged, root, bombRef, 1)
			// Keep the name of the layer's real digest.
			return bytes.Replace(ar, []byte(sum(forged[0].raw).Hex), []byte(bs[0].h.Hex), 1)
		}, nil, "has 89 bytes in the archive, but its descriptor says 88"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "load: caps checked first")
			s := imagetest.Store(t)
			opts := []Option{WithStore(s)}
			if tc.check != nil {
				opts = append(opts, WithNameCheck(tc.check))
			}
			_, err := Load(context.Background(), archiveFile(t, tc.ar(t)), opts...)
			oneLine(t, err, tc.want)
			if n := storedBlobs(t, s); n > 0 {
				t.Errorf("the store holds %d blobs after a refused load, want none", n)
			}
		})
	}
	t.Run("indexes of 100,001 manifests", func(t *testing.T) {
		hostile.Case(t, "load: caps checked first")
		// 100,003 blobs of a few hundred bytes: writing each before
		// the cap was checked took minutes.
		p := filepath.Join(t.TempDir(), "wide.tar")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		tw := tar.NewWriter(f)
		put := func(name string, raw []byte) {
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(raw)), Typeflag: tar.TypeReg}); err != nil {
				t.Fatal(err)
			}
			tw.Write(raw)
		}
		put(layoutFile, []byte(layoutJSON))
		var kids []v1.Descriptor
		cfg := v1.Descriptor{MediaType: types.OCIConfigJSON, Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("0", 64)}, Size: 2}
		for i := range oci.MaxGraphNodes + 1 {
			raw := []byte(fmt.Sprintf(`{"schemaVersion":2,"mediaType":"%s","config":{"mediaType":"%s","digest":"%s","size":2},"layers":[],"annotations":{"n":"%d"}}`, types.OCIManifestSchema1, cfg.MediaType, cfg.Digest, i))
			h := sum(raw)
			put("blobs/sha256/"+h.Hex, raw)
			kids = append(kids, v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: h, Size: int64(len(raw))})
		}
		put("blobs/sha256/"+cfg.Digest.Hex, []byte("{}"))
		// Indexes of 10,000 each: one of them all would pass the
		// cap of a manifest's size first.
		var subs []v1.Descriptor
		for len(kids) > 0 {
			n := min(10_000, len(kids))
			sub := mustJSON(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: kids[:n]})
			kids = kids[n:]
			put("blobs/sha256/"+sum(sub).Hex, sub)
			subs = append(subs, v1.Descriptor{MediaType: types.OCIImageIndex, Digest: sum(sub), Size: int64(len(sub))})
		}
		idx := mustJSON(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: subs})
		ih := sum(idx)
		put("blobs/sha256/"+ih.Hex, idx)
		put(indexFile, mustJSON(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{{
			MediaType: types.OCIImageIndex, Digest: ih, Size: int64(len(idx)), Annotations: map[string]string{store.AnnotationRefName: bombRef}}}}))
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		s := imagetest.Store(t)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		start := time.Now()
		_, err = Load(ctx, f, WithStore(s))
		t.Logf("refused after %s", time.Since(start).Round(time.Millisecond))
		oneLine(t, err, bombRef, "more than 100000 manifests")
		if n := storedBlobs(t, s); n > 0 {
			t.Errorf("the store holds %d blobs after a refused load, want none", n)
		}
	})
}

// TestHostileMislabelledManifests: an index.json entry (or an index's
// child) that calls an index an image manifest, or a manifest an index, is
// refused in one line naming its digest and what it really is. Before, the
// index was read as a manifest without a config and refused with an empty
// digest ("blob  of … is missing").
func TestHostileMislabelledManifests(t *testing.T) {
	bs, root := bomb{levels: 1, width: 1, fanout: 1}.blobs() // root: an index over an index over an image
	asManifest := root
	asManifest.MediaType = types.OCIManifestSchema1
	img := bs[2] // the image manifest, below the config and the layer
	imgAsIndex := v1.Descriptor{MediaType: types.OCIImageIndex, Digest: img.h, Size: int64(len(img.raw))}
	for _, tc := range []struct {
		name string
		desc v1.Descriptor
		want string
	}{
		{"an index called a manifest", asManifest, `is listed as "application/vnd.oci.image.manifest.v1+json" but is "application/vnd.oci.image.index.v1+json"`},
		{"a manifest called an index", imgAsIndex, `is listed as "application/vnd.oci.image.index.v1+json" but is "application/vnd.oci.image.manifest.v1+json"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "names: load archive refs")
			_, _, err := load(t, archiveOf(t, bs, tc.desc, bombRef, 1))
			oneLine(t, err, tc.desc.Digest.String(), tc.want)
			if err != nil && (strings.Contains(err.Error(), "blob : ") || strings.Contains(err.Error(), "blob  ")) {
				t.Errorf("error %q names an empty digest", err)
			}
		})
	}
}
