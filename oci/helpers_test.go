package oci

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// te is a raw tar entry for building test layers: written as given, with no
// normalisation, so tests can build hostile layers too.
type te struct {
	hdr  tar.Header
	body string
}

var testTime = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func file(name, body string) te {
	return te{hdr: tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(body)), ModTime: testTime}, body: body}
}

func fileMode(name, body string, mode int64) te {
	e := file(name, body)
	e.hdr.Mode = mode
	return e
}

func dir(name string) te {
	return te{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: testTime}}
}

func dirMode(name string, mode int64) te {
	e := dir(name)
	e.hdr.Mode = mode
	return e
}

func symlink(name, target string) te {
	return te{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777, ModTime: testTime}}
}

func hardlink(name, target string) te {
	return te{hdr: tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: target, Mode: 0o644, ModTime: testTime}}
}

func hardlinkMode(name, target string, mode int64) te {
	e := hardlink(name, target)
	e.hdr.Mode = mode
	return e
}

// tarBytes writes entries as an uncompressed tar.
func tarBytes(t *testing.T, entries ...te) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.hdr
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatalf("WriteHeader(%q) = %v", h.Name, err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatalf("writing %q: %v", h.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gzipLayer builds a gzip-compressed in-memory layer.
func gzipLayer(t *testing.T, entries ...te) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(tarBytes(t, entries...)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return static.NewLayer(buf.Bytes(), types.OCILayer)
}

func digestOf(t *testing.T, l v1.Layer) string {
	t.Helper()
	d, err := l.Digest()
	if err != nil {
		t.Fatalf("Digest() = %v", err)
	}
	return d.String()
}

// mergeLayers indexes and merges layers.
func mergeLayers(t *testing.T, layers ...v1.Layer) (*View, error) {
	t.Helper()
	var idx []*LayerIndex
	for _, l := range layers {
		li, err := IndexLayer(context.Background(), l)
		if err != nil {
			return nil, err
		}
		idx = append(idx, li)
	}
	return Merge(idx)
}

// summary renders a node compactly for table tests:
// "path type mode [uid:gid] @layer[=contentPath] [implicit]".
func summary(n Node) string {
	var typ string
	switch n.Header.Typeflag {
	case tar.TypeReg:
		typ = fmt.Sprintf("r%d", n.Header.Size)
	case tar.TypeDir:
		typ = "d"
	case tar.TypeSymlink:
		typ = "l->" + n.Header.Linkname
	case tar.TypeChar:
		typ = "c"
	case tar.TypeBlock:
		typ = "b"
	case tar.TypeFifo:
		typ = "p"
	default:
		typ = fmt.Sprintf("type%q", n.Header.Typeflag)
	}
	s := fmt.Sprintf("%s %s %04o", n.Path, typ, n.Header.Mode)
	if n.Header.Uid != 0 || n.Header.Gid != 0 {
		s += fmt.Sprintf(" %d:%d", n.Header.Uid, n.Header.Gid)
	}
	if n.Implicit {
		return s + fmt.Sprintf(" @%d implicit", n.Layer)
	}
	s += fmt.Sprintf(" @%d", n.Layer)
	if n.ContentPath != n.Path {
		s += "=" + n.ContentPath
	}
	return s
}

func summaries(t *testing.T, v *View) []string {
	t.Helper()
	var got []string
	if err := v.Walk(func(n Node) error {
		got = append(got, summary(n))
		return nil
	}); err != nil {
		t.Fatalf("Walk() = %v", err)
	}
	return got
}

// countingLayer counts how often a layer's blob is opened.
type countingLayer struct {
	v1.Layer
	opens atomic.Int32
}

func (c *countingLayer) Compressed() (io.ReadCloser, error) {
	c.opens.Add(1)
	return c.Layer.Compressed()
}

// lyingLayer serves other bytes than its digest promises.
type lyingLayer struct {
	v1.Layer
	blob []byte
}

func (l *lyingLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(l.blob)), nil
}

func (l *lyingLayer) Size() (int64, error) { return int64(len(l.blob)), nil }

func wantErrContains(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}
