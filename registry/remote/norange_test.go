package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// TestHostileFetchWithoutRange: the lazy fetch of a layer the store
// recorded without its bytes (what assemble reads) survives a connection
// cut mid-body from a registry that ignores Range: it gets the whole blob
// again and skips what it read, as the pulls of mirror, save and copy do.
// Before, it failed with "the registry cannot resume a download".
func TestHostileFetchWithoutRange(t *testing.T) {
	hostile.Case(t, "registry: lazy fetch without Range")
	blob := make([]byte, 1<<20)
	rand.Read(blob)
	sum := sha256.Sum256(blob)
	d := v1.Descriptor{Digest: v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}, Size: int64(len(blob))}
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		if !strings.HasSuffix(r.URL.Path, "/blobs/"+d.Digest.String()) {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(blob)))
		w.Header().Set("Docker-Content-Digest", d.Digest.String())
		if gets.Add(1) == 1 {
			// Half the blob, then the connection breaks.
			w.Write(blob[:len(blob)/2])
			w.(http.Flusher).Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		w.Write(blob) // Range ignored: the whole blob, 200
	}))
	defer srv.Close()
	a, err := New(WithKeychain(authn.NewMultiKeychain()), withRetries(3, 0))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := a.FetchBlob(context.Background(), strings.TrimPrefix(srv.URL, "http://")+"/lazy/layer", d)
	if err != nil {
		t.Fatalf("FetchBlob() = %v", err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading the blob after a cut: %v", err)
	}
	if !bytes.Equal(got, blob) {
		t.Errorf("read %d bytes, not the blob's %d (or other bytes)", len(got), len(blob))
	}
	if n := gets.Load(); n != 2 {
		t.Errorf("%d GETs of the blob, want 2", n)
	}
}
