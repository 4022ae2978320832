package oci

import (
	"context"
	"errors"
	"reflect"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

// graph is a toy graph: a node's children by name.
var graph = map[string][]string{
	"root": {"a", "b"},
	"a":    {"shared", "x"},
	"b":    {"shared", "y"},
}

func walkGraph(ctx context.Context, visit func(string) error) error {
	return Walk(ctx, "root",
		func(n string) string { return n },
		func(n string) ([]string, error) { return graph[n], nil },
		visit)
}

func TestWalkVisitsDepthFirstAndOnce(t *testing.T) {
	var got []string
	if err := walkGraph(context.Background(), func(n string) error { got = append(got, n); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []string{"root", "a", "shared", "x", "b", "y"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("visited %v, want %v", got, want)
	}
}

func TestWalkStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var got []string
	err := walkGraph(ctx, func(n string) error {
		got = append(got, n)
		if n == "a" {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Walk returned %v, want context.Canceled", err)
	}
	if !reflect.DeepEqual(got, []string{"root", "a"}) {
		t.Fatalf("visited %v after the cancel", got)
	}
}

func TestWalkContentOpensEachImageOnce(t *testing.T) {
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	other, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	// img is listed twice: the walk reaches it once.
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: img},
		mutate.IndexAddendum{Add: other},
		mutate.IndexAddendum{Add: img})
	var got []v1.Hash
	err = WalkContent(context.Background(), idx, func(c Content) error {
		if im, ok := c.(v1.Image); ok {
			d, err := im.Digest()
			if err != nil {
				return err
			}
			got = append(got, d)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := other.Digest()
	if want := []v1.Hash{d1, d2}; !reflect.DeepEqual(got, want) {
		t.Fatalf("visited images %v, want %v", got, want)
	}
	if err := WalkContent(context.Background(), notContent{}, func(Content) error { return nil }); err == nil {
		t.Fatal("WalkContent accepted a root that is neither an image nor an index")
	}
}

type notContent struct{}

func (notContent) RawManifest() ([]byte, error) { return nil, nil }
