package archive

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/imagetest"
)

// BenchmarkGraphBomb loads, saves, verifies and collects a manifest graph
// with full fan-in (9 levels of indexes, each listing 16 of the level
// below, over images sharing one config and layer) at two sizes, 2,503
// and 10,003 distinct nodes (issue 27's 10,000-node graph), and reports
// the time per distinct node of each step: equal figures at both sizes
// show the walks linear in the nodes, not in the paths (16^9).
//
//	go test ./registry/archive -run '^$' -bench GraphBomb -benchtime 1x
func BenchmarkGraphBomb(b *testing.B) {
	for _, width := range []int{250, 1000} {
		g := bomb{levels: 9, width: width, fanout: 16}
		bs, root := g.blobs()
		ar := archiveOf(b, bs, root, bombRef, 1)
		nodes := float64(len(bs))
		b.Run(fmt.Sprintf("nodes=%d", len(bs)), func(b *testing.B) {
			ctx := context.Background()
			var load, save, verify, gc time.Duration
			for i := 0; i < b.N; i++ {
				s := imagetest.Store(b)
				start := time.Now()
				if _, err := Load(ctx, bytes.NewReader(ar), WithStore(s)); err != nil {
					b.Fatal(err)
				}
				load += time.Since(start)
				start = time.Now()
				if _, err := Save(ctx, io.Discard, []string{bombRef}, noAuth, WithStore(s), WithRegistryPrefix("localhost:5000/ssebench")); err != nil {
					b.Fatal(err)
				}
				save += time.Since(start)
				start = time.Now()
				if probs, err := s.Verify(ctx); err != nil || len(probs) > 0 {
					b.Fatal(err, probs)
				}
				verify += time.Since(start)
				start = time.Now()
				if _, err := s.GC(ctx); err != nil {
					b.Fatal(err)
				}
				gc += time.Since(start)
			}
			per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) / nodes }
			b.ReportMetric(per(load), "load-µs/node")
			b.ReportMetric(per(save), "save-µs/node")
			b.ReportMetric(per(verify), "verify-µs/node")
			b.ReportMetric(per(gc), "gc-µs/node")
		})
	}
}
