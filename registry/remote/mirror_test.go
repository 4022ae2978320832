package remote

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/imagetest"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

// taskImages pushes under prefix the images of n tasks of one language:
// a base, a case per task on the base, a tool per task on the case with
// the runtime layers, and the runtime. It returns their names and the
// unique blob bytes (layers and configs) of the set.
func taskImages(t testing.TB, prefix string, n int, layerSize int64) (refs []string, unique int64) {
	t.Helper()
	seen := map[v1.Hash]bool{}
	count := func(img v1.Image) {
		ls, err := img.Layers()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range ls {
			if d := imagetest.Digest(t, l); !seen[d] {
				seen[d] = true
				unique += sizeOf(t, l)
			}
		}
		if h, err := img.ConfigName(); err == nil && !seen[h] {
			seen[h] = true
			unique += configSize(t, img)
		}
	}
	add := func(ref string, img v1.Image) {
		pushImage(t, ref, img)
		refs = append(refs, ref)
		count(img)
	}
	baseLayers := []v1.Layer{imagetest.Layer(t, layerSize), imagetest.Layer(t, layerSize)}
	rtLayers := []v1.Layer{imagetest.Layer(t, layerSize/2), imagetest.Layer(t, layerSize/4)}
	add(prefix+"/base-generic-go:1.0.0", imagetest.ImageOf(t, baseLayers...))
	add(prefix+"/runtime:1.0.0", imagetest.ImageOf(t, rtLayers...))
	for i := range n {
		caseLayers := append(append([]v1.Layer{}, baseLayers...), imagetest.Layer(t, layerSize/2))
		add(fmt.Sprintf("%s/case/examples/task-%d:v1", prefix, i), imagetest.ImageOf(t, caseLayers...))
		tool := append(append(caseLayers, imagetest.Layer(t, layerSize/8)), rtLayers...)
		add(fmt.Sprintf("%s/tool/task-%d:1.0.0", prefix, i), imagetest.ImageOf(t, tool...))
	}
	return refs, unique
}

func startGGCR(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(nilLogger())))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestMirrorKeepsDigestsAndMovesEachBlobOnce(t *testing.T) {
	src, dst := startGGCR(t), startGGCR(t)
	refs, unique := taskImages(t, src+"/ssebench", 3, 4000)
	missing := src + "/ssebench/tool/gone:1.0.0"
	rep, err := Mirror(context.Background(), append(refs, missing, refs[0]), src+"/ssebench", dst+"/copy", noAuth, fastRetries)
	var me *MissingError
	if !errors.As(err, &me) || !cmp.Equal(me.Refs, []string{missing}) {
		t.Fatalf("Mirror = %v, want a MissingError naming %s only", err, missing)
	}
	if len(rep.Images) != len(refs) {
		t.Fatalf("mirrored %d images, want %d: a missing image must not stop the others", len(rep.Images), len(refs))
	}
	for _, im := range rep.Images {
		want := strings.Replace(im.Source, src+"/ssebench", dst+"/copy", 1)
		if im.Target != want {
			t.Errorf("%s went to %s, want %s", im.Source, im.Target, want)
		}
		if got := imagetest.Pulled(t, im.Target); got != im.Digest || got != imagetest.Pulled(t, im.Source) {
			t.Errorf("%s has digest %s, the source %s", im.Target, got, imagetest.Pulled(t, im.Source))
		}
	}
	if rep.UniqueBytes != unique || rep.Push.Uploaded != unique {
		t.Errorf("mirror: %s; want %d unique bytes, each uploaded once", rep, unique)
	}
	if r := rep.Ratio(); fmt.Sprintf("%.2f", r) != "1.00" {
		t.Errorf("moved/unique = %.3f, want 1.00", r)
	}
}

func TestIntegrationMirror(t *testing.T) {
	src, dst := testenv.StartRegistry(t), testenv.StartRegistry(t)
	refs, unique := taskImages(t, src+"/ssebench", 2, 100_000)
	ctx := context.Background()

	t.Run("another registry: each unique blob moves once", func(t *testing.T) {
		rep, err := Mirror(ctx, refs, src+"/ssebench", dst+"/ssebench", noAuth, fastRetries)
		if err != nil {
			t.Fatalf("Mirror: %v", err)
		}
		if rep.Push.Uploaded != unique || rep.Ratio() != 1 {
			t.Errorf("mirror: %s; want %d bytes uploaded, ratio 1.00", rep, unique)
		}
		if rep.Push.MountedBlobs == 0 {
			t.Errorf("mirror: %s; want the shared blobs mounted between target repositories", rep)
		}
		for _, im := range rep.Images {
			if got := imagetest.Pulled(t, im.Target); got != im.Digest {
				t.Errorf("%s has digest %s, want %s", im.Target, got, im.Digest)
			}
		}
	})

	t.Run("same registry: nothing is uploaded", func(t *testing.T) {
		rep, err := Mirror(ctx, refs, src+"/ssebench", src+"/archive", noAuth, fastRetries)
		if err != nil {
			t.Fatalf("Mirror: %v", err)
		}
		if rep.Push.Uploaded != 0 || rep.Push.Mounted < unique {
			t.Errorf("mirror within a registry: %s; want every blob mounted", rep)
		}
		for _, im := range rep.Images {
			if got := imagetest.Pulled(t, im.Target); got != im.Digest {
				t.Errorf("%s has digest %s, want %s", im.Target, got, im.Digest)
			}
		}
	})

	t.Run("platform out of an index", func(t *testing.T) {
		idx, imgs := platformIndex(t)
		ref := src + "/ssebench/runtime:2.0.0"
		pushImage(t, ref, idx)
		arm := &v1.Platform{OS: "linux", Architecture: "arm64"}
		rep, err := Mirror(ctx, []string{ref}, src+"/ssebench", dst+"/plat", noAuth, WithIndexPlatform(arm))
		if err != nil {
			t.Fatalf("Mirror: %v", err)
		}
		if got := imagetest.Pulled(t, dst+"/plat/runtime:2.0.0"); got != imagetest.Digest(t, imgs["arm64"]) || rep.Images[0].Digest != got {
			t.Errorf("mirrored %s, want the arm64 image %s", got, imagetest.Digest(t, imgs["arm64"]))
		}
	})
}

// BenchmarkMirrorRatio mirrors the images of 8 tasks sharing a base and a
// runtime between two in-memory registries and reports bytes moved over
// unique blob bytes (target 1.00).
func BenchmarkMirrorRatio(b *testing.B) {
	src := startGGCR(b)
	refs, unique := taskImages(b, src+"/ssebench", 8, 64<<10)
	b.ResetTimer()
	var ratio float64
	for i := range b.N {
		dst := startGGCR(b)
		rep, err := Mirror(context.Background(), refs, src+"/ssebench", fmt.Sprintf("%s/run%d", dst, i), noAuth)
		if err != nil {
			b.Fatal(err)
		}
		if rep.UniqueBytes != unique {
			b.Fatalf("unique bytes %d, want %d", rep.UniqueBytes, unique)
		}
		ratio = rep.Ratio()
	}
	b.ReportMetric(ratio, "moved/unique")
	b.ReportMetric(float64(unique), "unique-bytes")
}

func TestRetarget(t *testing.T) {
	for _, tc := range []struct {
		ref, from, to, want string
	}{
		{ref: "localhost:5000/ssebench/tool/x:1.0.0", from: "localhost:5000/ssebench", to: "mirror.lan/sse", want: "mirror.lan/sse/tool/x:1.0.0"},
		{ref: "localhost:5000/ssebench/case/d/t", from: "localhost:5000/ssebench/", to: "mirror.lan/sse/", want: "mirror.lan/sse/case/d/t"},
		{ref: "docker.io/library/debian:12", from: "localhost:5000/ssebench", to: "mirror.lan/sse", want: "mirror.lan/sse/library/debian:12"},
		{ref: "localhost:5000/ssebench2/x:1", from: "localhost:5000/ssebench", to: "m/p", want: "m/p/ssebench2/x:1"},
		{ref: "localhost:5000/other/x@sha256:" + strings.Repeat("a", 64), from: "", to: "m:1/p", want: "m:1/p/other/x@sha256:" + strings.Repeat("a", 64)},
	} {
		got, err := Retarget(tc.ref, tc.from, tc.to)
		if err != nil || got != tc.want {
			t.Errorf("Retarget(%q, %q, %q) = %q, %v; want %q", tc.ref, tc.from, tc.to, got, err, tc.want)
		}
	}
}
