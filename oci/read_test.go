package oci

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func TestReadFiles(t *testing.T) {
	big := strings.Repeat("0123456789", 100_000)
	raw := []*countingLayer{
		{Layer: gzipLayer(t, dir("etc/"), file("etc/passwd", "root:x:0:0"), file("big", big), file("a", "alpha"), hardlink("b", "a"))},
		{Layer: gzipLayer(t, file("untouched", "u"))},
		{Layer: gzipLayer(t, file(".wh.a", ""), dir("usr/"), dir("usr/lib/"), symlink("lib", "usr/lib"), file("etc/group", "root:x:0:"))},
		{Layer: static.NewLayer(tarBytes(t, file("lib/x", "x via symlink"), file("tail", "t")), types.OCIUncompressedLayer)},
	}
	var layers []v1.Layer
	for _, l := range raw {
		layers = append(layers, l)
	}
	v, err := mergeLayers(t, layers...)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range raw {
		l.opens.Store(0)
	}
	var nodes []Node
	// Asked for in an order unrelated to the layers.
	for _, p := range []string{"usr/lib/x", "etc/group", "b", "etc/passwd", "big"} {
		n, ok := v.Lookup(p)
		if !ok {
			t.Fatalf("Lookup(%q) found nothing", p)
		}
		nodes = append(nodes, n)
	}
	var got []string
	err = ReadFiles(context.Background(), layers, nodes, func(n Node, r io.Reader) error {
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if n.Path == "big" {
			if string(b) != big {
				return fmt.Errorf("big: wrong content (%d bytes)", len(b))
			}
			b = []byte("<big>")
		}
		got = append(got, fmt.Sprintf("%s=%s", n.Path, b))
		return nil
	})
	if err != nil {
		t.Fatalf("ReadFiles() = %v", err)
	}
	want := []string{"etc/passwd=root:x:0:0", "big=<big>", "b=alpha", "etc/group=root:x:0:", "usr/lib/x=x via symlink"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadFiles calls (-want +got):\n%s", diff)
	}
	for i, l := range raw {
		wantOpens := int32(1)
		if i == 1 {
			wantOpens = 0
		}
		if got := l.opens.Load(); got != wantOpens {
			t.Errorf("layer %d opened %d times, want %d", i, got, wantOpens)
		}
	}
}

func TestReadFilesSharedContent(t *testing.T) {
	l := gzipLayer(t, file("a", "alpha"), hardlink("b", "a"), hardlink("c", "b"))
	v, err := mergeLayers(t, l)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []Node
	for _, p := range []string{"c", "a", "b"} {
		n, _ := v.Lookup(p)
		nodes = append(nodes, n)
	}
	var got []string
	err = ReadFiles(context.Background(), []v1.Layer{l}, nodes, func(n Node, r io.Reader) error {
		b, err := io.ReadAll(r)
		got = append(got, n.Path+"="+string(b))
		return err
	})
	if err != nil {
		t.Fatalf("ReadFiles() = %v", err)
	}
	if diff := cmp.Diff([]string{"c=alpha", "a=alpha", "b=alpha"}, got); diff != "" {
		t.Errorf("ReadFiles calls (-want +got):\n%s", diff)
	}
}

func TestReadFilesErrors(t *testing.T) {
	l := gzipLayer(t, dir("d/"), file("f", "x"))
	other := gzipLayer(t, file("g", "y"), file("f", "x"))
	v, err := mergeLayers(t, l)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := v.Lookup("d")
	f, _ := v.Lookup("f")
	fnBoom := errors.New("boom")
	nop := func(Node, io.Reader) error { return nil }
	for _, tc := range []struct {
		name   string
		layers []v1.Layer
		nodes  []Node
		fn     func(Node, io.Reader) error
		want   string
	}{
		{"directory", []v1.Layer{l}, []Node{d}, nop, `reading "d": not a regular file`},
		{"missing layer", nil, []Node{f}, nop, "not among the 0 layers"},
		{"other layer", []v1.Layer{other}, []Node{f}, nop, "pass the layers the view was merged from"},
		{"fn error", []v1.Layer{l}, []Node{f}, func(Node, io.Reader) error { return fnBoom }, "boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ReadFiles(context.Background(), tc.layers, tc.nodes, tc.fn)
			wantErrContains(t, err, tc.want)
		})
	}
}

// TestDamagedBlob checks that IndexLayer and ReadFiles refuse a blob that
// does not match its digest, naming the layer and saying what to do.
func TestDamagedBlob(t *testing.T) {
	entries := []te{file("etc/passwd", "root"), file("big", strings.Repeat("z", 200_000)), file("last", "l")}
	good := gzipLayer(t, entries...)
	blob, err := good.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(blob)

	// The same tar compressed differently: a valid stream, wrong digest.
	var other bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&other, gzip.BestSpeed)
	zw.Write(tarBytes(t, entries...))
	zw.Close()

	corrupt := bytes.Clone(b)
	corrupt[len(corrupt)/2] ^= 0xff

	for _, tc := range []struct {
		name string
		blob []byte
	}{
		{"truncated", b[:len(b)/2]},
		{"corrupt", corrupt},
		{"recompressed", other.Bytes()},
		{"trailing bytes", append(bytes.Clone(b), 0, 0, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := &lyingLayer{Layer: good, blob: tc.blob}
			_, err := IndexLayer(context.Background(), bad)
			wantErrContains(t, err, digestOf(t, good), "re-pull or re-build")

			// ReadFiles reads only the first file, yet still checks the
			// whole blob.
			idx, err := IndexLayer(context.Background(), good)
			if err != nil {
				t.Fatal(err)
			}
			v, err := Merge([]*LayerIndex{idx})
			if err != nil {
				t.Fatal(err)
			}
			n, _ := v.Lookup("etc/passwd")
			err = ReadFiles(context.Background(), []v1.Layer{bad}, []Node{n}, func(Node, io.Reader) error { return nil })
			wantErrContains(t, err, digestOf(t, good), "re-pull or re-build")
		})
	}
}

func TestIndexLayerCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := IndexLayer(ctx, gzipLayer(t, file("a", "a")))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("IndexLayer(cancelled) = %v, want context.Canceled", err)
	}
}

// TestWrittenLayerRoundTrip indexes and reads back a layer LayerWriter made.
func TestWrittenLayerRoundTrip(t *testing.T) {
	for _, c := range []Compression{Gzip, Zstd} {
		t.Run(c.String(), func(t *testing.T) {
			l := writeLayer(t, t.TempDir(), sampleEntries(nil), WithCompression(c))
			v, err := mergeLayers(t, l)
			if err != nil {
				t.Fatal(err)
			}
			n, ok := v.Lookup("usr/bin/tool2")
			if !ok || n.ContentPath != "usr/bin/tool" {
				t.Fatalf("Lookup(usr/bin/tool2) = %+v, %v; want a hard link to usr/bin/tool", n, ok)
			}
			var size int64
			err = ReadFiles(context.Background(), []v1.Layer{l}, []Node{n}, func(_ Node, r io.Reader) error {
				size, err = io.Copy(io.Discard, r)
				return err
			})
			if err != nil {
				t.Fatalf("ReadFiles() = %v", err)
			}
			if size != n.Header.Size || size == 0 {
				t.Errorf("read %d bytes, want %d", size, n.Header.Size)
			}
		})
	}
}
