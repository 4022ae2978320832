package remote

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrremote "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/faultproxy"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/imagetest"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

// tagged says whether ref exists in the registry (asked directly, not
// through the proxy).
func tagged(t *testing.T, ref string) bool {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ggcrremote.Head(r)
	return err == nil
}

const (
	uploadPath    = "/blobs/uploads/"
	blobPath      = "/blobs/sha256:"
	manifestsPath = "/manifests/"
)

var (
	unavailable = faultproxy.Fault{Kind: faultproxy.Status, Code: 503, Body: `{"errors":[{"code":"UNAVAILABLE","message":"try later"}]}`}
	broken      = faultproxy.Fault{Kind: faultproxy.Status, Code: 500, Body: `{"errors":[{"code":"UNKNOWN","message":"disk on fire"}]}`}
	slowDown    = faultproxy.Fault{Kind: faultproxy.Status, Code: 429, RetryAfter: time.Second, Body: `{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}`}
)

// TestHostileRegistryFaults puts a fault-injecting proxy in front of a
// real distribution registry: each push, pull and mirror either finishes
// with the right digests or fails in one line and leaves no tag, and a
// rerun without the fault finishes.
func TestHostileRegistryFaults(t *testing.T) {
	reg := testenv.StartRegistry(t)
	ctx := context.Background()
	img := imagetest.ImageOf(t, imagetest.Layer(t, 300_000), imagetest.Layer(t, 5_000))
	want := imagetest.Digest(t, img)
	fast := []Option{noAuth, fastRetries, withStall(500 * time.Millisecond), WithJobs(2)}

	pushCases := []struct {
		name  string
		rules []faultproxy.Rule
		fails bool
	}{
		{"5xx on uploads", []faultproxy.Rule{{Method: "PUT", Path: uploadPath, Times: 2, Fault: unavailable}, {Method: "PATCH", Path: uploadPath, Times: 1, Fault: unavailable}}, false},
		{"429 with Retry-After", []faultproxy.Rule{{Method: "POST", Path: uploadPath, Times: 1, Fault: slowDown}}, false},
		{"reset after the manifest is written", []faultproxy.Rule{{Method: "PUT", Path: manifestsPath, Times: 1, Fault: faultproxy.Fault{Kind: faultproxy.Reset}}}, false},
		{"stalled upload answer", []faultproxy.Rule{{Method: "PATCH", Path: uploadPath, Times: 1, Fault: faultproxy.Fault{Kind: faultproxy.Stall}}, {Method: "PUT", Path: uploadPath, Times: 1, Fault: faultproxy.Fault{Kind: faultproxy.Stall}}}, false},
		{"lying HEAD with another size", []faultproxy.Rule{{Method: "HEAD", Path: blobPath, Fault: faultproxy.Fault{Kind: faultproxy.LieHead, After: 7}}}, false},
		{"lying HEAD without a size", []faultproxy.Rule{{Method: "HEAD", Path: blobPath, Fault: faultproxy.Fault{Kind: faultproxy.LieHead}}}, false},
		{"manifest refused every time", []faultproxy.Rule{{Method: "PUT", Path: manifestsPath, Fault: broken}}, true},
	}
	for i, tc := range pushCases {
		t.Run("push/"+tc.name, func(t *testing.T) {
			p := faultproxy.New(reg)
			defer p.Close()
			p.Add(tc.rules...)
			repo := "faults/push" + string(rune('a'+i))
			_, err := Push(ctx, p.Host+"/"+repo+":1", img, fast...)
			fired := p.Log()
			hostile.Case(t, "registry faults")
			if len(fired) == 0 {
				t.Fatalf("no fault fired: the case tests nothing")
			}
			if tc.fails {
				if err == nil || strings.Contains(err.Error(), "\n") {
					t.Fatalf("push = %v, want one line", err)
				}
				if tagged(t, reg+"/"+repo+":1") {
					t.Fatalf("a failed push left the tag")
				}
				p.Clear()
				if _, err := Push(ctx, p.Host+"/"+repo+":1", img, fast...); err != nil {
					t.Fatalf("rerun without the fault: %v", err)
				}
			} else if err != nil {
				t.Fatalf("push past %v: %v", fired, err)
			}
			if got := imagetest.Pulled(t, reg+"/"+repo+":1"); got != want {
				t.Errorf("the registry holds %s, want %s", got, want)
			}
		})
	}

	// The image the pulls and the mirror read.
	src := reg + "/faults/src:1"
	if _, err := Push(ctx, src, img, fast...); err != nil {
		t.Fatal(err)
	}
	pullCases := []struct {
		name  string
		rules []faultproxy.Rule
		fails string // a word of the one-line error; "" when the pull must succeed
	}{
		{"reset mid-layer", []faultproxy.Rule{{Method: "GET", Path: blobPath, Times: 2, Fault: faultproxy.Fault{Kind: faultproxy.Reset, After: 100_000}}}, ""},
		{"truncated layer", []faultproxy.Rule{{Method: "GET", Path: blobPath, Times: 1, Fault: faultproxy.Fault{Kind: faultproxy.Truncate, After: 150_000}}}, ""},
		{"stalled layer", []faultproxy.Rule{{Method: "GET", Path: blobPath, Times: 1, Fault: faultproxy.Fault{Kind: faultproxy.Stall, After: 50_000}}}, ""},
		{"5xx on a layer", []faultproxy.Rule{{Method: "GET", Path: blobPath, Times: 2, Fault: unavailable}}, ""},
		{"corrupted layer", []faultproxy.Rule{{Method: "GET", Path: blobPath, Fault: faultproxy.Fault{Kind: faultproxy.Corrupt, After: 1000}}}, "sha256"},
		{"corrupted manifest", []faultproxy.Rule{{Method: "GET", Path: manifestsPath, Fault: faultproxy.Fault{Kind: faultproxy.Corrupt, After: 20}}}, "damaged"},
	}
	for _, tc := range pullCases {
		t.Run("pull/"+tc.name, func(t *testing.T) {
			p := faultproxy.New(reg)
			defer p.Close()
			p.Add(tc.rules...)
			s := imagetest.Store(t)
			r, err := NewResolver(append([]Option{WithStore(s)}, fast...)...)
			if err != nil {
				t.Fatal(err)
			}
			ref := p.Host + "/faults/src:1"
			err = pullAll(ctx, r, ref)
			hostile.Case(t, "registry faults")
			if len(p.Log()) == 0 {
				t.Fatalf("no fault fired: the case tests nothing")
			}
			if tc.fails != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fails) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("pull = %v, want one line naming %q", err, tc.fails)
				}
				if tc.name == "corrupted manifest" {
					if names := imagetest.Names(t, s); len(names) != 0 {
						t.Fatalf("the store names %v after a corrupted manifest", names)
					}
				}
				imagetest.Verified(t, s.Dir())
				p.Clear()
				if err := pullAll(ctx, r, ref); err != nil {
					t.Fatalf("rerun without the fault: %v", err)
				}
			} else if err != nil {
				t.Fatalf("pull past %v: %v", p.Log(), err)
			}
			imagetest.Verified(t, s.Dir())
		})
	}

	t.Run("mirror/faults on both sides", func(t *testing.T) {
		from, to := faultproxy.New(reg), faultproxy.New(reg)
		defer from.Close()
		defer to.Close()
		from.Add(faultproxy.Rule{Method: "GET", Path: blobPath, Times: 1, Fault: faultproxy.Fault{Kind: faultproxy.Reset, After: 64_000}})
		to.Add(faultproxy.Rule{Method: "PUT", Path: manifestsPath, Times: 1, Fault: unavailable},
			faultproxy.Rule{Method: "HEAD", Path: blobPath, Times: 1, Fault: faultproxy.Fault{Kind: faultproxy.LieHead}})
		rep, err := Mirror(ctx, []string{from.Host + "/faults/src:1"}, from.Host+"/faults", to.Host+"/faults-copy", fast...)
		hostile.Case(t, "registry faults")
		if err != nil {
			t.Fatalf("mirror past %v %v: %v", from.Log(), to.Log(), err)
		}
		if len(from.Log()) == 0 || len(to.Log()) == 0 {
			t.Fatalf("faults fired: %v %v; want both", from.Log(), to.Log())
		}
		if got := imagetest.Pulled(t, reg+"/faults-copy/src:1"); got != want || rep.Images[0].Digest != want {
			t.Errorf("mirrored %s, want %s", got, want)
		}
	})

	t.Run("mirror/target refuses the manifest", func(t *testing.T) {
		to := faultproxy.New(reg)
		defer to.Close()
		to.Add(faultproxy.Rule{Method: "PUT", Path: manifestsPath, Fault: broken})
		_, err := Mirror(ctx, []string{reg + "/faults/src:1"}, reg+"/faults", to.Host+"/faults-refused", fast...)
		hostile.Case(t, "registry faults")
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Fatalf("mirror = %v, want one line", err)
		}
		if tagged(t, reg+"/faults-refused/src:1") {
			t.Fatal("a failed mirror left the tag")
		}
		to.Clear()
		if _, err := Mirror(ctx, []string{reg + "/faults/src:1"}, reg+"/faults", to.Host+"/faults-refused", fast...); err != nil {
			t.Fatalf("rerun without the fault: %v", err)
		}
	})
}

// pullAll resolves ref into the resolver's store and reads every layer.
func pullAll(ctx context.Context, r *Resolver, ref string) error {
	res, err := r.Resolve(ctx, ref)
	if err != nil {
		return err
	}
	ls, err := res.Image.Layers()
	if err != nil {
		return err
	}
	for _, l := range ls {
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
