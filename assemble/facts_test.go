package assemble

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// orderLayer records the order in which layers are opened.
type orderLayer struct {
	v1.Layer
	name  string
	mu    *sync.Mutex
	order *[]string
}

func (l orderLayer) Compressed() (io.ReadCloser, error) {
	l.mu.Lock()
	*l.order = append(*l.order, l.name)
	l.mu.Unlock()
	return l.Layer.Compressed()
}

// The runtime's layers and the case's are indexed in one pool, largest
// first, so that the largest layer is not left to one core at the end (a
// cold tool assembly of go-2024-2955 waited on its 200 MB apt layer so).
func TestIndexSetsLargestFirst(t *testing.T) {
	defer func(n int) { indexJobs = n }(indexJobs)
	indexJobs = 1
	var mu sync.Mutex
	var order []string
	mk := func(name string, size int) v1.Layer {
		return orderLayer{layer(t, reg("f", 0o644, strings.Repeat(name, size))), name, &mu, &order}
	}
	rt := &indexSet{layers: []v1.Layer{mk("r", 10), mk("R", 3000)}, what: "the runtime"}
	cs := &indexSet{layers: []v1.Layer{mk("c", 100), mk("C", 100000), mk("k", 1)}, what: "the case"}
	f, err := NewFacts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.indexSets(context.Background(), rt, cs); err != nil {
		t.Fatal(err)
	}
	if want := []string{"C", "R", "c", "r", "k"}; !slices.Equal(order, want) {
		t.Errorf("layers indexed in the order %q, want the largest first: %q", order, want)
	}
	for _, s := range []*indexSet{rt, cs} {
		for i, idx := range s.idxs {
			if idx == nil || idx.Len() != 1 {
				t.Errorf("%s: layer %d has index %v, want its one entry", s.what, i, idx)
			}
		}
	}
}
