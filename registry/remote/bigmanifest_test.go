package remote

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// hugeManifest serves at every manifest path an image manifest of about
// size bytes (a layer descriptor repeated), written as it is sent: with a
// Content-Length, or chunked without one.
func hugeManifest(size int, withLength bool) http.Handler {
	const head = `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:` + "0000000000000000000000000000000000000000000000000000000000000000" + `","size":2},"layers":[`
	const layer = `{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:1111111111111111111111111111111111111111111111111111111111111111","size":1},`
	const tail = `{"mediaType":"application/vnd.oci.image.layer.v1.tar+gzip","digest":"sha256:1111111111111111111111111111111111111111111111111111111111111111","size":1}]}`
	n := (size - len(head) - len(tail)) / len(layer)
	total := len(head) + n*len(layer) + len(tail)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		if !strings.Contains(r.URL.Path, "/manifests/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		if withLength {
			w.Header().Set("Content-Length", fmt.Sprint(total))
		}
		if r.Method == http.MethodHead {
			return
		}
		io.WriteString(w, head)
		chunk := strings.Repeat(layer, 1000)
		for i := 0; i < n; i += 1000 {
			if _, err := io.WriteString(w, chunk[:min(1000, n-i)*len(layer)]); err != nil {
				return
			}
		}
		io.WriteString(w, tail)
	})
}

// TestHostileHugeManifest: a manifest of 90 MB from a registry is refused
// in one line at the cap every manifest has (store.MaxManifestSize), read
// as a stream in bounded memory. Before, registry reads took up to 100 MiB
// (more than the store's own cap) and a 90 MB manifest peaked at 659 MB.
func TestHostileHugeManifest(t *testing.T) {
	for _, withLength := range []bool{true, false} {
		t.Run(fmt.Sprintf("Content-Length %v", withLength), func(t *testing.T) {
			hostile.Case(t, "registry: huge manifests")
			if !hostile.InChild(t) {
				hostile.RunChild(t, 96, 2*time.Minute)
				return
			}
			srv := httptest.NewServer(hugeManifest(90<<20, withLength))
			defer srv.Close()
			ref := strings.TrimPrefix(srv.URL, "http://") + "/big/manifest:latest"
			_, _, err := Fetch(context.Background(), ref, WithKeychain(authn.NewMultiKeychain()), withRetries(1, 0))
			if err == nil || !strings.Contains(err.Error(), "more than the 8.0 MiB any image needs") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Fetch() = %v, want one line refusing the manifest at 8 MiB", err)
			}
		})
	}
}
