package oci

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// WriteLayer writes entries as one layer spooled in dir (see
// NewLayerWriter) and returns it; its dynamic type is *SpooledLayer, whose
// Remove the caller calls when the layer is no longer needed.
//
// Entries are written sorted by path, component by component (ComparePaths:
// a directory right before its children), whatever their order in the
// slice, so the same set of entries always gives the same layer. Names are
// normalised as WriteHeader describes; two entries with the same normalised
// name are an error. Missing parent directories are not added: the caller
// includes them when their metadata matters (appliers create a missing
// parent as root:root 0755).
//
// Each regular file's Open is called once, in order, and must yield exactly
// Header.Size bytes; a nil Open is allowed only for an empty file. WriteLayer
// stops with ctx's error when ctx is cancelled. On any error the spool file
// is removed.
func WriteLayer(ctx context.Context, dir string, entries []Entry, opts ...Option) (v1.Layer, error) {
	type item struct {
		name  string
		entry Entry
	}
	items := make([]item, 0, len(entries))
	for _, e := range entries {
		if e.Header == nil {
			return nil, errors.New("writing layer: an entry has no header")
		}
		name, err := cleanName(e.Header.Name)
		if err != nil {
			return nil, fmt.Errorf("writing layer: entry %q: %w", e.Header.Name, err)
		}
		items = append(items, item{name: name, entry: e})
	}
	slices.SortStableFunc(items, func(a, b item) int { return ComparePaths(a.name, b.name) })
	for i := 1; i < len(items); i++ {
		if items[i].name == items[i-1].name {
			return nil, fmt.Errorf("writing layer: two entries for %q", items[i].name)
		}
	}

	w, err := NewLayerWriter(dir, opts...)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			w.Abort()
		}
	}()
	buf := copyBufPool.Get().(*[]byte)
	defer copyBufPool.Put(buf)
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := writeEntry(ctx, w, it.name, it.entry, *buf); err != nil {
			return nil, fmt.Errorf("writing layer: %w", err)
		}
	}
	l, err := w.Finish()
	if err != nil {
		return nil, err
	}
	ok = true
	return l, nil
}

var copyBufPool = sync.Pool{New: func() any {
	b := make([]byte, 256<<10)
	return &b
}}

func writeEntry(ctx context.Context, w *LayerWriter, name string, e Entry, buf []byte) error {
	if err := w.WriteHeader(e.Header); err != nil {
		return err
	}
	if e.Header.Typeflag != tar.TypeReg && e.Header.Typeflag != tar.TypeRegA {
		return nil
	}
	size := e.Header.Size
	if e.Open == nil {
		if size == 0 {
			return nil
		}
		return fmt.Errorf("entry %q: %d bytes declared but no content to open", name, size)
	}
	rc, err := e.Open()
	if err != nil {
		return fmt.Errorf("opening content of %q: %w", name, err)
	}
	defer rc.Close()
	// Read one byte more than declared, to tell "too long" from "exact".
	n, err := copyCtx(ctx, w, io.LimitReader(rc, size+1), buf, size)
	if err != nil {
		return fmt.Errorf("copying content of %q: %w", name, err)
	}
	switch {
	case n > size:
		return fmt.Errorf("entry %q: content is longer than the %d bytes its header declares", name, size)
	case n < size:
		return fmt.Errorf("entry %q: content is %d bytes, but its header declares %d", name, n, size)
	}
	return nil
}

// copyCtx copies src to w, checking ctx between reads. It stops at limit
// bytes and reports whether src had more by returning limit+1 without
// writing the extra byte.
func copyCtx(ctx context.Context, w io.Writer, src io.Reader, buf []byte, limit int64) (int64, error) {
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		nr, rerr := src.Read(buf)
		if nr > 0 {
			chunk := buf[:nr]
			if n+int64(nr) > limit {
				chunk = chunk[:limit-n]
			}
			if len(chunk) > 0 {
				if _, err := w.Write(chunk); err != nil {
					return n, err
				}
			}
			n += int64(nr)
			if n > limit {
				return n, nil
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}
