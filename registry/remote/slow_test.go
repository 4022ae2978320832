package remote

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// trickle serves every manifest 50 bytes at a time, one chunk every
// every, with its Content-Length announced; with delay, every answer's
// headers come that late.
func trickle(every, delay time.Duration) http.Handler {
	body := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:` + strings.Repeat("0", 64) + `","size":2},"layers":[]}`
	body += strings.Repeat(" ", 4000)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		if r.URL.Path == "/v2/" {
			return
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		if r.Method == http.MethodHead {
			return
		}
		for i := 0; i < len(body); i += 50 {
			if _, err := w.Write([]byte(body[i:min(i+50, len(body))])); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(every):
			}
		}
	})
}

// TestHostileSlowRegistry: a registry that sends a little every while,
// never silent for the stall limit, is cut once a body takes longer than
// the stall limit plus its size at the slowest rate waited for; and no
// request runs past the command's deadline. Before, a byte every 10 s held
// inspect or assemble for hours.
func TestHostileSlowRegistry(t *testing.T) {
	t.Run("a manifest sent 50 bytes every 200 ms", func(t *testing.T) {
		hostile.Case(t, "registry: slow reads and deadlines")
		srv := httptest.NewServer(trickle(200*time.Millisecond, 0))
		defer srv.Close()
		start := time.Now()
		// The stall limit is 1 s: each chunk comes well within it;
		// the body of 4 KB may take 1 s in all. Sent whole, it would
		// take 17 s, each of 2 attempts.
		_, _, err := Fetch(context.Background(), strings.TrimPrefix(srv.URL, "http://")+"/slow/img:1",
			WithKeychain(authn.NewMultiKeychain()), withStall(time.Second), withRetries(2, 0))
		if err == nil || !errors.Is(err, errTooSlow) || !strings.Contains(err.Error(), "slower than 64.0 KiB/s") {
			t.Errorf("Fetch() = %v, want a body too slow", err)
		}
		t.Logf("Fetch() = %v", err)
		if d := time.Since(start); d > 8*time.Second {
			t.Errorf("Fetch() took %s", d.Round(time.Millisecond))
		}
	})
	t.Run("the command's deadline", func(t *testing.T) {
		hostile.Case(t, "registry: slow reads and deadlines")
		srv := httptest.NewServer(trickle(time.Millisecond, 700*time.Millisecond))
		defer srv.Close()
		start := time.Now()
		_, _, err := Fetch(context.Background(), strings.TrimPrefix(srv.URL, "http://")+"/slow/img:1",
			WithKeychain(authn.NewMultiKeychain()), withRetries(3, 0), WithDeadline(time.Now().Add(time.Second)))
		if err == nil || !errors.Is(err, errPastDeadline) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "--registry-timeout") {
			t.Errorf("Fetch() = %v, want one line saying the command's deadline passed", err)
		}
		t.Logf("Fetch() = %v", err)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("Fetch() took %s, past a deadline of 1 s", d.Round(time.Millisecond))
		}
		// A request after the deadline does not start.
		_, _, err = Fetch(context.Background(), strings.TrimPrefix(srv.URL, "http://")+"/slow/img:1",
			WithKeychain(authn.NewMultiKeychain()), WithDeadline(time.Now().Add(-time.Second)))
		if !errors.Is(err, errPastDeadline) {
			t.Errorf("Fetch() past the deadline = %v", err)
		}
	})
}
