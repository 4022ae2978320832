package remote

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/imagetest"
)

// withStall sets the stall limit (see defaultStall); tests shorten it.
func withStall(d time.Duration) Option {
	return func(o *options) error {
		o.stall = d
		return nil
	}
}

// fault wraps a registry and misbehaves on blob uploads as told, once per
// upload request up to n times.
type fault struct {
	h    http.Handler
	n    int64
	seen atomic.Int64
	do   func(w http.ResponseWriter, r *http.Request) bool // true: handled
}

func (f *fault) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if (r.Method == http.MethodPut || r.Method == http.MethodPatch) && strings.Contains(r.URL.Path, "/blobs/uploads/") && f.seen.Add(1) <= f.n {
		if f.do(w, r) {
			return
		}
	}
	f.h.ServeHTTP(w, r)
}

func faultRegistry(t *testing.T, n int64, do func(w http.ResponseWriter, r *http.Request) bool) (string, *fault) {
	t.Helper()
	f := &fault{h: ggcrregistry.New(ggcrregistry.Logger(nilLogger())), n: n, do: do}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), f
}

// TestPushFaults: a push either finishes with the right digest or fails in
// one line, against a registry that stalls, asks to wait, or gets a cut
// body.
func TestPushFaults(t *testing.T) {
	ctx := context.Background()
	img := imagetest.ImageOf(t, imagetest.Layer(t, 6000))
	want := imagetest.Digest(t, img)

	t.Run("a request that stalls is cut off and retried", func(t *testing.T) {
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		host, _ := faultRegistry(t, 1, func(w http.ResponseWriter, r *http.Request) bool {
			io.Copy(io.Discard, r.Body)
			select { // hold the answer back, as a stuck registry does
			case <-release:
			case <-r.Context().Done():
			}
			return true
		})
		start := time.Now()
		if _, err := Push(ctx, host+"/stall/img:1", img, noAuth, fastRetries, withStall(300*time.Millisecond), WithJobs(1)); err != nil {
			t.Fatalf("push past a stalled request: %v", err)
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("the push took %s: the stall was not cut off", took)
		}
		if got := imagetest.Pulled(t, host+"/stall/img:1"); got != want {
			t.Errorf("pushed %s, want %s", got, want)
		}
	})

	t.Run("429 with Retry-After is waited out", func(t *testing.T) {
		var first time.Time
		host, f := faultRegistry(t, 3, func(w http.ResponseWriter, r *http.Request) bool {
			if first.IsZero() {
				first = time.Now()
			}
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}`, http.StatusTooManyRequests)
			return true
		})
		// Four attempts 1 ms apart would give up at once: Retry-After
		// makes each wait a second.
		start := time.Now()
		if _, err := Push(ctx, host+"/429/img:1", img, noAuth, withRetries(4, time.Millisecond), WithJobs(1)); err != nil {
			t.Fatalf("push past three 429s with Retry-After: %v", err)
		}
		if took := time.Since(start); took < 3*time.Second {
			t.Errorf("the push took %s: Retry-After: 1 three times was not honoured", took)
		}
		if f.seen.Load() < 4 {
			t.Errorf("%d upload requests, want the 429s retried", f.seen.Load())
		}
	})

	t.Run("a cut upload body is sent again", func(t *testing.T) {
		host, _ := faultRegistry(t, 1, func(w http.ResponseWriter, r *http.Request) bool {
			// The registry got part of the body (a proxy cut it) and
			// says the digest does not match.
			io.CopyN(io.Discard, r.Body, 100)
			http.Error(w, `{"errors":[{"code":"DIGEST_INVALID","message":"digest did not match"}]}`, http.StatusBadRequest)
			return true
		})
		if _, err := Push(ctx, host+"/cut/img:1", img, noAuth, fastRetries, WithJobs(1)); err != nil {
			t.Fatalf("push past a cut body: %v", err)
		}
		if got := imagetest.Pulled(t, host+"/cut/img:1"); got != want {
			t.Errorf("pushed %s, want %s", got, want)
		}
	})
}

// TestFetchResumesABrokenDownload cuts the connection halfway through a
// layer the store recorded without its bytes: the read picks up where it
// stopped with a Range request and the store gets the verified blob.
func TestFetchResumesABrokenDownload(t *testing.T) {
	ctx := context.Background()
	h := ggcrregistry.New(ggcrregistry.Logger(nilLogger()))
	var cut atomic.Bool
	var ranges atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Range") != "" {
			ranges.Add(1)
		}
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/sha256:") && r.Header.Get("Range") == "" && cut.CompareAndSwap(true, false) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			w.WriteHeader(http.StatusOK)
			w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	l := imagetest.Layer(t, 200_000)
	img := imagetest.ImageOf(t, l)
	ref := host + "/fetch/img:1"
	if _, err := Push(ctx, ref, img, noAuth); err != nil {
		t.Fatal(err)
	}
	s := imagetest.Store(t)
	r, err := NewResolver(WithStore(s), noAuth)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Resolve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	cut.Store(true)
	readLayers(t, res.Image)
	if !s.HasBlob(imagetest.Digest(t, l)) {
		t.Error("the layer is not in the store after the resumed read")
	}
	if ranges.Load() == 0 {
		t.Error("no Range request: the download started over instead of resuming")
	}
	imagetest.Verified(t, s.Dir())
}
