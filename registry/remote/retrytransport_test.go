package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func testTransport() *retryTransport {
	return &retryTransport{base: http.DefaultTransport, attempts: 4, backoff: time.Millisecond}
}

// TestRetryTransportRequests: a HEAD answered 429 with Retry-After is sent
// again after the wait; a PUT whose body can be rewound is sent again whole;
// one whose body cannot is sent once (its caller retries it); a request
// the caller marked is sent once.
func TestRetryTransportRequests(t *testing.T) {
	var heads, puts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodHead:
			if heads.Add(1) == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
		case http.MethodPut:
			b, _ := io.ReadAll(r.Body)
			if puts.Add(1) == 1 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			if string(b) != "manifest" {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			w.WriteHeader(http.StatusCreated)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	c := &http.Client{Transport: testTransport()}

	start := time.Now()
	resp, err := c.Head(srv.URL + "/v2/r/manifests/1")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HEAD = %v, %v; want 200 after the 429", resp, err)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("HEAD took %s: Retry-After: 1 was not waited for", took)
	}

	resp, err = c.Do(mustRequest(t, http.MethodPut, srv.URL+"/v2/r/manifests/1", bytes.NewReader([]byte("manifest"))))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT = %v, %v; want 201 with the whole body sent again", resp, err)
	}

	puts.Store(0)
	resp, err = c.Do(mustRequest(t, http.MethodPut, srv.URL+"/v2/r/manifests/1", io.MultiReader(strings.NewReader("manifest"))))
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || puts.Load() != 1 {
		t.Fatalf("PUT of a stream = %v, %v after %d requests; want its 503, sent once", resp, err, puts.Load())
	}

	heads.Store(0)
	req := mustRequest(t, http.MethodHead, srv.URL+"/v2/r/manifests/1", nil)
	req = req.WithContext(callerRetries(req.Context(), req.URL))
	resp, err = c.Do(req)
	if err != nil || resp.StatusCode != http.StatusTooManyRequests || heads.Load() != 1 {
		t.Fatalf("marked HEAD = %v, %v after %d requests; want its 429, sent once", resp, err, heads.Load())
	}
}

// TestResumeWithoutRangeSupport: a registry that ignores Range sends the
// whole blob again; the bytes already read are skipped and the blob comes
// out whole and checked.
func TestResumeWithoutRangeSupport(t *testing.T) {
	blob := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	sum := sha256.Sum256(blob)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "65536")
		w.Header().Set("Docker-Content-Digest", digest)
		if n.Add(1) == 1 {
			w.Write(blob[:10_000])
			w.(http.Flusher).Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		w.Write(blob) // Range ignored
	}))
	defer srv.Close()
	c := &http.Client{Transport: testTransport()}
	resp, err := c.Get(srv.URL + "/v2/r/blobs/" + digest)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !bytes.Equal(got, blob) {
		t.Fatalf("read %d bytes, %v; want the %d of the blob", len(got), err, len(blob))
	}
	if n.Load() != 2 {
		t.Errorf("%d requests, want 2", n.Load())
	}
}

func mustRequest(t *testing.T, method, u string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
