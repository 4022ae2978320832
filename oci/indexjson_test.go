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
		{Format: IndexFormat, Digest: "sha256:ab", DiffID: "sha256:cd", Entries: []IndexEntry{
			{Name: "a", Header: Header{Typeflag: '5', Mode: 0o755, ModTime: time.Unix(1, 0).UTC()}},
			{Name: "a/b", Marker: Whiteout},
			{Name: "a/c", Header: Header{Typeflag: '0', Mode: 0o644, Uid: 1, Size: 3, ModTime: time.Unix(2, 5).UTC(), Xattrs: map[string][]byte{"user.x": {0, 1}}}},
		}},
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
		if !reflect.DeepEqual(back, idx) {
			t.Errorf("read back %+v, want %+v", back, idx)
		}
	}
}
