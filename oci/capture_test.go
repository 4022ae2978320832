package oci

import (
	"context"
	"path"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestIndexLayerCapture(t *testing.T) {
	l := gzipLayer(t,
		dir("etc"),
		file("etc/passwd", "old\n"),
		file("etc/hosts", "127.0.0.1 localhost\n"),
		file("src/.gitignore", "*.o\n"),
		file("src/big/.gitignore", "this one is too big for the caller\n"),
		// The last entry wins; this one is too big to capture, so the
		// earlier content must not stand in for it.
		file("etc/passwd", "root:x:0:0::/root:/bin/sh\n"),
	)
	want := func(name string, size int64) bool {
		return (name == "etc/passwd" || path.Base(name) == ".gitignore") && size < 20
	}
	idx, files, err := IndexLayerCapture(context.Background(), l, want)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for k, v := range files {
		got[k] = string(v)
	}
	if d := cmp.Diff(map[string]string{"src/.gitignore": "*.o\n"}, got); d != "" {
		t.Errorf("captured files (-want +got):\n%s", d)
	}
	plain, err := IndexLayer(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(plain.Entries(), idx.Entries()); d != "" {
		t.Errorf("capturing changed the index (-plain +capture):\n%s", d)
	}
}
