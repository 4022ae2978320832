package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// streamLayer is a layer whose tar stream a function writes on demand,
// gzip-compressed through a pipe: nothing of it is held in memory, so a
// child process's peak memory is the reader's.
type streamLayer struct {
	write func(tw *tar.Writer) error
}

var fakeDigest = v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("5e", 32)}

func (l *streamLayer) Digest() (v1.Hash, error)            { return fakeDigest, nil }
func (l *streamLayer) DiffID() (v1.Hash, error)            { return fakeDigest, nil }
func (l *streamLayer) Size() (int64, error)                { return -1, errors.New("unknown") }
func (l *streamLayer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }
func (l *streamLayer) Uncompressed() (io.ReadCloser, error) {
	return nil, errors.New("not used")
}
func (l *streamLayer) Compressed() (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	go func() {
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		tw := tar.NewWriter(zw)
		err := l.write(tw)
		if err == nil {
			err = tw.Close()
		}
		if err == nil {
			err = zw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// oneLineNaming checks the error is one line that names the layer and, when
// entry is not "", the entry.
func oneLineNaming(t *testing.T, err error, layer, entry string, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one naming layer %s", layer)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is not one line: %q", err)
	}
	if len(err.Error()) > 1000 {
		t.Errorf("error is %d bytes long: %.200q…", len(err.Error()), err)
	}
	wantErrContains(t, err, append([]string{layer, entry}, parts...)...)
}

// TestHostilePaths: names beyond PATH_MAX or NAME_MAX are refused with the
// layer and entry named, in linear time and bounded memory.
func TestHostilePaths(t *testing.T) {
	long := strings.Repeat(strings.Repeat("p", 200)+"/", 21) + "f" // 4222 bytes
	atLimit := strings.Repeat(strings.Repeat("q", 199)+"/", 20) + strings.Repeat("r", 94)
	for _, tc := range []struct {
		name    string
		entries []te
		entry   string
		want    string
	}{
		{"name beyond PATH_MAX", []te{file(long, "x")}, "pppp", "beyond PATH_MAX (4096)"},
		{"absolute name beyond PATH_MAX", []te{file("/"+long, "x")}, "pppp", "beyond PATH_MAX"},
		{"directory beyond PATH_MAX", []te{dir(long + "/")}, "pppp", "beyond PATH_MAX"},
		{"component beyond NAME_MAX", []te{file("a/"+strings.Repeat("b", 300), "x")}, "a/bbbb", "beyond NAME_MAX (255)"},
		{"symlink target beyond PATH_MAX", []te{symlink("l", "/"+long)}, `"l"`, "symlink target is 4223 bytes long"},
		{"hard link target beyond PATH_MAX", []te{hardlink("h", long)}, `"h"`, "hard link target is 4222 bytes long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "paths: beyond PATH_MAX")
			l := gzipLayer(t, tc.entries...)
			_, err := IndexLayer(context.Background(), l)
			oneLineNaming(t, err, digestOf(t, l), tc.entry, tc.want)
		})
	}
	t.Run("at the limit", func(t *testing.T) {
		hostile.Case(t, "paths: beyond PATH_MAX")
		if len(atLimit) != 4094 {
			t.Fatalf("test name is %d bytes", len(atLimit))
		}
		if _, err := mergeLayers(t, gzipLayer(t, file(atLimit, "x"))); err != nil {
			t.Errorf("a name whose absolute path is 4095 bytes: %v", err)
		}
	})
	t.Run("deep through a symlink", func(t *testing.T) {
		hostile.Case(t, "paths: beyond PATH_MAX")
		deep := strings.TrimSuffix(strings.Repeat("d/", 1000), "/") // 1999 bytes
		under := strings.TrimSuffix(strings.Repeat("u/", 1100), "/")
		l0 := gzipLayer(t, dir(deep), symlink("l", "/"+deep))
		l1 := gzipLayer(t, dir("l/"+under))
		_, err := mergeLayers(t, l0, l1)
		oneLineNaming(t, err, "layer 1 ("+digestOf(t, l1), "l/u/u", "beyond PATH_MAX")
	})
	t.Run("deep through a symlink into a deep tree", func(t *testing.T) {
		hostile.Case(t, "paths: beyond PATH_MAX")
		// Each link points at a long directory holding the next link.
		var es []te
		prev := ""
		for i := range 4 {
			d := prev + strings.Repeat(string(rune('a'+i)), 250) + "/" + strings.Repeat("x", 250) + "/" + strings.Repeat("y", 250) + "/" + strings.Repeat("z", 250)
			es = append(es, dir(strings.TrimPrefix(d, "/")))
			prev = "/" + strings.TrimPrefix(d, "/") + "/"
		}
		l0 := gzipLayer(t, es...)
		l1 := gzipLayer(t, dir(strings.TrimPrefix(prev, "/")+"s"), symlink("k", prev+"s"), dir("k/"+strings.Repeat("w", 200)))
		_, err := mergeLayers(t, l0, l1)
		if err == nil {
			t.Fatal("a directory past PATH_MAX through a symlink was accepted")
		}
		oneLineNaming(t, err, "layer 1", "", "PATH_MAX")
	})
	t.Run("cached index with a long name", func(t *testing.T) {
		hostile.Case(t, "paths: beyond PATH_MAX")
		idx, err := NewLayerIndex("sha256:forged", IndexEntry{Name: strings.TrimSuffix(long, "/"), Header: Header{Typeflag: tar.TypeReg, Mode: 0o644}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Merge([]*LayerIndex{idx})
		oneLineNaming(t, err, "sha256:forged", "pppp", "beyond PATH_MAX")
	})
	t.Run("10,000 directories deep", func(t *testing.T) {
		hostile.Case(t, "paths: 10,000 directories deep")
		if !hostile.InChild(t) {
			// Before names were bounded this took 1.8 GB at 20,000.
			hostile.RunChild(t, 96, 2*time.Minute)
			return
		}
		l := &streamLayer{write: func(tw *tar.Writer) error {
			name := make([]byte, 0, 20000)
			for range 10000 {
				name = append(name, "d/"...)
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: string(name), Mode: 0o755, ModTime: testTime}); err != nil {
					return err
				}
			}
			return nil
		}}
		start := time.Now()
		_, err := IndexLayer(context.Background(), l)
		oneLineNaming(t, err, fakeDigest.String(), "d/d/d", "beyond PATH_MAX")
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("refusing took %s", d)
		}
	})
}

// TestHostileLayers: the classes of hostile layer that were refused (or
// applied safely) before the hostile suite existed stay so.
func TestHostileLayers(t *testing.T) {
	ctx := context.Background()
	refused := []struct {
		class, name string
		entries     []te
		want        string
	}{
		{"traversal", "dot-dot name", []te{file("../etc/passwd", "x")}, "path escapes the root"},
		{"traversal", "dot-dot in the middle", []te{file("a/../../x", "x")}, "path escapes the root"},
		{"traversal", "absolute dot-dot", []te{file("/../x", "x")}, "path escapes the root"},
		{"traversal", "hard link out of the root", []te{hardlink("h", "../../etc/shadow")}, "path escapes the root"},
		{"whiteout abuse", "empty whiteout", []te{file(".wh.", "")}, "invalid whiteout name"},
		{"whiteout abuse", "dot-dot whiteout", []te{file("a/.wh..", "")}, "invalid whiteout name"},
		{"whiteout abuse", "whiteout as a directory", []te{dir(".wh.etc"), file(".wh.etc/passwd", "x")}, "reserved for whiteouts"},
		{"whiteout abuse", "whiteout escaping", []te{file("../.wh.etc", "")}, "path escapes the root"},
		{"link escapes", "device-like entry type", []te{{hdr: tar.Header{Typeflag: 'X', Name: "x", ModTime: testTime}}}, "unsupported tar entry type"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, tc.class)
			l := gzipLayer(t, tc.entries...)
			_, err := IndexLayer(ctx, l)
			oneLineNaming(t, err, digestOf(t, l), "", tc.want)
		})
	}

	// Symlinks are followed within the root: whatever they say, an entry
	// below one lands inside the image.
	for _, tc := range []struct {
		name   string
		link   string
		landed string
	}{
		{"absolute dot-dot target", "/../../../etc", "etc/passwd"},
		{"relative dot-dot target", "../../../../etc", "etc/passwd"},
		{"target through another link", "/e2", "etc/passwd"},
	} {
		t.Run("link escapes: "+tc.name, func(t *testing.T) {
			hostile.Case(t, "link escapes")
			v, err := mergeLayers(t, gzipLayer(t, dir("etc"), symlink("e2", "etc"), symlink("a", tc.link)), gzipLayer(t, file("a/passwd", "root::0:0::/:/bin/sh\n")))
			if err != nil {
				t.Fatal(err)
			}
			if n, ok := v.Lookup(tc.landed); !ok || n.Header.Typeflag != tar.TypeReg {
				t.Errorf("a/passwd did not land at /%s", tc.landed)
			}
		})
	}
	t.Run("link escapes: a symlink loop", func(t *testing.T) {
		hostile.Case(t, "link escapes")
		l1 := gzipLayer(t, file("a/x", "x"))
		_, err := mergeLayers(t, gzipLayer(t, symlink("a", "b"), symlink("b", "a")), l1)
		oneLineNaming(t, err, "layer 1 ("+digestOf(t, l1), `"a/x"`, "too many levels of symbolic links")
	})

	good := tarBytes(t, file("etc/passwd", "root:x:0:0::/root:/bin/sh\n"), file("big", strings.Repeat("z", 1<<16)))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(good)
	zw.Close()
	real := gzipLayer(t, file("etc/passwd", "root:x:0:0::/root:/bin/sh\n"), file("big", strings.Repeat("z", 1<<16)))
	blob := gz.Bytes()
	flipped := bytes.Clone(blob)
	flipped[len(flipped)/2] ^= 0x40
	for _, tc := range []struct {
		name string
		blob []byte
	}{
		{"truncated blob", blob[:len(blob)/2]},
		{"truncated to the header", blob[:10]},
		{"one flipped byte", flipped},
		{"another layer's blob", func() []byte { b, _ := io.ReadAll(must(gzipLayer(t, file("x", "y")).Compressed())); return b }()},
		{"trailing garbage", append(bytes.Clone(blob), "garbage"...)},
		{"empty blob", nil},
	} {
		t.Run("blobs: "+tc.name, func(t *testing.T) {
			hostile.Case(t, "truncated and mismatched blobs")
			l := &lyingLayer{Layer: real, blob: tc.blob}
			_, err := IndexLayer(ctx, l)
			oneLineNaming(t, err, digestOf(t, real), "")
			if err := ReadFiles(ctx, []v1.Layer{l}, nil, nil); err != nil {
				t.Logf("ReadFiles of nothing: %v", err)
			}
		})
	}

	t.Run("gzip bomb", func(t *testing.T) {
		hostile.Case(t, "gzip bombs")
		if !hostile.InChild(t) {
			hostile.RunChild(t, 96, 2*time.Minute)
			return
		}
		// 512 MiB of zeros in one file and 100,000 empty files: a few
		// hundred KiB compressed.
		l := &streamLayer{write: func(tw *tar.Writer) error {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "zeros", Size: 512 << 20, Mode: 0o644, ModTime: testTime}); err != nil {
				return err
			}
			zero := make([]byte, 1<<20)
			for range 512 {
				if _, err := tw.Write(zero); err != nil {
					return err
				}
			}
			return nil
		}}
		idx, _, err := IndexLayerCapture(ctx, l, func(_ string, size int64) bool { return size < 1<<20 })
		// The digest is made up, so the read must end in a digest error,
		// after the whole stream was read in bounded memory.
		oneLineNaming(t, err, fakeDigest.String(), "", "does not match its digest")
		_ = idx
	})
}

func must(rc io.ReadCloser, err error) io.ReadCloser {
	if err != nil {
		panic(err)
	}
	return rc
}

// TestHostileGraphWalks: the walk every manifest graph goes through stops
// in one line past its caps and when its context ends, and counts the
// walks of one command together.
func TestHostileGraphWalks(t *testing.T) {
	// endless is a graph of distinct nodes without end: node n has
	// children 2n+1 and 2n+2, until stop is closed.
	endless := func(stop <-chan struct{}) func(int) ([]int, error) {
		return func(n int) ([]int, error) {
			select {
			case <-stop:
				return nil, nil
			default:
			}
			return []int{2*n + 1, 2*n + 2}, nil
		}
	}
	key := func(n int) string { return strconv.Itoa(n) }
	none := func(int) error { return nil }
	t.Run("more distinct nodes than the cap", func(t *testing.T) {
		hostile.Case(t, "graph bombs")
		// A wide, shallow graph: 200,000 images in one index.
		err := Walk(context.Background(), 0, key, func(n int) ([]int, error) {
			if n > 0 {
				return nil, nil
			}
			out := make([]int, 200_000)
			for i := range out {
				out[i] = i + 1
			}
			return out, nil
		}, none)
		oneLineGraph(t, err, "more than 100000 manifests, configs and layers")
	})
	t.Run("a chain deeper than the cap", func(t *testing.T) {
		hostile.Case(t, "graph bombs")
		err := Walk(context.Background(), 0, key, func(n int) ([]int, error) { return []int{n + 1}, nil }, none)
		oneLineGraph(t, err, "nests more than 16 deep")
	})
	t.Run("walks sharing a budget", func(t *testing.T) {
		hostile.Case(t, "graph bombs")
		// 100 entries naming one graph of 1,000 nodes: 100,000 visits,
		// more than the budget of 50,000, though each walk is small.
		b := NewBudget(50_000)
		wide := func(n int) ([]int, error) {
			if n > 0 {
				return nil, nil
			}
			out := make([]int, 999)
			for i := range out {
				out[i] = i + 1
			}
			return out, nil
		}
		var err error
		for i := 0; i < 100 && err == nil; i++ {
			err = Walk(context.Background(), 0, key, wide, none, WithBudget(b))
		}
		oneLineGraph(t, err, "in all")
	})
	t.Run("SIGTERM during an endless walk", func(t *testing.T) {
		hostile.Case(t, "graph bombs")
		stop := make(chan struct{})
		defer close(stop)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			done <- Walk(ctx, 0, key, endless(stop), none, WithLimits(1<<62, 1<<62))
		}()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("walk = %v, want the context's error", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the walk went on 5 s after its context ended")
		}
	})
	t.Run("a digest listed as a layer and as an index", func(t *testing.T) {
		hostile.Case(t, "graph bombs")
		// The index is read (its image reached) however the walk met
		// its digest first.
		idx := v1.Descriptor{MediaType: types.OCIImageIndex, Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("1", 64)}}
		img := v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("2", 64)}}
		asLayer := idx
		asLayer.MediaType = types.OCILayer
		root := v1.Descriptor{MediaType: types.OCIImageIndex, Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("3", 64)}}
		// Only an index has children; a layer is a leaf.
		kids := map[v1.Hash][]v1.Descriptor{
			root.Digest: {asLayer, idx},
			idx.Digest:  {img},
		}
		var reached bool
		err := Walk(context.Background(), root, DescriptorKey,
			func(d v1.Descriptor) ([]v1.Descriptor, error) {
				if !d.MediaType.IsIndex() {
					return nil, nil
				}
				return kids[d.Digest], nil
			},
			func(d v1.Descriptor) error { reached = reached || d.Digest == img.Digest; return nil })
		if err != nil || !reached {
			t.Fatalf("walk = %v, reached the index's image: %v", err, reached)
		}
	})
}

func oneLineGraph(t *testing.T, err error, want string) {
	t.Helper()
	if !errors.Is(err, ErrGraphTooLarge) {
		t.Fatalf("walk = %v, want ErrGraphTooLarge", err)
	}
	if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), want) {
		t.Errorf("error %q is not one line saying %q", err, want)
	}
}

// rawLayer builds a gzip-compressed in-memory layer whose tar stream write
// makes as it likes (sparse entries, headers that lie).
func rawLayer(t *testing.T, write func(w io.Writer, tw *tar.Writer) error) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if err := write(zw, tw); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return static.NewLayer(buf.Bytes(), types.OCILayer)
}

// TestHostileSizes: an entry whose size no real tree has, however few
// bytes its layer takes (a sparse file of 8 EiB is a few hundred), is
// refused in one line naming the layer and the path, by IndexLayer and by
// ReadFiles, before a byte of it is read.
func TestHostileSizes(t *testing.T) {
	ctx := context.Background()
	const eib8 = 1<<63 - 1
	for _, tc := range []struct {
		name  string
		write func(w io.Writer, tw *tar.Writer) error
		entry string
		want  string
	}{
		{"a sparse file of 8 EiB", func(w io.Writer, tw *tar.Writer) error {
			return hostile.WriteSparse(w, tw, "src/project/huge", eib8, []byte("x"))
		}, "src/project/huge", "more than any real image holds"},
		{"a sparse file of 100 GiB under /ssebench", func(w io.Writer, tw *tar.Writer) error {
			return hostile.WriteSparse(w, tw, "ssebench/sse/scripts/test.sh", 100<<30, []byte("#!/bin/sh\n"))
		}, "ssebench/sse/scripts/test.sh", "more than any real image holds"},
		{"sparse files of 600 MiB each", func(w io.Writer, tw *tar.Writer) error {
			for _, n := range []string{"a", "b", "c"} {
				if err := hostile.WriteSparse(w, tw, n, 600<<20, []byte("x")); err != nil {
					return err
				}
			}
			return nil
		}, `"b"`, "sparse files to more than 1.0 GiB"},
		{"a header of 8 EiB", func(w io.Writer, tw *tar.Writer) error {
			// The stream ends long before: only the header lies. (A
			// writer of its own, since it would not end the entry.)
			var b bytes.Buffer
			if err := tar.NewWriter(&b).WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "big", Size: eib8, Mode: 0o644, ModTime: testTime}); err != nil {
				return err
			}
			_, err := w.Write(b.Bytes())
			return err
		}, `"big"`, "more than any real image holds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "sizes: sparse and huge entries")
			l := rawLayer(t, tc.write)
			start := time.Now()
			_, err := IndexLayer(ctx, l)
			oneLineNaming(t, err, digestOf(t, l), tc.entry, tc.want)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("refusing took %s", d)
			}
		})
	}
	t.Run("a small sparse file is a file", func(t *testing.T) {
		hostile.Case(t, "sizes: sparse and huge entries")
		l := rawLayer(t, func(w io.Writer, tw *tar.Writer) error {
			return hostile.WriteSparse(w, tw, "holes", 1<<20, []byte("data"))
		})
		v, err := mergeLayers(t, l)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := v.Lookup("holes")
		if !ok || n.Header.Size != 1<<20 {
			t.Fatalf("Lookup(holes) = %+v, %v; want a file of 1 MiB", n.Header, ok)
		}
		var got int64
		err = ReadFiles(ctx, []v1.Layer{l}, []Node{n}, func(_ Node, r io.Reader) error {
			got, err = io.Copy(io.Discard, r)
			return err
		})
		if err != nil || got != 1<<20 {
			t.Errorf("ReadFiles read %d bytes, %v; want 1 MiB", got, err)
		}
	})
	t.Run("the limit is the environment's", func(t *testing.T) {
		hostile.Case(t, "sizes: sparse and huge entries")
		l := gzipLayer(t, file("two-kib", strings.Repeat("k", 2048)))
		if _, err := IndexLayer(ctx, l); err != nil {
			t.Fatalf("a file of 2 KiB under the default limit: %v", err)
		}
		t.Setenv(MaxEntrySizeEnv, "1K")
		_, err := IndexLayer(ctx, l)
		oneLineNaming(t, err, digestOf(t, l), "two-kib", "the limit is 1.0 KiB; set "+MaxEntrySizeEnv)
	})
	t.Run("a cached index with an 8 EiB file", func(t *testing.T) {
		hostile.Case(t, "sizes: sparse and huge entries")
		idx, err := NewLayerIndex("sha256:forged", IndexEntry{Name: "huge", Header: Header{Typeflag: tar.TypeReg, Mode: 0o644, Size: eib8}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Merge([]*LayerIndex{idx})
		oneLineNaming(t, err, "sha256:forged", "huge", "more than any real image holds")
	})
}
