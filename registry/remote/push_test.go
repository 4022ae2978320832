package remote

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/imagetest"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

var noAuth = WithKeychain(authn.NewMultiKeychain())

// fastRetries keeps retry tests quick.
var fastRetries = withRetries(3, time.Millisecond)

func sizeOf(t testing.TB, ls ...v1.Layer) int64 {
	t.Helper()
	var n int64
	for _, l := range ls {
		s, err := l.Size()
		if err != nil {
			t.Fatal(err)
		}
		n += s
	}
	return n
}

func configSize(t testing.TB, img v1.Image) int64 {
	t.Helper()
	b, err := img.RawConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(b))
}

func pushImage(t testing.TB, ref string, content remote.Taggable, opts ...Option) *PushReport {
	t.Helper()
	rep, err := Push(context.Background(), ref, content, append([]Option{noAuth, fastRetries}, opts...)...)
	if err != nil {
		t.Fatalf("Push(%s): %v", ref, err)
	}
	return rep
}

type counts struct {
	Uploaded, Mounted, Skipped                int64
	UploadedBlobs, MountedBlobs, SkippedBlobs int
}

func countsOf(r *PushReport) counts {
	return counts{r.Uploaded, r.Mounted, r.Skipped, r.UploadedBlobs, r.MountedBlobs, r.SkippedBlobs}
}

func TestPushSkipsWhatTheRegistryHas(t *testing.T) {
	reg := startTestRegistry(t)
	a, b := imagetest.Layer(t, 3000), imagetest.Layer(t, 5000)
	img := imagetest.ImageOf(t, a, b)
	ref := reg.host + "/skip/img:1"
	cfg := configSize(t, img)

	all := sizeOf(t, a, b) + cfg
	first := pushImage(t, ref, img)
	if diff := cmp.Diff(counts{Uploaded: all, UploadedBlobs: 3}, countsOf(first)); diff != "" {
		t.Errorf("first push (-want +got):\n%s", diff)
	}
	if first.Manifests != 1 {
		t.Errorf("first push wrote %d manifests, want 1", first.Manifests)
	}
	again := pushImage(t, ref, img)
	if diff := cmp.Diff(counts{Skipped: all, SkippedBlobs: 3}, countsOf(again)); diff != "" {
		t.Errorf("second push of the same image (-want +got):\n%s", diff)
	}
	if got := imagetest.Pulled(t, ref); got != imagetest.Digest(t, img) {
		t.Errorf("registry has %s, want %s", got, imagetest.Digest(t, img))
	}
}

func TestPushIndex(t *testing.T) {
	reg := startTestRegistry(t)
	idx, imgs := platformIndex(t)
	ref := reg.host + "/idx/runtime:1"
	rep := pushImage(t, ref, idx)
	if want := len(imgs) + 1; rep.Manifests != want {
		t.Errorf("wrote %d manifests, want %d (each child, then the index)", rep.Manifests, want)
	}
	if got := imagetest.Pulled(t, ref); got != imagetest.Digest(t, idx) {
		t.Errorf("registry has %s, want the index %s", got, imagetest.Digest(t, idx))
	}
}

// flaky answers 500 to the first n blob uploads (PUT or PATCH), then
// passes requests to h.
type flaky struct {
	h        http.Handler
	failures atomic.Int64
	n        int64
	always   bool
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if (r.Method == http.MethodPut || r.Method == http.MethodPatch) && strings.Contains(r.URL.Path, "/blobs/uploads/") {
		if f.always || f.failures.Add(1) <= f.n {
			http.Error(w, `{"errors":[{"code":"UNKNOWN","message":"try later"}]}`, http.StatusInternalServerError)
			return
		}
	}
	f.h.ServeHTTP(w, r)
}

func TestPushRetries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		chunk     int64
		always    bool
		wantError string
	}{
		{name: "monolithic upload", chunk: 1 << 20},
		{name: "chunked upload", chunk: 1024},
		{name: "registry keeps failing", chunk: 1 << 20, always: true, wantError: "gave up after 3 attempts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &flaky{h: ggcrregistry.New(ggcrregistry.Logger(nilLogger())), n: 2, always: tc.always}
			srv := httptest.NewServer(f)
			t.Cleanup(srv.Close)
			host := strings.TrimPrefix(srv.URL, "http://")
			l := imagetest.Layer(t, 4000)
			img := imagetest.ImageOf(t, l)
			ref := host + "/retry/img:1"
			rep, err := Push(context.Background(), ref, img, noAuth, fastRetries, withChunkSize(tc.chunk), WithJobs(1))
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) || !strings.Contains(err.Error(), "try later") {
					t.Fatalf("PushImage = %v, want an error with %q and the status", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatalf("PushImage after two 500s: %v", err)
			}
			if got := f.failures.Load(); got < 3 {
				t.Errorf("only %d upload requests; the two failures were not retried", got)
			}
			// Retried bytes are not counted twice.
			if want := sizeOf(t, l) + configSize(t, img); rep.Uploaded != want {
				t.Errorf("uploaded %d bytes, want %d", rep.Uploaded, want)
			}
			if got := imagetest.Pulled(t, ref); got != imagetest.Digest(t, img) {
				t.Errorf("registry has %s, want %s", got, imagetest.Digest(t, img))
			}
		})
	}
}

func TestPushChunked(t *testing.T) {
	var patches atomic.Int64
	h := ggcrregistry.New(ggcrregistry.Logger(nilLogger()))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPatch {
			patches.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	img := imagetest.ImageOf(t, imagetest.Layer(t, 10_000))
	ref := strings.TrimPrefix(srv.URL, "http://") + "/chunk/img:1"
	pushImage(t, ref, img, withChunkSize(4096))
	if got := patches.Load(); got != 3 {
		t.Errorf("%d PATCH requests for a 10000-byte layer in 4096-byte chunks, want 3", got)
	}
	if got := imagetest.Pulled(t, ref); got != imagetest.Digest(t, img) {
		t.Errorf("registry has %s, want %s", got, imagetest.Digest(t, img))
	}
}

type recordingProgress struct {
	mu     sync.Mutex
	events []BlobEvent
	bytes  map[v1.Hash]int64
}

func (r *recordingProgress) Start(BlobEvent) {}
func (r *recordingProgress) Advance(d v1.Hash, n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bytes[d] += n
}
func (r *recordingProgress) Done(e BlobEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func TestPushReportsEachBlob(t *testing.T) {
	reg := startTestRegistry(t)
	l := imagetest.Layer(t, 2048)
	img := imagetest.ImageOf(t, l)
	rp := &recordingProgress{bytes: map[v1.Hash]int64{}}
	pushImage(t, reg.host+"/progress/img:1", img, WithBlobProgress(rp))
	if len(rp.events) != 2 {
		t.Fatalf("%d blob events, want 2 (layer and config)", len(rp.events))
	}
	if got, want := rp.bytes[imagetest.Digest(t, l)], sizeOf(t, l); got != want {
		t.Errorf("progress counted %d bytes of the layer, want %d", got, want)
	}
}

// TestIntegrationPushMounts pushes to the real distribution registry, which
// supports cross-repository mounts (go-containerregistry's test registry
// does not).
func TestIntegrationPushMounts(t *testing.T) {
	host := testenv.StartRegistry(t)
	ctx := context.Background()
	base1, base2 := imagetest.Layer(t, 300_000), imagetest.Layer(t, 200_000)
	base := imagetest.ImageOf(t, base1, base2)
	pushImage(t, host+"/ssebench/base-generic-go:1", base)

	t.Run("hint: only the new layer and config are uploaded", func(t *testing.T) {
		own := imagetest.Layer(t, 50_000)
		tool := imagetest.ImageOf(t, base1, base2, own)
		rep := pushImage(t, host+"/ssebench/tool/a:1", tool, WithMountFrom(host+"/ssebench/base-generic-go"))
		want := counts{Uploaded: sizeOf(t, own) + configSize(t, tool), UploadedBlobs: 2, Mounted: sizeOf(t, base1, base2), MountedBlobs: 2}
		if diff := cmp.Diff(want, countsOf(rep)); diff != "" {
			t.Errorf("push (-want +got):\n%s", diff)
		}
		imagetest.Pulled(t, host+"/ssebench/tool/a:1")
	})

	t.Run("store record: blobs pushed before are mounted without a hint", func(t *testing.T) {
		s := imagetest.Store(t)
		rt1, rt2 := imagetest.Layer(t, 100_000), imagetest.Layer(t, 100_000)
		runtime := imagetest.ImageOf(t, rt1, rt2)
		pushImage(t, host+"/ssebench/runtime:1", runtime, WithStore(s))
		own := imagetest.Layer(t, 10_000)
		tool := imagetest.ImageOf(t, own, rt1, rt2)
		rep := pushImage(t, host+"/ssebench/tool/b:1", tool, WithStore(s))
		if rep.Mounted != sizeOf(t, rt1, rt2) || rep.MountedBlobs != 2 || rep.Uploaded != sizeOf(t, own)+configSize(t, tool) {
			t.Errorf("push of a second image with the runtime layers: %s; want the runtime layers mounted", rep)
		}
		imagetest.Pulled(t, host+"/ssebench/tool/b:1")
	})

	t.Run("origin: a registry layer mounts from its repository", func(t *testing.T) {
		res, err := newResolver(t).Resolve(ctx, host+"/ssebench/base-generic-go:1")
		if err != nil {
			t.Fatal(err)
		}
		ls, err := res.Image.Layers()
		if err != nil {
			t.Fatal(err)
		}
		tool, err := mutate.AppendLayers(res.Image, imagetest.Layer(t, 1000))
		if err != nil {
			t.Fatal(err)
		}
		rep := pushImage(t, host+"/ssebench/tool/c:1", tool)
		if rep.Mounted != sizeOf(t, ls...) || rep.MountedBlobs != len(ls) {
			t.Errorf("push: %s; want the %d base layers mounted", rep, len(ls))
		}
		for _, e := range rep.Blobs {
			if e.Action == BlobMounted && e.From != host+"/ssebench/base-generic-go" {
				t.Errorf("blob %s mounted from %q, want the base repository", e.Digest, e.From)
			}
		}
	})
}

// cancelAfterTransport cancels a context once n PATCH requests got their
// answer, as a killed push would stop.
type cancelAfterTransport struct {
	n       int64
	patches atomic.Int64
	cancel  context.CancelFunc
}

func (c *cancelAfterTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if r.Method == http.MethodPatch && c.patches.Add(1) == c.n {
		c.cancel()
	}
	return resp, err
}

func TestIntegrationPushResumes(t *testing.T) {
	host := testenv.StartRegistry(t)
	s := imagetest.Store(t)
	small, big := imagetest.Layer(t, 1000), imagetest.Layer(t, 400_000)
	img := imagetest.ImageOf(t, small, big)
	ref := host + "/ssebench/tool/resume:1"

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tr := &cancelAfterTransport{n: 3, cancel: cancel}
	_, err := Push(ctx, ref, img, noAuth, WithStore(s), withChunkSize(64<<10), WithJobs(1), WithTransport(tr))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted push = %v, want context.Canceled", err)
	}
	r, _ := name.ParseReference(ref)
	if _, err := remote.Head(r); err == nil {
		t.Fatal("the tag exists after an interrupted push")
	}

	rep := pushImage(t, ref, img, WithStore(s), withChunkSize(64<<10), WithJobs(1))
	var resumed int64
	for _, e := range rep.Blobs {
		if e.Digest == imagetest.Digest(t, big) {
			resumed = e.Resumed
		}
	}
	if resumed != 3*(64<<10) {
		t.Errorf("the big layer resumed after %d bytes, want %d (three chunks)", resumed, 3*(64<<10))
	}
	// The first blob (by digest) and the config finished before; only
	// the rest of the big layer is sent again.
	total := sizeOf(t, small, big) + configSize(t, img)
	if rep.Uploaded+rep.Skipped+resumed != total || rep.Uploaded >= 400_000 {
		t.Errorf("rerun: %s, resumed %d; want only what was missing uploaded", rep, resumed)
	}
	if got := imagetest.Pulled(t, ref); got != imagetest.Digest(t, img) {
		t.Errorf("registry has %s, want %s", got, imagetest.Digest(t, img))
	}
}
