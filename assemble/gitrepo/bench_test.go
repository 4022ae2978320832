package gitrepo

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"testing"
)

// BenchmarkBuild measures a tree of 2,000 files of 32 KiB.
func BenchmarkBuild(b *testing.B) {
	content := make([]byte, 32<<10)
	rand.New(rand.NewSource(1)).Read(content[:len(content)/2]) // half random, half zeros
	b.SetBytes(int64(2000 * len(content)))
	for i := 0; i < b.N; i++ {
		bl, err := NewBuilder(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		for j := 0; j < 2000; j++ {
			content[0] = byte(j)
			content[1] = byte(j >> 8)
			if err := bl.AddFile(fmt.Sprintf("d%d/f%d.c", j%37, j), 0o644, int64(len(content)), bytes.NewReader(content)); err != nil {
				b.Fatal(err)
			}
		}
		if _, _, _, err := bl.Finish(context.Background()); err != nil {
			b.Fatal(err)
		}
		bl.Close()
	}
}
