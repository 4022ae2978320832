package oci

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestIndexJSON: the streamed document is the one json.Encoder makes, and
// reads back to the same index.
func TestIndexJSON(t *testing.T) {
	for _, idx := range []*LayerIndex{
		{Format: IndexFormat, Digest: "sha256:ab"},
		mustIndex(t, "sha256:ab", []IndexEntry{}),
		mustIndex(t, "sha256:ab",
			[]IndexEntry{
				{Name: "a", Header: Header{Typeflag: '5', Mode: 0o755, ModTime: time.Unix(1, 0).UTC()}},
				{Name: "a/b", Marker: Whiteout},
				{Name: "a/c", Header: Header{Typeflag: '0', Mode: 0o644, Uid: 1, Size: 3, ModTime: time.Unix(2, 5).UTC(), Xattrs: map[string][]byte{"user.x": {0, 1}}}},
				{Name: "a/d", Header: Header{Typeflag: '3', Mode: 0o7777, Uid: 1 << 40, Gid: -1, Devmajor: 5, Devminor: 1 << 33, ModTime: time.Unix(-5, 999999999).UTC()}},
				{Name: "a/e", Header: Header{Typeflag: '2', Mode: 1 << 20, Linkname: "../c", ModTime: time.Unix(1, 0).UTC()}},
				{Name: "a/f", Header: Header{Typeflag: '0', Mode: 0o644, Uid: 1, Size: 1 << 40, ModTime: time.Unix(2, 5).UTC()}},
			}),
	} {
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(idx); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := idx.WriteJSON(&got); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("WriteJSON:\n%s\nwant\n%s", got.String(), want.String())
		}
		back, err := ReadLayerIndexJSON(&want)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.Entries(), idx.Entries()) || back.Format != idx.Format || back.Digest != idx.Digest || back.DiffID != idx.DiffID {
			t.Errorf("read back %+v, want %+v", back.Entries(), idx.Entries())
		}
	}
}

func mustIndex(t *testing.T, digest string, entries []IndexEntry) *LayerIndex {
	t.Helper()
	idx, err := NewLayerIndex(digest, entries...)
	if err != nil {
		t.Fatal(err)
	}
	idx.DiffID = "sha256:cd"
	return idx
}

// TestLayerIndexKeepsEntries: what the packed index gives back is what was
// put in, the rare fields too (ids past 32 bits, negative ids, devices,
// sizes past 4 GiB, nanoseconds, xattrs, names without a directory or
// with an empty one).
func TestLayerIndexKeepsEntries(t *testing.T) {
	in := []IndexEntry{
		{Name: "a", Header: Header{Typeflag: '5', Mode: 0o755, ModTime: time.Unix(1, 0).UTC()}},
		{Name: "a/b", Marker: Whiteout},
		{Name: "", Marker: Opaque},
		{Name: "a/c", Header: Header{Typeflag: '0', Mode: 0o644, Uid: 1, Size: 3, ModTime: time.Unix(2, 5).UTC(), Xattrs: map[string][]byte{"user.x": {0, 1}}}},
		{Name: "a/d", Header: Header{Typeflag: '3', Mode: 0o7777, Uid: 1 << 40, Gid: -1, Devmajor: 5, Devminor: 1 << 33, ModTime: time.Unix(-5, 999999999).UTC()}},
		{Name: "a/e", Header: Header{Typeflag: '2', Mode: 1 << 20, Linkname: "../c", ModTime: time.Unix(1, 0).UTC()}},
		{Name: "a/f", Header: Header{Typeflag: '0', Mode: 0o644, Gid: 1 << 32, Size: 1 << 40}},
		{Name: "a//g", Header: Header{Typeflag: '0', Size: -1}},
		{Name: "/h", Header: Header{Typeflag: '1', Linkname: "a/c"}},
	}
	idx := mustIndex(t, "sha256:ab", in)
	if !reflect.DeepEqual(idx.Entries(), in) {
		t.Errorf("Entries() = %+v,\nwant %+v", idx.Entries(), in)
	}
	for i := range in {
		if got := idx.Entry(i); got.Name != in[i].Name {
			t.Errorf("Entry(%d).Name = %q, want %q", i, got.Name, in[i].Name)
		}
	}
}
