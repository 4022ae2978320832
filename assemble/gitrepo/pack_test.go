package gitrepo

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestIdxLargeOffsets checks the 64-bit offset table of the idx, which
// only packs above 2 GiB use, by reading an idx back with git show-index.
func TestIdxLargeOffsets(t *testing.T) {
	needGit(t)
	entries := []packed{
		{id: objectID{0x01, 1}, crc: 0x11111111, off: 12},
		{id: objectID{0xff, 2}, crc: 0x22222222, off: 1<<31 + 5},
		{id: objectID{0x80, 3}, crc: 0x33333333, off: 1 << 33},
		{id: objectID{0x01, 0}, crc: 0x44444444, off: 1<<31 - 1},
	}
	var idx bytes.Buffer
	if err := writeIdx(&idx, entries, objectID{9}); err != nil {
		t.Fatal(err)
	}
	out, err := gitStdin(gitEnv(t), t.TempDir(), idx.String(), "show-index")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("%d %s (44444444)", 1<<31-1, objectID{0x01, 0}),
		fmt.Sprintf("%d %s (11111111)", 12, objectID{0x01, 1}),
		fmt.Sprintf("%d %s (33333333)", 1<<33, objectID{0x80, 3}),
		fmt.Sprintf("%d %s (22222222)", 1<<31+5, objectID{0xff, 2}),
	}
	if diff := cmp.Diff(want, strings.Split(strings.TrimSpace(out), "\n")); diff != "" {
		t.Errorf("git show-index (-want +got):\n%s", diff)
	}
}

func TestPackEntryHeader(t *testing.T) {
	tests := []struct {
		typ  objectType
		size int64
		want []byte
	}{
		{typeBlob, 0, []byte{0x30}},
		{typeBlob, 15, []byte{0x3f}},
		{typeTree, 16, []byte{0xa0, 0x01}},
		{typeCommit, 1000, []byte{0x98, 0x3e}},
		{typeBlob, 1 << 32, []byte{0xb0, 0x80, 0x80, 0x80, 0x80, 0x01}},
	}
	for _, tt := range tests {
		if got := packEntryHeader(tt.typ, tt.size); !bytes.Equal(got, tt.want) {
			t.Errorf("packEntryHeader(%v, %d) = %x, want %x", tt.typ, tt.size, got, tt.want)
		}
	}
}
