package oci

import (
	"archive/tar"
	"fmt"
	"runtime"
	"testing"
)

// TestMergeLetsRemovedNodesGo: a layer that replaces a tree (a tool
// image's source layer hides the case's 200,000 files under an opaque
// marker) leaves a view the size of what is left, not of everything the
// lower layers held.
func TestMergeLetsRemovedNodesGo(t *testing.T) {
	lower, err := NewLayerIndex("sha256:lower")
	if err != nil {
		t.Fatal(err)
	}
	lower.Append(IndexEntry{Name: "p", Header: Header{Typeflag: tar.TypeDir, Mode: 0o755}})
	for i := range 200000 {
		// The directories are implicit: their names are kept aside.
		lower.Append(IndexEntry{Name: fmt.Sprintf("p/d%03d/f%06d", i/1000, i), Header: Header{Typeflag: tar.TypeReg, Mode: 0o644}})
	}
	upper, err := NewLayerIndex("sha256:upper", IndexEntry{Name: "p", Marker: Opaque})
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v, err := Merge([]*LayerIndex{lower, upper})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if v.Len() != 1 {
		t.Fatalf("the view has %d nodes, want 1 (p)", v.Len())
	}
	// 5 MB when removed nodes kept their slabs.
	if kept := int64(after.HeapAlloc) - int64(before.HeapAlloc); kept > 1<<20 {
		t.Errorf("a view of 1 node keeps %d KB beyond its indexes, want at most 1 MB", kept>>10)
	}
	runtime.KeepAlive(v)
	runtime.KeepAlive(lower)
}
