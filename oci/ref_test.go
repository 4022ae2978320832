package oci

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// TestViewRefs: a Ref names its node, path included (rebuilt from the
// tree, through a symlinked parent and a hard link too), and View.ReadFiles
// reads by Ref what ReadFiles reads by Node.
func TestViewRefs(t *testing.T) {
	layers := []v1.Layer{
		gzipLayer(t, dir("a/"), file("a/x", "x1"), dir("real/"), symlink("lnk", "real"), file("a/b/c/deep", "deep")),
		gzipLayer(t, file("lnk/y", "y22"), hardlink("a/hard", "a/x"), dir("a/b/")),
	}
	v, err := mergeLayers(t, layers...)
	if err != nil {
		t.Fatal(err)
	}
	var refs []Ref
	var nodes []Node
	err = v.WalkRefs(func(n Node, r Ref) error {
		if diff := cmp.Diff(n, v.Node(r)); diff != "" {
			t.Errorf("View.Node(ref of %q) differs (-walk +ref):\n%s", n.Path, diff)
		}
		if n.Header.Typeflag == '0' {
			refs = append(refs, r)
			nodes = append(nodes, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	read := func(f func(func(Node, io.Reader) error) error) map[string]string {
		got := map[string]string{}
		if err := f(func(n Node, r io.Reader) error {
			var b bytes.Buffer
			_, err := io.Copy(&b, r)
			got[n.Path] = b.String()
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	ctx := context.Background()
	byNode := read(func(fn func(Node, io.Reader) error) error { return ReadFiles(ctx, layers, nodes, fn) })
	byRef := read(func(fn func(Node, io.Reader) error) error { return v.ReadFiles(ctx, layers, refs, fn) })
	want := map[string]string{"a/x": "x1", "a/hard": "x1", "a/b/c/deep": "deep", "real/y": "y22"}
	if diff := cmp.Diff(want, byRef); diff != "" {
		t.Errorf("View.ReadFiles (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(byNode, byRef); diff != "" {
		t.Errorf("View.ReadFiles and ReadFiles differ (-nodes +refs):\n%s", diff)
	}
}
