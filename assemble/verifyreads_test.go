package assemble

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// countingImage counts how often each layer's blob is opened.
type countingImage struct {
	v1.Image
	opens map[v1.Hash]*atomic.Int32
}

func (c countingImage) Layers() ([]v1.Layer, error) {
	ls, err := c.Image.Layers()
	if err != nil {
		return nil, err
	}
	out := make([]v1.Layer, len(ls))
	for i, l := range ls {
		d, err := l.Digest()
		if err != nil {
			return nil, err
		}
		if c.opens[d] == nil {
			c.opens[d] = &atomic.Int32{}
		}
		out[i] = countingLayer{l, c.opens[d]}
	}
	return out, nil
}

type countingLayer struct {
	v1.Layer
	n *atomic.Int32
}

func (l countingLayer) Compressed() (io.ReadCloser, error) {
	l.n.Add(1)
	return l.Layer.Compressed()
}

// TestVerifyReadsSourceLayerThrice: verify reads the source layer (which
// holds the new repository last, after every file of the tree) once to
// index it, once for HEAD, the refs and the pack index together, and once
// for the commit in the pack, not once per file it looks at: for a tree of
// 200,000 files each pass is seconds, and a download for an image in a
// registry.
func TestVerifyReadsSourceLayerThrice(t *testing.T) {
	base := caseImage(t)
	ls, err := base.Layers()
	if err != nil {
		t.Fatal(err)
	}
	caseImg := image(t, []string{"PATH=/usr/bin"}, append(ls, sourceLayer(t, 300, 100))...)
	ti := assembleTool(t, caseImg, runtimeImage(t))
	m, err := ti.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	own := strings.Split(m.Annotations[AnnotationToolLayers], ",")
	src, err := v1.NewHash(own[len(own)-1])
	if err != nil {
		t.Fatal(err)
	}
	img := countingImage{ti, map[v1.Hash]*atomic.Int32{}}
	fails, err := Verify(context.Background(), img, "")
	if err != nil || len(fails) > 0 {
		t.Fatalf("Verify() = %v, %v", fails, err)
	}
	n := img.opens[src]
	if n == nil {
		t.Fatalf("Verify did not read the source layer %s", src)
	}
	if n.Load() > 3 {
		t.Errorf("the source layer was read %d times, want at most 3", n.Load())
	}
}
