package assemble

import (
	"archive/tar"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/internal/hostile"
	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// sourceLayer writes a case layer of a source tree under src/proj: files
// files of size bytes each, text that compresses as source does, streamed
// to disk (never held).
func sourceLayer(t *testing.T, files, size int) v1.Layer {
	t.Helper()
	w, err := oci.NewLayerWriter(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mtime := time.Unix(1700000000, 0)
	hdr := func(h *tar.Header) {
		h.ModTime = mtime
		if err := w.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	hdr(&tar.Header{Typeflag: tar.TypeDir, Name: "src/", Mode: 0o755})
	hdr(&tar.Header{Typeflag: tar.TypeDir, Name: "src/proj/", Mode: 0o755})
	line := make([]byte, 0, 128)
	for d := 0; d*1000 < files; d++ {
		hdr(&tar.Header{Typeflag: tar.TypeDir, Name: fmt.Sprintf("src/proj/pkg%04d/", d), Mode: 0o755})
		for i := d * 1000; i < min(files, (d+1)*1000); i++ {
			hdr(&tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("src/proj/pkg%04d/file%06d.go", d, i), Mode: 0o644, Size: int64(size)})
			left := size
			for n := 0; left > 0; n++ {
				line = fmt.Appendf(line[:0], "\tx%d := compute(%d, %q) // line %d of file %d\n", n, n*i, "value", n, i)
				k := min(len(line), left)
				if _, err := w.Write(line[:k]); err != nil {
					t.Fatal(err)
				}
				left -= k
			}
		}
	}
	l, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestToolMemory: assembling a tool image and writing it to the store
// holds no layer in memory: a 150 MB source tree stays under 64 MB, and
// the state kept per file is bounded (see the 200,000-file case).
func TestToolMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 150 MB layers")
	}
	for _, c := range []struct {
		name        string
		files, size int
		limitMB     int64
	}{
		// Guards, not targets: peak RSS depends on how much CPU the
		// collector gets, and in the full suite on two cores it doubles.
		// Alone, the 150 MB tree peaks at 55-58 MiB (issue 30's target is
		// 64 MB); a held layer would pass 150 MB.
		{"150 MB in 10,000 files", 10000, 15000, 140},
		// Alone: 302 MiB, from 376 MiB before ReadFiles and the layer
		// writers stopped keeping a record per file (issue 27's target,
		// 100 MB, needs the view and the new repository's entries to
		// shrink too).
		{"200,000 small files", 200000, 200, 480},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !hostile.InChild(t) {
				hostile.RunChild(t, c.limitMB, 10*time.Minute)
				return
			}
			base := caseImage(t)
			ls, err := base.Layers()
			if err != nil {
				t.Fatal(err)
			}
			caseImg := image(t, []string{"PATH=/usr/bin", "GOPATH=/go"}, append(ls, sourceLayer(t, c.files, c.size))...)
			ti, err := Tool(context.Background(), caseImg, runtimeImage(t), WithSourceDir("/src/proj"), WithTempDir(t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			defer ti.Close()
			layers, err := ti.Layers()
			if err != nil {
				t.Fatal(err)
			}
			_ = layers
			// What `ssebench assemble tool` does next: the local store.
			st, err := store.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			ref, err := name.ParseReference("localhost:5000/ssebench/tool/proj-1:1.0.0")
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Write(context.Background(), ref, ti); err != nil {
				t.Fatal(err)
			}
		})
	}
}
