package remote

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/imagetest"
)

// TestCorruptManifestByTagIsRefused flips one byte of every manifest the
// registry sends for a tag, keeping its Docker-Content-Digest: resolve,
// mirror and fetch fail in one line, and the store records nothing.
func TestCorruptManifestByTagIsRefused(t *testing.T) {
	ctx := context.Background()
	h := ggcrregistry.New(ggcrregistry.Logger(nilLogger()))
	var corrupt bool
	tagManifest := regexp.MustCompile(`/manifests/[^/:]+$`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !corrupt || r.Method != http.MethodGet || !tagManifest.MatchString(r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		b := rec.Body.Bytes()
		b = bytes.Replace(b, []byte(`"schemaVersion":2`), []byte(`"schemaVersion":3`), 1)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	reg := strings.TrimPrefix(srv.URL, "http://")
	ref := reg + "/ssebench/case/x:1"
	keys := WithKeychain(authn.NewMultiKeychain())
	if _, err := Push(ctx, ref, imagetest.RandomImage(t, 100, 1), keys); err != nil {
		t.Fatal(err)
	}
	corrupt = true

	s := imagetest.Store(t)
	r, err := NewResolver(WithStore(s), keys)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Resolve(ctx, ref)
	if err == nil || !strings.Contains(err.Error(), "damaged") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("Resolve of a corrupted manifest = %v, want one line saying it was damaged", err)
	}
	if names := imagetest.Names(t, s); len(names) != 0 {
		t.Errorf("the store names %v after a corrupted manifest", names)
	}
	if _, err := Mirror(ctx, []string{ref}, reg+"/ssebench", reg+"/copy", keys); err == nil {
		t.Error("Mirror copied a corrupted manifest")
	}
	corrupt = false
	if _, err := r.Resolve(ctx, ref); err != nil {
		t.Errorf("Resolve once the registry answers right: %v", err)
	}
}
