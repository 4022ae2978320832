package oci

import (
	"archive/tar"
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkMergeRootfs merges a synthetic 100,000-entry root filesystem
// (Debian-sized) and reports the view's heap beyond its indexes.
func BenchmarkMergeRootfs(b *testing.B) {
	idx, _ := NewLayerIndex("sha256:bench")
	for d := range 1000 {
		dn := fmt.Sprintf("usr/share/d%04d", d)
		idx.Append(IndexEntry{Name: dn, Header: Header{Typeflag: tar.TypeDir, Mode: 0o755}})
		for f := range 99 {
			idx.Append(IndexEntry{Name: fmt.Sprintf("%s/file-%03d.txt", dn, f), Header: Header{Typeflag: tar.TypeReg, Mode: 0o644, Size: 100}})
		}
	}
	b.ReportAllocs()
	var v *View
	for b.Loop() {
		var err error
		if v, err = Merge([]*LayerIndex{idx}); err != nil {
			b.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v2, _ := Merge([]*LayerIndex{idx})
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(v2.Len()), "heapB/node")
	runtime.KeepAlive(v2)
	_ = v
}
