package oci

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
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
	// byLayer[layer][entry] lists the nodes wanting that entry's bytes.
	byLayer := make(map[int]map[int][]Node)
	for _, n := range nodes {
		switch {
		case n.Layer < 0 || n.Layer >= len(layers):
			return fmt.Errorf("reading %q: its layer %d is not among the %d layers given", n.Path, n.Layer, len(layers))
		case n.Header.Typeflag != tar.TypeReg || n.Entry < 0:
			return fmt.Errorf("reading %q: not a regular file", n.Path)
		}
		if byLayer[n.Layer] == nil {
			byLayer[n.Layer] = make(map[int][]Node)
		}
		byLayer[n.Layer][n.Entry] = append(byLayer[n.Layer][n.Entry], n)
	}
	order := make([]int, 0, len(byLayer))
	for li := range byLayer {
		order = append(order, li)
	}
	slices.Sort(order)
	for _, li := range order {
		if err := readLayerFiles(ctx, layers[li], li, byLayer[li], fn); err != nil {
			return err
		}
	}
	return nil
}

func readLayerFiles(ctx context.Context, l v1.Layer, li int, want map[int][]Node, fn func(Node, io.Reader) error) error {
	s, err := openLayerStream(ctx, l)
	if err != nil {
		return err
	}
	defer s.Close()
	for _, ns := range want {
		if d := ns[0].LayerDigest; d != s.digest.String() {
			return fmt.Errorf("reading %q: layer %d is %s, but the view has %s there: pass the layers the view was merged from", ns[0].Path, li, s.digest, d)
		}
	}
	ordinal := -1
	for left := len(want); left > 0; {
		hdr, err := s.tr.Next()
		if err == io.EOF {
			return fmt.Errorf("layer %d (%s) has fewer entries than its index: the view was not built from these layers", li, s.digest)
		}
		if err != nil {
			return s.readError(err)
		}
		e, keep, err := indexEntry(hdr)
		if err != nil {
			return fmt.Errorf("layer %d (%s): %w", li, s.digest, err)
		}
		if !keep {
			continue
		}
		ordinal++
		ns, ok := want[ordinal]
		if !ok {
			continue
		}
		left--
		if e.Marker != NotMarker || e.Typeflag != tar.TypeReg || e.Name != ns[0].ContentPath || e.Size != ns[0].Header.Size {
			return fmt.Errorf("layer %d (%s): entry %d is %q, not the file %q its index recorded: the view was not built from these layers", li, s.digest, ordinal, e.TarName(), ns[0].ContentPath)
		}
		if len(ns) == 1 {
			if err := fn(ns[0], s.tr); err != nil {
				return err
			}
			continue
		}
		if err := fanOut(s.tr, ns, fn); err != nil {
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
func fanOut(r io.Reader, ns []Node, fn func(Node, io.Reader) error) error {
	f, err := os.CreateTemp("", "ssebench-content-*")
	if err != nil {
		return fmt.Errorf("spooling content of %q: %w", ns[0].ContentPath, err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	size, err := io.Copy(f, r)
	if err != nil {
		return fmt.Errorf("spooling content of %q: %w", ns[0].ContentPath, err)
	}
	for _, n := range ns {
		if err := fn(n, io.NewSectionReader(f, 0, size)); err != nil {
			return err
		}
	}
	return nil
}
