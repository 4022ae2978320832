package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// bomb is the shape of a crafted manifest graph: levels of indexes, each
// width wide, every index listing fanout indexes of the level below (with
// wrap-around, so each has fanout parents), and at the bottom width images
// that share one config and one layer. Paths from the root grow as
// fanout^levels; distinct nodes are levels*width + width + 3.
type bomb struct {
	levels, width, fanout int
}

type blob struct {
	h   v1.Hash
	raw []byte
}

func sum(raw []byte) v1.Hash {
	d := sha256.Sum256(raw)
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(d[:])}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// blobs returns the graph's blobs, the root's descriptor last.
func (g bomb) blobs() ([]blob, v1.Descriptor) {
	var out []blob
	add := func(raw []byte, mt types.MediaType) v1.Descriptor {
		h := sum(raw)
		out = append(out, blob{h, raw})
		return v1.Descriptor{MediaType: mt, Digest: h, Size: int64(len(raw))}
	}
	var lb bytes.Buffer
	zw := gzip.NewWriter(&lb)
	tw := tar.NewWriter(zw)
	_ = tw.WriteHeader(&tar.Header{Name: "f", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})
	_, _ = tw.Write([]byte("x"))
	_ = tw.Close()
	_ = zw.Close()
	layer := add(lb.Bytes(), types.OCILayer)
	cfg := add(mustJSON(map[string]any{
		"architecture": "amd64", "os": "linux",
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{layer.Digest.String()}},
	}), types.OCIConfigJSON)
	index := func(children []v1.Descriptor, tag string) v1.Descriptor {
		return add(mustJSON(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: children,
			Annotations: map[string]string{"n": tag}}), types.OCIImageIndex)
	}
	below := make([]v1.Descriptor, g.width)
	for i := range below {
		below[i] = add(mustJSON(v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, Config: cfg,
			Layers: []v1.Descriptor{layer}, Annotations: map[string]string{"n": fmt.Sprint(i)}}), types.OCIManifestSchema1)
	}
	for l := g.levels - 1; l >= 0; l-- {
		level := make([]v1.Descriptor, g.width)
		for i := range level {
			var cs []v1.Descriptor
			for j := 0; j < g.fanout; j++ {
				cs = append(cs, below[(i+j)%len(below)])
			}
			level[i] = index(cs, fmt.Sprintf("%d/%d", l, i))
		}
		below = level
	}
	return out, index(below, "root")
}

// deepChain returns a chain of depth indexes over one image.
func deepChain(depth int) ([]blob, v1.Descriptor) {
	bs, d := bomb{levels: 0, width: 1, fanout: 1}.blobs()
	for i := 0; i < depth; i++ {
		raw := mustJSON(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{d}})
		h := sum(raw)
		bs = append(bs, blob{h, raw})
		d = v1.Descriptor{MediaType: types.OCIImageIndex, Digest: h, Size: int64(len(raw))}
	}
	return bs, d
}

// archiveOf writes an image archive holding bs with entries index.json
// entries naming root (as ref, ref-1, ref-2, …).
func archiveOf(t testing.TB, bs []blob, root v1.Descriptor, ref string, entries int) []byte {
	t.Helper()
	if entries == 0 {
		entries = 1
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	put := func(name string, raw []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(raw)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(raw); err != nil {
			t.Fatal(err)
		}
	}
	put(layoutFile, []byte(`{"imageLayoutVersion":"1.0.0"}`))
	for _, b := range bs {
		put("blobs/sha256/"+b.h.Hex, b.raw)
	}
	im := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex}
	for i := 0; i < entries; i++ {
		d := root
		n := ref
		if i > 0 {
			n = fmt.Sprintf("%s-%d", ref, i)
		}
		d.Annotations = map[string]string{store.AnnotationRefName: n}
		im.Manifests = append(im.Manifests, d)
	}
	put(indexFile, mustJSON(im))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
