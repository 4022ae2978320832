package oci

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// content returns an opener of body whose reader is wrapped by wrap, so
// tests can vary how the bytes arrive (one at a time, half reads).
func content(body string, wrap func(io.Reader) io.Reader) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) {
		var r io.Reader = strings.NewReader(body)
		if wrap != nil {
			r = wrap(r)
		}
		return io.NopCloser(r), nil
	}
}

func regEntry(name, body string, wrap func(io.Reader) io.Reader) Entry {
	return Entry{
		Header: &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body))},
		Open:   content(body, wrap),
	}
}

// sampleEntries is a small tree, deliberately out of order.
func sampleEntries(wrap func(io.Reader) io.Reader) []Entry {
	big := strings.Repeat("ssebench layer content\n", 50_000) // ~1 MiB, several compressor blocks
	return []Entry{
		regEntry("usr/bin/tool", big, wrap),
		{Header: &tar.Header{Typeflag: tar.TypeDir, Name: "usr/bin", Mode: 0o755}},
		{Header: &tar.Header{Typeflag: tar.TypeDir, Name: "usr", Mode: 0o755}},
		regEntry("etc/passwd", "root:x:0:0:root:/root:/bin/bash\n", wrap),
		{Header: &tar.Header{Typeflag: tar.TypeDir, Name: "etc/", Mode: 0o755}},
		{Header: &tar.Header{Typeflag: tar.TypeSymlink, Name: "bin", Linkname: "usr/bin", Mode: 0o777}},
		{Header: &tar.Header{Typeflag: tar.TypeLink, Name: "usr/bin/tool2", Linkname: "usr/bin/tool"}},
		regEntry("usr/bin-extra", "x", wrap),
	}
}

func writeLayer(t *testing.T, dir string, entries []Entry, opts ...Option) *SpooledLayer {
	t.Helper()
	l, err := WriteLayer(context.Background(), dir, entries, opts...)
	if err != nil {
		t.Fatalf("WriteLayer() = %v", err)
	}
	sl := l.(*SpooledLayer)
	t.Cleanup(func() { sl.Remove() })
	return sl
}

func mustDigest(t *testing.T, l v1.Layer) v1.Hash {
	t.Helper()
	d, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestWriteLayerDeterministic(t *testing.T) {
	for _, c := range []Compression{Gzip, Zstd} {
		t.Run(c.String(), func(t *testing.T) {
			dir := t.TempDir()
			a := writeLayer(t, dir, sampleEntries(nil), WithCompression(c))
			// Same entries in another order, their bytes arriving in
			// other chunks: same layer.
			e := sampleEntries(iotest.OneByteReader)
			for i, j := 0, len(e)-1; i < j; i, j = i+1, j-1 {
				e[i], e[j] = e[j], e[i]
			}
			b := writeLayer(t, dir, e, WithCompression(c))
			if da, db := mustDigest(t, a), mustDigest(t, b); da != db {
				t.Errorf("digests differ: %s and %s", da, db)
			}
			if mt, _ := a.MediaType(); mt != c.MediaType() {
				t.Errorf("MediaType() = %s, want %s", mt, c.MediaType())
			}
		})
	}
}

func TestWriteLayerConcurrentSameDigest(t *testing.T) {
	dir := t.TempDir()
	want := mustDigest(t, writeLayer(t, dir, sampleEntries(nil)))
	wantZ := mustDigest(t, writeLayer(t, dir, sampleEntries(nil), WithCompression(Zstd)))

	wraps := []func(io.Reader) io.Reader{nil, iotest.OneByteReader, iotest.HalfReader, iotest.DataErrReader}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 4} {
		runtime.GOMAXPROCS(procs)
		var wg sync.WaitGroup
		got := make([]v1.Hash, 2*len(wraps))
		errs := make([]error, len(got))
		for i := range got {
			wg.Go(func() {
				c := Gzip
				if i%2 == 1 {
					c = Zstd
				}
				l, err := WriteLayer(context.Background(), dir, sampleEntries(wraps[i/2]), WithCompression(c))
				if err != nil {
					errs[i] = err
					return
				}
				defer l.(*SpooledLayer).Remove()
				got[i], errs[i] = l.Digest()
			})
		}
		wg.Wait()
		for i := range got {
			w := want
			if i%2 == 1 {
				w = wantZ
			}
			if errs[i] != nil {
				t.Fatalf("GOMAXPROCS=%d build %d: %v", procs, i, errs[i])
			}
			if got[i] != w {
				t.Errorf("GOMAXPROCS=%d build %d: digest %s, want %s", procs, i, got[i], w)
			}
		}
	}
}

func TestGzipHeaderHasNoNameOrTime(t *testing.T) {
	l := writeLayer(t, t.TempDir(), sampleEntries(nil))
	b, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 10 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("spool file does not start with a gzip header: % x", b[:min(len(b), 10)])
	}
	const fname, fcomment = 1 << 3, 1 << 4
	if b[3]&(fname|fcomment) != 0 {
		t.Errorf("gzip FLG = %#x, want no FNAME or FCOMMENT", b[3])
	}
	if mtime := b[4:8]; !bytes.Equal(mtime, []byte{0, 0, 0, 0}) {
		t.Errorf("gzip MTIME = % x, want zero", mtime)
	}
}

func TestZstdLayer(t *testing.T) {
	l := writeLayer(t, t.TempDir(), sampleEntries(nil), WithCompression(Zstd))
	b, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, zstdMagic) {
		t.Fatalf("spool file does not start with the zstd magic: % x", b[:4])
	}
	if mt, _ := l.MediaType(); mt != types.OCILayerZStd {
		t.Errorf("MediaType() = %s, want %s", mt, types.OCILayerZStd)
	}
	idx, err := IndexLayer(context.Background(), l)
	if err != nil {
		t.Fatalf("IndexLayer() = %v", err)
	}
	if got := idx.Len(); got != len(sampleEntries(nil)) {
		t.Errorf("IndexLayer() found %d entries, want %d", got, len(sampleEntries(nil)))
	}
}

// TestSpooledLayerIdentity recomputes digest, size and diffID from the
// spool file and checks them against what the writer computed in one pass.
func TestSpooledLayerIdentity(t *testing.T) {
	for _, c := range []Compression{Gzip, Zstd} {
		t.Run(c.String(), func(t *testing.T) {
			l := writeLayer(t, t.TempDir(), sampleEntries(nil), WithCompression(c))
			b, err := os.ReadFile(l.Path())
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			if got, want := mustDigest(t, l).Hex, hex.EncodeToString(sum[:]); got != want {
				t.Errorf("Digest() = %s, want %s", got, want)
			}
			if size, _ := l.Size(); size != int64(len(b)) {
				t.Errorf("Size() = %d, want %d", size, len(b))
			}
			rc, err := l.Uncompressed()
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			h, _, err := v1.SHA256(rc)
			if err != nil {
				t.Fatal(err)
			}
			if diffID, _ := l.DiffID(); diffID != h {
				t.Errorf("DiffID() = %s, want %s", diffID, h)
			}
			// ggcr's own cross-check of digest, diffID and size (it
			// reads gzip only).
			if c != Gzip {
				return
			}
			if err := validate.Layer(l); err != nil {
				t.Errorf("validate.Layer() = %v", err)
			}
		})
	}
}

// TestWriteHeaderNormalises reads back what LayerWriter wrote.
func TestWriteHeaderNormalises(t *testing.T) {
	when := time.Date(2023, 1, 2, 3, 4, 5, 678, time.FixedZone("X", 3600))
	in := []*tar.Header{
		{Typeflag: tar.TypeDir, Name: "./etc", Mode: 0o40755, Uname: "root", Gname: "root", ModTime: when, AccessTime: when, ChangeTime: when},
		{Typeflag: tar.TypeRegA, Name: "/etc//passwd", Mode: 0o100644, Uid: 1000, Gid: 1000, Uname: "model", Size: 0},
		{Typeflag: tar.TypeLink, Name: "etc/passwd-", Linkname: "/etc/passwd", Size: 99},
		{Typeflag: tar.TypeSymlink, Name: "etc/mtab", Linkname: "../proc/self/mounts"},
		{Typeflag: tar.TypeReg, Name: "bin/ping", Mode: 0o4755, PAXRecords: map[string]string{"SCHILY.xattr.security.capability": "\x01", "comment": "dropped"}},
	}
	dir := t.TempDir()
	w, err := NewLayerWriter(dir, WithDefaultTime(time.Unix(1700000000, 5)))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range in {
		if err := w.WriteHeader(h); err != nil {
			t.Fatalf("WriteHeader(%q) = %v", h.Name, err)
		}
	}
	l, err := w.Finish()
	if err != nil {
		t.Fatalf("Finish() = %v", err)
	}
	defer l.(*SpooledLayer).Remove()
	if in[0].Name != "./etc" || in[0].Uname != "root" {
		t.Errorf("WriteHeader modified its argument: %+v", in[0])
	}

	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got []tar.Header
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tar.Header{Typeflag: h.Typeflag, Name: h.Name, Linkname: h.Linkname, Mode: h.Mode,
			Uid: h.Uid, Gid: h.Gid, Uname: h.Uname, Gname: h.Gname, Size: h.Size, ModTime: h.ModTime.UTC(),
			AccessTime: h.AccessTime, ChangeTime: h.ChangeTime, PAXRecords: h.PAXRecords})
	}
	def := time.Unix(1700000000, 0).UTC()
	want := []tar.Header{
		{Typeflag: tar.TypeDir, Name: "etc/", Mode: 0o755, ModTime: time.Date(2023, 1, 2, 2, 4, 5, 0, time.UTC)},
		{Typeflag: tar.TypeReg, Name: "etc/passwd", Mode: 0o644, Uid: 1000, Gid: 1000, ModTime: def},
		{Typeflag: tar.TypeLink, Name: "etc/passwd-", Linkname: "etc/passwd", ModTime: def},
		{Typeflag: tar.TypeSymlink, Name: "etc/mtab", Linkname: "../proc/self/mounts", ModTime: def},
		{Typeflag: tar.TypeReg, Name: "bin/ping", Mode: 0o4755, ModTime: def,
			PAXRecords: map[string]string{"SCHILY.xattr.security.capability": "\x01"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headers written (-want +got):\n%s", diff)
	}
}

func TestWriteHeaderRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		hdr  tar.Header
		want string
	}{
		{"escaping name", tar.Header{Typeflag: tar.TypeReg, Name: "../etc/passwd"}, `"../etc/passwd": path escapes the root`},
		{"root", tar.Header{Typeflag: tar.TypeDir, Name: "./"}, "root directory"},
		{"escaping hard link", tar.Header{Typeflag: tar.TypeLink, Name: "x", Linkname: "a/../../x"}, `hard link target "a/../../x"`},
		{"symlink without target", tar.Header{Typeflag: tar.TypeSymlink, Name: "x"}, "without a target"},
		{"unsupported type", tar.Header{Typeflag: tar.TypeGNUSparse, Name: "x"}, "unsupported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewLayerWriter(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			err = w.WriteHeader(&tc.hdr)
			wantErrContains(t, err, tc.want)
			// A rejected header leaves the writer usable.
			if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "ok"}); err != nil {
				t.Errorf("WriteHeader after a rejected header = %v", err)
			}
		})
	}
}

func TestWriteLayerSortsComponentWise(t *testing.T) {
	var entries []Entry
	for _, n := range []string{"a-b", "a/b/c", "a.txt", "a/b", "a", "b", "a/b-c", "a/b0"} {
		entries = append(entries, regEntry(n, n, nil))
	}
	l := writeLayer(t, t.TempDir(), entries)
	idx, err := IndexLayer(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range idx.Entries() {
		got = append(got, e.Name)
	}
	want := []string{"a", "a/b", "a/b/c", "a/b-c", "a/b0", "a-b", "a.txt", "b"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entry order (-want +got):\n%s", diff)
	}
}

func TestWriteLayerErrorsLeaveNoFile(t *testing.T) {
	errBoom := errors.New("boom")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		entries []Entry
		want    string
	}{{
		name: "short content",
		entries: []Entry{{
			Header: &tar.Header{Typeflag: tar.TypeReg, Name: "usr/share/short", Size: 10},
			Open:   content("12345", nil),
		}},
		want: `entry "usr/share/short": content is 5 bytes, but its header declares 10`,
	}, {
		name: "long content",
		entries: []Entry{{
			Header: &tar.Header{Typeflag: tar.TypeReg, Name: "long", Size: 2},
			Open:   content("12345", nil),
		}},
		want: `entry "long": content is longer than the 2 bytes`,
	}, {
		name: "no opener",
		entries: []Entry{{
			Header: &tar.Header{Typeflag: tar.TypeReg, Name: "empty", Size: 2},
		}},
		want: `"empty": 2 bytes declared but no content`,
	}, {
		name: "open fails",
		entries: []Entry{{
			Header: &tar.Header{Typeflag: tar.TypeReg, Name: "f", Size: 2},
			Open:   func() (io.ReadCloser, error) { return nil, errBoom },
		}},
		want: `opening content of "f": boom`,
	}, {
		name:    "duplicate",
		entries: []Entry{regEntry("./a/b", "1", nil), regEntry("/a/b/", "2", nil)},
		want:    `two entries for "a/b"`,
	}, {
		name:    "cancelled",
		ctx:     cancelled,
		entries: sampleEntries(nil),
		want:    context.Canceled.Error(),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tc.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			dir := t.TempDir()
			l, err := WriteLayer(ctx, dir, tc.entries)
			if err == nil {
				l.(*SpooledLayer).Remove()
			}
			wantErrContains(t, err, tc.want)
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("WriteLayer left %d files in its directory after an error", len(left))
			}
		})
	}
}

func TestAbortRemovesSpool(t *testing.T) {
	dir := t.TempDir()
	w, err := NewLayerWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "f", Size: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Fatalf("NewLayerWriter made %d files, want 1 spool file", len(left))
	}
	w.Abort()
	w.Abort()
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("Abort left %d files", len(left))
	}
	if _, err := w.Finish(); err == nil {
		t.Error("Finish after Abort succeeded, want an error")
	}
}

func TestFinishedLayerOwnsFile(t *testing.T) {
	dir := t.TempDir()
	w, err := NewLayerWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	w.Abort() // must not remove the finished layer's file
	sl := l.(*SpooledLayer)
	if _, err := os.Stat(sl.Path()); err != nil {
		t.Fatalf("spool file gone after Abort following Finish: %v", err)
	}
	if err := sl.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := sl.Remove(); err != nil {
		t.Errorf("second Remove() = %v, want nil", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("Remove left %d files", len(left))
	}
}

func TestLayerWriterShortEntry(t *testing.T) {
	w, err := NewLayerWriter(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "etc/hosts", Size: 4}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("ab")); err != nil {
		t.Fatal(err)
	}
	_, err = w.Finish()
	wantErrContains(t, err, `"etc/hosts"`, "2 bytes short")
}

func TestComparePaths(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"a", "a", 0},
		{"a", "a/b", -1},
		{"a/b", "a-b", -1},
		{"a-b", "a/b", 1},
		{"a/b/c", "a/bc", -1},
		{"a/z", "aa", -1},
		{"b", "a/z", 1},
	} {
		if got := ComparePaths(tc.a, tc.b); got != tc.want {
			t.Errorf("ComparePaths(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func ExampleWriteLayer() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	body := "hello\n"
	l, err := WriteLayer(context.Background(), dir, []Entry{
		{Header: &tar.Header{Typeflag: tar.TypeDir, Name: "etc", Mode: 0o755}},
		{
			Header: &tar.Header{Typeflag: tar.TypeReg, Name: "etc/motd", Mode: 0o644, Size: int64(len(body))},
			Open:   func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(body)), nil },
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.(*SpooledLayer).Remove()
	mt, _ := l.MediaType()
	fmt.Println(mt)
	// Output: application/vnd.oci.image.layer.v1.tar+gzip
}

// A gzip level of one's own gives other bytes than the default, the same
// bytes every time (their content arriving in other chunks too), and the
// same tar stream.
func TestWriteLayerGzipLevel(t *testing.T) {
	dir := t.TempDir()
	def := writeLayer(t, dir, sampleEntries(nil))
	fast := writeLayer(t, dir, sampleEntries(nil), WithGzipLevel(1))
	again := writeLayer(t, dir, sampleEntries(iotest.OneByteReader), WithGzipLevel(1))
	if mustDigest(t, fast) == mustDigest(t, def) {
		t.Errorf("level 1 and the default level gave the same bytes")
	}
	if mustDigest(t, fast) != mustDigest(t, again) {
		t.Errorf("level 1 gave two digests for the same entries")
	}
	for _, l := range []v1.Layer{def, fast} {
		if d, _ := l.DiffID(); d != mustDiffID(t, def) {
			t.Errorf("diffID %s, want %s: the tar stream differs", d, mustDiffID(t, def))
		}
	}
	if _, err := NewLayerWriter(dir, WithGzipLevel(0)); err == nil {
		t.Errorf("NewLayerWriter accepted gzip level 0")
	}
}

func mustDiffID(t *testing.T, l v1.Layer) v1.Hash {
	t.Helper()
	d, err := l.DiffID()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
