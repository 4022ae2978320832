package remote

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/imagetest"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// testRegistry is an in-memory registry on a loopback port; it counts the
// requests it answers.
type testRegistry struct {
	host     string
	requests atomic.Int64
}

func startTestRegistry(t *testing.T) *testRegistry {
	t.Helper()
	r := &testRegistry{}
	h := ggcrregistry.New(ggcrregistry.Logger(nilLogger()))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

func push(t *testing.T, ref string, content interface{ RawManifest() ([]byte, error) }) {
	t.Helper()
	if _, err := Push(context.Background(), ref, content, WithKeychain(authn.NewMultiKeychain())); err != nil {
		t.Fatalf("Push(%s): %v", ref, err)
	}
}

func newResolver(t *testing.T, opts ...Option) *Resolver {
	t.Helper()
	r, err := NewResolver(append([]Option{WithKeychain(authn.NewMultiKeychain())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParsePullPolicy(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    PullPolicy
		wantErr bool
	}{
		{in: "missing", want: PullMissing},
		{in: "always", want: PullAlways},
		{in: " Never ", want: PullNever},
		{in: "sometimes", wantErr: true},
		{in: "", wantErr: true},
	} {
		got, err := ParsePullPolicy(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParsePullPolicy(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "missing, always or never") {
			t.Errorf("ParsePullPolicy(%q) error %q does not list the choices", tc.in, err)
		}
	}
}

func TestPlainHTTP(t *testing.T) {
	o, err := makeOptions(WithInsecureRegistries("registry.lan", "10.1.2.3:5000"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ref        string
		wantScheme string
	}{
		{ref: "localhost:5000/a:1", wantScheme: "http"},
		{ref: "localhost/a:1", wantScheme: "http"},
		{ref: "127.0.0.1:41234/a:1", wantScheme: "http"},
		{ref: "[::1]:5000/a:1", wantScheme: "http"},
		{ref: "registry.lan/a:1", wantScheme: "http"},
		{ref: "registry.lan:8443/a:1", wantScheme: "http"},
		{ref: "10.1.2.3:5000/a:1", wantScheme: "http"},
		{ref: "ghcr.io/42-b3yond-6ug/ssebench/runtime:1.0.0", wantScheme: "https"},
		{ref: "example.com:5000/a:1", wantScheme: "https"},
	} {
		ref, err := o.parseReference(tc.ref)
		if err != nil {
			t.Fatalf("parseReference(%q): %v", tc.ref, err)
		}
		if got := ref.Context().Scheme(); got != tc.wantScheme {
			t.Errorf("scheme of %q = %s, want %s", tc.ref, got, tc.wantScheme)
		}
	}
}

type recordingTransport struct{ urls []string }

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r.urls = append(r.urls, req.URL.String())
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// go-containerregistry itself would talk plain HTTP to any private
// address; the guard allows it only for loopback and named hosts.
func TestHTTPGuard(t *testing.T) {
	for _, tc := range []struct {
		url      string
		insecure []string
		wantErr  bool
	}{
		{url: "http://127.0.0.1:5000/v2/"},
		{url: "http://localhost:5000/v2/"},
		{url: "http://10.1.2.3:5000/v2/", wantErr: true},
		{url: "http://192.168.1.9/v2/", wantErr: true},
		{url: "http://10.1.2.3:5000/v2/", insecure: []string{"10.1.2.3:5000"}},
		{url: "http://10.1.2.3:5000/v2/", insecure: []string{"10.1.2.3:6000"}, wantErr: true},
		{url: "https://10.1.2.3:5000/v2/"},
	} {
		rt := &recordingTransport{}
		o, err := makeOptions(WithTransport(rt), WithInsecureRegistries(tc.insecure...))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, tc.url, nil)
		_, err = o.guardedTransport().RoundTrip(req)
		if (err != nil) != tc.wantErr {
			t.Errorf("GET %s with insecure %v: error %v, want error %v", tc.url, tc.insecure, err, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "--insecure-registry") {
			t.Errorf("error %q does not say how to allow the host", err)
		}
		if sent := len(rt.urls) > 0; sent == tc.wantErr {
			t.Errorf("GET %s: request sent = %v, want %v", tc.url, sent, !tc.wantErr)
		}
	}
}

func TestOptionsRejectBadInput(t *testing.T) {
	for name, opt := range map[string]Option{
		"pull policy":       WithPullPolicy("sometimes"),
		"jobs":              WithJobs(0),
		"insecure registry": WithInsecureRegistries("http://x/"),
		"platform":          WithPlatform(&v1.Platform{OS: "linux"}),
		"keychain":          WithKeychain(nil),
	} {
		if _, err := NewResolver(opt); err == nil {
			t.Errorf("NewResolver with a bad %s succeeded", name)
		}
	}
	if _, err := NewResolver(WithPullPolicy(PullNever)); err == nil || !strings.Contains(err.Error(), "WithStore") {
		t.Errorf("NewResolver(PullNever) without a store = %v, want an error naming WithStore", err)
	}
}

func layerDigests(t *testing.T, img v1.Image) []v1.Hash {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var hs []v1.Hash
	for _, l := range ls {
		hs = append(hs, imagetest.Digest(t, l))
	}
	return hs
}

func readLayers(t *testing.T, img v1.Image) {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil {
			t.Fatal(err)
		}
		rc.Close()
	}
}

func TestResolveLazyPull(t *testing.T) {
	ctx := context.Background()
	reg := startTestRegistry(t)
	img := imagetest.RandomImage(t, 4096, 3)
	ref := reg.host + "/ssebench/tool/x:1.0.0"
	push(t, ref, img)

	s := imagetest.Store(t)
	res, err := newResolver(t, WithStore(s)).Resolve(ctx, ref)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	if !res.FromRegistry {
		t.Error("FromRegistry = false after a pull")
	}
	if got, want := imagetest.Digest(t, res.Image), imagetest.Digest(t, img); got != want {
		t.Fatalf("resolved digest %s, want %s", got, want)
	}
	cfg, _ := img.ConfigName()
	for what, h := range map[string]v1.Hash{"manifest": imagetest.Digest(t, img), "config": cfg} {
		if !s.HasBlob(h) {
			t.Errorf("the %s is not in the store right after Resolve", what)
		}
	}
	for _, h := range layerDigests(t, img) {
		if s.HasBlob(h) {
			t.Errorf("layer %s was fetched before anything read it", h)
		}
	}
	// The entry is there at once, recorded without the layers' bytes:
	// the store knows where to fetch them, and verify accepts it.
	if d, err := s.Descriptor(res.Ref); err != nil || d.Digest != imagetest.Digest(t, img) {
		t.Errorf("the store has no entry for %s right after Resolve (%v)", ref, err)
	}
	imagetest.Verified(t, s.Dir())

	// A layer read halfway and closed leaves nothing behind.
	ls, _ := res.Image.Layers()
	rc, err := ls[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	io.CopyN(io.Discard, rc, 10)
	rc.Close()
	if s.HasBlob(imagetest.Digest(t, ls[0])) {
		t.Error("a layer read halfway is in the blob pool")
	}

	readLayers(t, res.Image)
	for _, h := range layerDigests(t, img) {
		if !s.HasBlob(h) {
			t.Errorf("layer %s is not in the store after it was read", h)
		}
	}
	imagetest.Verified(t, s.Dir())

	before := reg.requests.Load()
	again, err := newResolver(t, WithStore(s), WithPullPolicy(PullNever)).Resolve(ctx, ref)
	if err != nil {
		t.Fatalf("Resolve with PullNever after the pull: %v", err)
	}
	if again.FromRegistry {
		t.Error("FromRegistry = true for an image read from the store")
	}
	if err := validate.Image(again.Image); err != nil {
		t.Errorf("validate.Image of the stored image: %v", err)
	}
	if got := reg.requests.Load(); got != before {
		t.Errorf("reading the stored image made %d registry requests, want 0", got-before)
	}
}

func TestResolvePolicies(t *testing.T) {
	ctx := context.Background()
	reg := startTestRegistry(t)
	remoteImg := imagetest.RandomImage(t, 100, 1)
	ref := reg.host + "/p/x:1"
	push(t, ref, remoteImg)
	s := imagetest.Store(t)
	localImg := imagetest.RandomImage(t, 100, 1)
	if err := s.Write(ctx, imagetest.Ref(t, ref), localImg); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		policy       PullPolicy
		want         v1.Image
		wantRegistry bool
		wantCalls    bool
	}{
		{policy: PullMissing, want: localImg, wantRegistry: false},
		{policy: PullNever, want: localImg, wantRegistry: false},
		{policy: PullAlways, want: remoteImg, wantRegistry: true, wantCalls: true},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			before := reg.requests.Load()
			res, err := newResolver(t, WithStore(s), WithPullPolicy(tc.policy)).Resolve(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			if res.FromRegistry != tc.wantRegistry || imagetest.Digest(t, res.Image) != imagetest.Digest(t, tc.want) {
				t.Errorf("Resolve = %s from %s, want %s from %s", imagetest.Digest(t, res.Image), where(res.FromRegistry), imagetest.Digest(t, tc.want), where(tc.wantRegistry))
			}
			if called := reg.requests.Load() != before; called != tc.wantCalls {
				t.Errorf("registry called = %v, want %v", called, tc.wantCalls)
			}
		})
	}
}

func TestResolveNeverMissing(t *testing.T) {
	s := imagetest.Store(t)
	_, err := newResolver(t, WithStore(s), WithPullPolicy(PullNever)).Resolve(context.Background(), "localhost:5000/ssebench/tool/x:0.1.0-dev")
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Resolve = %v, want store.ErrNotFound", err)
	}
	for _, want := range []string{"image localhost:5000/ssebench/tool/x:0.1.0-dev is not in the local store", s.Dir(), "pull it with --pull=missing or build it first"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
}

func TestResolveWithoutStore(t *testing.T) {
	reg := startTestRegistry(t)
	img := imagetest.RandomImage(t, 100, 2)
	ref := reg.host + "/a:1"
	push(t, ref, img)
	res, err := newResolver(t).Resolve(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(res.Image); err != nil {
		t.Errorf("validate.Image: %v", err)
	}
}

// platformIndex is an index of two images, linux/amd64 and linux/arm64/v8.
func platformIndex(t *testing.T) (v1.ImageIndex, map[string]v1.Image) {
	t.Helper()
	imgs := map[string]v1.Image{}
	idx := v1.ImageIndex(empty.Index)
	for _, p := range []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64", Variant: "v8"}} {
		img := imagetest.RandomImage(t, 200, 1)
		imgs[p.Architecture] = img
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	return idx, imgs
}

func TestResolvePlatform(t *testing.T) {
	ctx := context.Background()
	reg := startTestRegistry(t)
	idx, imgs := platformIndex(t)
	ref := reg.host + "/ssebench/runtime:1.0.0"
	push(t, ref, idx)

	s := imagetest.Store(t)
	arm := &v1.Platform{OS: "linux", Architecture: "arm64"}
	res, err := newResolver(t, WithStore(s), WithPlatform(arm)).Resolve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := imagetest.Digest(t, res.Image), imagetest.Digest(t, imgs["arm64"]); got != want {
		t.Errorf("image for linux/arm64 = %s, want %s", got, want)
	}
	if res.Index == nil || imagetest.Digest(t, res.Index) != imagetest.Digest(t, idx) {
		t.Error("Resolved.Index is not the pushed index")
	}
	if res.Descriptor.Platform == nil || res.Descriptor.Platform.Architecture != "arm64" {
		t.Errorf("Resolved.Descriptor.Platform = %v, want linux/arm64/v8", res.Descriptor.Platform)
	}

	_, err = newResolver(t, WithPlatform(&v1.Platform{OS: "linux", Architecture: "s390x"})).Resolve(ctx, ref)
	if err == nil {
		t.Fatal("Resolve for linux/s390x succeeded")
	}
	for _, want := range []string{"linux/s390x", "linux/amd64", "linux/arm64/v8"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}

	// The store holds what the name means in the registry: the whole
	// index, not the arm64 image under the index's name (a later push of
	// that name would replace the registry's index with one platform).
	readLayers(t, res.Image)
	desc, err := s.Descriptor(res.Ref)
	if err != nil {
		t.Fatalf("no store entry after the pull: %v", err)
	}
	if desc.Digest != imagetest.Digest(t, idx) || !desc.MediaType.IsIndex() {
		t.Errorf("store entry = %s (%s), want the index %s", desc.Digest, desc.MediaType, imagetest.Digest(t, idx))
	}
	imagetest.Verified(t, s.Dir())
	amd := &v1.Platform{OS: "linux", Architecture: "amd64"}
	before := reg.requests.Load()
	res, err = newResolver(t, WithStore(s), WithPullPolicy(PullNever), WithPlatform(amd)).Resolve(ctx, ref)
	if err != nil || imagetest.Digest(t, res.Image) != imagetest.Digest(t, imgs["amd64"]) || res.FromRegistry {
		t.Fatalf("Resolve for amd64 from the store = %v, want the amd64 image of the stored index", err)
	}
	if n := reg.requests.Load() - before; n != 0 {
		t.Errorf("resolving the other platform from the store made %d registry requests", n)
	}
	// Its layers were never read: they come from the registry on first
	// read, verified, and stay.
	readLayers(t, res.Image)
	for _, h := range layerDigests(t, imgs["amd64"]) {
		if !s.HasBlob(h) {
			t.Errorf("amd64 layer %s is not in the store after it was read", h)
		}
	}
}

func TestResolveStoredIndex(t *testing.T) {
	ctx := context.Background()
	s := imagetest.Store(t)
	idx, imgs := platformIndex(t)
	ref := "localhost:5000/ssebench/runtime:1.0.0"
	if err := s.WriteIndex(ctx, imagetest.Ref(t, ref), idx); err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		res, err := newResolver(t, WithStore(s), WithPullPolicy(PullNever), WithPlatform(&v1.Platform{OS: "linux", Architecture: arch})).Resolve(ctx, ref)
		if err != nil {
			t.Fatalf("Resolve %s: %v", arch, err)
		}
		if diff := cmp.Diff(imagetest.Digest(t, imgs[arch]), imagetest.Digest(t, res.Image)); diff != "" {
			t.Errorf("image for %s (-want +got):\n%s", arch, diff)
		}
		if err := validate.Image(res.Image); err != nil {
			t.Errorf("validate.Image(%s): %v", arch, err)
		}
	}
}

// Writing a lazily pulled image into the store (what `ssebench pull`
// does) fetches each layer once, through the same tee.
func TestStoreWriteOfLazyImage(t *testing.T) {
	ctx := context.Background()
	reg := startTestRegistry(t)
	img := imagetest.RandomImage(t, 1000, 3)
	ref := reg.host + "/w:1"
	push(t, ref, img)
	s := imagetest.Store(t)
	res, err := newResolver(t, WithStore(s)).Resolve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, res.Ref, res.Image); err != nil {
		t.Fatalf("Write of a lazy image: %v", err)
	}
	imagetest.Verified(t, s.Dir())
	if _, err := s.Image(res.Ref); err != nil {
		t.Errorf("Image after Write: %v", err)
	}
}

// TestPushAfterPlatformPullKeepsIndex is the path every CI machine takes:
// an assembly resolves one platform of a two-platform runtime index, then
// `ssebench push` (and mirror, and save/load) of that name. The registry
// must keep its index; before the store recorded the index it got the
// amd64 manifest in its place.
func TestPushAfterPlatformPullKeepsIndex(t *testing.T) {
	ctx := context.Background()
	reg := startTestRegistry(t)
	idx, _ := platformIndex(t)
	ref := reg.host + "/ssebench/runtime:1.0.0"
	push(t, ref, idx)
	want := imagetest.Digest(t, idx)

	s := imagetest.Store(t)
	amd := &v1.Platform{OS: "linux", Architecture: "amd64"}
	res, err := newResolver(t, WithStore(s), WithPlatform(amd)).Resolve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	readLayers(t, res.Image) // as the assembler does

	// `ssebench push REF` takes the store's entry for REF.
	desc, err := s.Descriptor(imagetest.Ref(t, ref))
	if err != nil {
		t.Fatal(err)
	}
	if !desc.MediaType.IsIndex() {
		t.Fatalf("the store holds %s for %s, want the index", desc.MediaType, ref)
	}
	stored, err := s.IndexAt(desc, ref)
	if err != nil {
		t.Fatal(err)
	}
	before := reg.requests.Load()
	if _, err := Push(ctx, ref, stored, WithStore(s), noAuth); err != nil {
		t.Fatalf("pushing %s back from the store: %v", ref, err)
	}
	if n := reg.requests.Load() - before; n > 12 {
		t.Errorf("pushing the unchanged index back made %d requests, want only HEADs", n)
	}
	if got := imagetest.Pulled(t, ref); got != want {
		t.Errorf("after push from the store the registry has %s for %s, want its index %s", got, ref, want)
	}
	// Mirror of the name keeps it an index too, arm64 layers included
	// though this machine never read them.
	mirror := startTestRegistry(t)
	if _, err := Mirror(ctx, []string{ref}, reg.host+"/ssebench", mirror.host+"/copy", noAuth); err != nil {
		t.Fatal(err)
	}
	if got := imagetest.Pulled(t, mirror.host+"/copy/runtime:1.0.0"); got != want {
		t.Errorf("mirror gave %s, want the index %s", got, want)
	}
	// A push of the stored index to another registry fetches the layers
	// the store recorded without their bytes, through the access the
	// resolver lent the store.
	other := startTestRegistry(t)
	if _, err := Push(ctx, other.host+"/x/runtime:1.0.0", stored, WithStore(s), noAuth); err != nil {
		t.Fatalf("pushing the stored index to another registry: %v", err)
	}
	if got := imagetest.Pulled(t, other.host+"/x/runtime:1.0.0"); got != want {
		t.Errorf("the other registry has %s, want the index %s", got, want)
	}
}

func where(fromRegistry bool) string {
	if fromRegistry {
		return "the registry"
	}
	return "the store"
}
