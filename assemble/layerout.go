package assemble

import (
	"archive/tar"
	"context"
	"io"
	"sort"

	"github.com/42-b3yond-6ug/ssebench/oci"
)

// contentKey names the bytes of a file: hard links share one.
type contentKey struct{ layer, entry int }

// layerOut is one new layer being written: header-only entries are
// collected first and written sorted, then content entries as the case
// layers stream by.
type layerOut struct {
	w *oci.LayerWriter
	// last is the content written last and where: oci.ReadFiles passes
	// the nodes that share content (hard links) one after the other, so
	// remembering one is enough, where a map of every file's content took
	// 20 MB for a case of 200,000 files.
	last     contentKey
	lastDest string
}

// toolGzipLevel is the gzip level of the layers an assembly writes: the
// fastest. Compressing the source tree twice (the repo and source layers)
// at gzip's default level was most of a warm assembly's CPU; level 1 takes
// 0.4 s less on the 29 MB tree of go-2024-2955 for 9% larger layers (26.8
// MB to 29.2). Fixed, as the digests depend on it: a change of level is a
// change of AssemblerVersion.
const toolGzipLevel = 1

func (b *toolBuild) newLayer() (*layerOut, error) {
	w, err := oci.NewLayerWriter(b.o.tempDir, oci.WithCompression(b.o.compression), oci.WithGzipLevel(toolGzipLevel), oci.WithDefaultTime(b.o.when))
	if err != nil {
		return nil, err
	}
	return newLayerOut(w), nil
}

func newLayerOut(w *oci.LayerWriter) *layerOut {
	return &layerOut{w: w, last: contentKey{-1, -1}}
}

// headerOnly writes entries that carry no content, in path order.
func (l *layerOut) headerOnly(hs []*tar.Header) error {
	sort.SliceStable(hs, func(i, j int) bool { return oci.ComparePaths(hs[i].Name, hs[j].Name) < 0 })
	for _, h := range hs {
		if err := l.w.WriteHeader(h); err != nil {
			return err
		}
	}
	return nil
}

// small writes a regular file held in memory.
func (l *layerOut) small(h *tar.Header, content []byte) error {
	h.Size = int64(len(content))
	if err := l.w.WriteHeader(h); err != nil {
		return err
	}
	_, err := l.w.Write(content)
	return err
}

// file starts the content entry of node n at dest. It returns the writer
// for its content, or nil when dest became a hard link to the copy of the
// same bytes just written in this layer. Calls must come in the order
// oci.ReadFiles passes nodes.
func (l *layerOut) file(n oci.Node, dest string, mode int64, uid, gid int) (io.Writer, error) {
	k := contentKey{n.Layer, n.Entry}
	h := n.Header.TarHeader(dest)
	h.Mode, h.Uid, h.Gid = mode, uid, gid
	if k == l.last {
		h.Typeflag, h.Linkname, h.Size = tar.TypeLink, l.lastDest, 0
		return nil, l.w.WriteHeader(h)
	}
	l.last, l.lastDest = k, dest
	if err := l.w.WriteHeader(h); err != nil {
		return nil, err
	}
	return l.w, nil
}

func copyEntry(ctx context.Context, w *oci.LayerWriter, h *tar.Header, open func() (io.ReadCloser, error)) error {
	rc, err := open()
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := w.WriteHeader(h); err != nil {
		return err
	}
	_, err = io.Copy(w, oci.ContextReader(ctx, rc))
	return err
}

// finish completes a layer written to a spool file.
func finish(w *oci.LayerWriter) (*oci.SpooledLayer, error) {
	l, err := w.Finish()
	if err != nil {
		return nil, err
	}
	return l.(*oci.SpooledLayer), nil
}
