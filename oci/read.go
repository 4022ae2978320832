package oci

import (
	"archive/tar"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ReadFiles streams the content of regular-file nodes of a View. layers are
// the layers the View was merged from, in the same order. Each layer that
// holds requested content is read at most once, decompressed once, and
// checked against its digest; layers are read in order, so fn is called in
// layer order, then tar order within a layer (not in the order of nodes).
// Nodes that share content (hard links) are each passed to fn, in the order
// of nodes. A layer whose digest is not the node's LayerDigest is an error.
//
// fn gets the node and a reader of exactly its content, valid only until fn
// returns; it need not read it all. An error from fn stops ReadFiles and is
// returned as it is. A layer whose blob does not match its digest is an
// error even if fn has already seen some of its content, so callers must
// discard what fn produced when ReadFiles fails.
func ReadFiles(ctx context.Context, layers []v1.Layer, nodes []Node, fn func(Node, io.Reader) error) error {
	return readFiles(ctx, layers, nodeList(nodes), fn)
}

// ReadFiles is oci.ReadFiles for nodes of v named by refs: the list the
// caller keeps is a word per file, and each Node is made (its path rebuilt)
// only when fn gets it.
func (v *View) ReadFiles(ctx context.Context, layers []v1.Layer, refs []Ref, fn func(Node, io.Reader) error) error {
	return readFiles(ctx, layers, refList{v, refs}, fn)
}

// fileList is what readFiles needs of the files it reads.
type fileList interface {
	len() int
	// at returns what locates the content of file i.
	at(i int) fileAt
	// node makes the Node of file i, which fn gets.
	node(i int) Node
	// is reports whether file i's content is the entry name of size
	// bytes; contentPath returns that name (for messages).
	is(i int, name string, size int64) bool
	contentPath(i int) string
}

// fileAt locates the content of one file.
type fileAt struct {
	layer, entry int
	regular      bool
	layerDigest  string
}

type nodeList []Node

func (l nodeList) len() int        { return len(l) }
func (l nodeList) node(i int) Node { return l[i] }
func (l nodeList) at(i int) fileAt {
	n := &l[i]
	return fileAt{n.Layer, n.Entry, n.Header.Typeflag == tar.TypeReg, n.LayerDigest}
}
func (l nodeList) is(i int, name string, size int64) bool {
	return l[i].ContentPath == name && l[i].Header.Size == size
}
func (l nodeList) contentPath(i int) string { return l[i].ContentPath }

type refList struct {
	v    *View
	refs []Ref
}

func (l refList) len() int        { return len(l.refs) }
func (l refList) node(i int) Node { return l.v.Node(l.refs[i]) }
func (l refList) at(i int) fileAt {
	n := l.refs[i].n
	if n == nil || n.entry < 0 {
		return fileAt{layer: -1, entry: -1}
	}
	return fileAt{int(n.layer), int(n.entry), n.typeflag == tar.TypeReg, l.v.digests[n.layer]}
}

// is compares without making the name: at and is run once or more per
// file.
func (l refList) is(i int, name string, size int64) bool {
	n := l.refs[i].n
	c := &l.v.idxs[n.layer].entries
	return c.nameIs(int(n.entry), name) && c.size(int(n.entry)) == size
}

func (l refList) contentPath(i int) string {
	n := l.refs[i].n
	return l.v.idxs[n.layer].entries.name(int(n.entry))
}

func readFiles(ctx context.Context, layers []v1.Layer, nodes fileList, fn func(Node, io.Reader) error) error {
	// order holds the nodes' positions sorted by layer, then entry, then
	// position: the order their bytes come in. A slice of int32, not a
	// map of copies: a case of 200,000 files keeps 800 KB here.
	if nodes.len() > math.MaxInt32 {
		return fmt.Errorf("reading %d files at once: more than this reader takes", nodes.len())
	}
	order := make([]int32, nodes.len())
	for i := range order {
		switch n := nodes.at(i); {
		case n.layer < 0 || n.layer >= len(layers):
			return fmt.Errorf("reading %q: its layer %d is not among the %d layers given", nodes.node(i).Path, n.layer, len(layers))
		case !n.regular || n.entry < 0:
			return fmt.Errorf("reading %q: not a regular file", nodes.node(i).Path)
		}
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		na, nb := nodes.at(int(a)), nodes.at(int(b))
		if c := cmp.Compare(na.layer, nb.layer); c != 0 {
			return c
		}
		if c := cmp.Compare(na.entry, nb.entry); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	for len(order) > 0 {
		li := nodes.at(int(order[0])).layer
		end := 1
		for end < len(order) && nodes.at(int(order[end])).layer == li {
			end++
		}
		if err := readLayerFiles(ctx, layers[li], li, nodes, order[:end], fn); err != nil {
			return err
		}
		order = order[end:]
	}
	return nil
}

// readLayerFiles reads layer li once and passes fn the content of the
// nodes that want, positions in nodes sorted by entry.
func readLayerFiles(ctx context.Context, l v1.Layer, li int, nodes fileList, want []int32, fn func(Node, io.Reader) error) error {
	s, err := openLayerStream(ctx, l, false)
	if err != nil {
		return err
	}
	defer s.Close()
	for _, i := range want {
		if d := nodes.at(int(i)).layerDigest; d != s.digest.String() {
			return fmt.Errorf("reading %q: layer %d is %s, but the view has %s there: pass the layers the view was merged from", nodes.node(int(i)).Path, li, s.digest, d)
		}
	}
	ordinal := -1
	sizes := newSizeGuard()
	for len(want) > 0 {
		hdr, err := s.tr.Next()
		if err == io.EOF {
			return fmt.Errorf("layer %d (%s) has fewer entries than its index: the view was not built from these layers", li, s.digest)
		}
		if err != nil {
			return s.readError(err)
		}
		if err := sizes.check(hdr); err != nil {
			return fmt.Errorf("layer %d (%s): %w", li, s.digest, err)
		}
		e, keep, err := indexEntry(hdr)
		if err != nil {
			return fmt.Errorf("layer %d (%s): %w", li, s.digest, err)
		}
		if !keep {
			continue
		}
		ordinal++
		fi := int(want[0])
		first := nodes.at(fi)
		if first.entry != ordinal {
			continue
		}
		same := 1
		for same < len(want) && nodes.at(int(want[same])).entry == ordinal {
			same++
		}
		ns := want[:same]
		want = want[same:]
		if e.Marker != NotMarker || e.Typeflag != tar.TypeReg || !nodes.is(fi, e.Name, e.Size) {
			return fmt.Errorf("layer %d (%s): entry %d is %q, not the file %q its index recorded: the view was not built from these layers", li, s.digest, ordinal, e.TarName(), nodes.contentPath(fi))
		}
		// The content is read under ctx: a sparse entry's holes come
		// from no read of the blob, so the blob's reader alone would
		// not stop a cancelled copy.
		content := ContextReader(ctx, s.tr)
		if len(ns) == 1 {
			if err := fn(nodes.node(int(ns[0])), content); err != nil {
				return err
			}
			continue
		}
		if err := fanOut(content, nodes, ns, fn); err != nil {
			return err
		}
	}
	// Hash the rest of the blob so that a damaged blob is an error even
	// when the wanted files came early.
	return s.verify(false)
}

// fanOut gives one entry's content to several nodes. A tar stream can be
// read once, so the content is spooled to a temporary file rather than
// held in memory.
func fanOut(r io.Reader, nodes fileList, ns []int32, fn func(Node, io.Reader) error) error {
	first := nodes.contentPath(int(ns[0]))
	f, err := os.CreateTemp("", "ssebench-content-*")
	if err != nil {
		return fmt.Errorf("spooling content of %q: %w", first, err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	size, err := io.Copy(f, r)
	if err != nil {
		return fmt.Errorf("spooling content of %q: %w", first, err)
	}
	for _, i := range ns {
		if err := fn(nodes.node(int(i)), io.NewSectionReader(f, 0, size)); err != nil {
			return err
		}
	}
	return nil
}
