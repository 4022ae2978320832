package remote

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// countingServer is h on loopback, counting the TCP connections and the
// requests it gets.
func countingServer(t *testing.T, h http.Handler) (host string, conns, reqs *atomic.Int64) {
	t.Helper()
	conns, reqs = new(atomic.Int64), new(atomic.Int64)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs.Add(1)
		h.ServeHTTP(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), conns, reqs
}

// TestHostileMirrorAll: mirror --all over a registry of many repositories
// shares one pool of connections, and the listing as a whole is bounded:
// endless tag pages, pages that bring nothing new, and names no registry
// can hold are refused after a few requests. Before, each repository
// listed (and each image fetched) opened a connection of its own, kept
// open: 100,000 repositories ran out of file descriptors at 20,000.
func TestHostileMirrorAll(t *testing.T) {
	t.Run("300 repositories share connections", func(t *testing.T) {
		hostile.Case(t, "registry: catalog of mirror --all")
		host, conns, _ := countingServer(t, ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
		const n = 300
		for i := range n {
			img, err := random.Image(64, 1)
			if err != nil {
				t.Fatal(err)
			}
			ref, _ := name.ParseReference(fmt.Sprintf("%s/src/r%03d:v1", host, i), name.Insecure)
			if err := ggremote.Write(ref, img); err != nil {
				t.Fatal(err)
			}
		}
		before := conns.Load()
		ctx := context.Background()
		opts := []Option{WithKeychain(authn.NewMultiKeychain())}
		refs, err := ListAll(ctx, host+"/src", opts...)
		if err != nil || len(refs) != n {
			t.Fatalf("ListAll() = %d images, %v; want %d", len(refs), err, n)
		}
		listed := conns.Load() - before
		rep, err := Mirror(ctx, refs, host+"/src", host+"/dst", opts...)
		if err != nil || len(rep.Images) != n {
			t.Fatalf("Mirror() = %v, %v", rep, err)
		}
		mirrored := conns.Load() - before - listed
		t.Logf("connections: %d to list %d repositories, %d to mirror them", listed, n, mirrored)
		if listed > 20 || mirrored > 40 {
			t.Errorf("%d connections to list and %d to mirror %d repositories, want a pool's worth", listed, mirrored, n)
		}
	})

	page := func(w http.ResponseWriter, next string, body string) {
		if next != "" {
			w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, next))
		}
		io.WriteString(w, body)
	}
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    string
		maxReqs int64
	}{
		{"endless tag pages of new tags", func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == "/v2/_catalog":
				page(w, "", `{"repositories":["a","b","c"]}`)
			case strings.HasSuffix(r.URL.Path, "/tags/list"):
				repo := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/v2/"), "/tags/list")
				k := 0
				fmt.Sscan(r.URL.Query().Get("k"), &k)
				ts := make([]string, 1000)
				for i := range ts {
					ts[i] = fmt.Sprintf("t%d-%d", k, i)
				}
				page(w, fmt.Sprintf("%s?k=%d", r.URL.Path, k+1), fmt.Sprintf(`{"name":%q,"tags":["%s"]}`, repo, strings.Join(ts, `","`)))
			}
		}, "more than 100000 images", 120},
		{"tag pages that bring nothing new", func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.URL.Path == "/v2/_catalog":
				page(w, "", `{"repositories":["a"]}`)
			case strings.HasSuffix(r.URL.Path, "/tags/list"):
				k := 0
				fmt.Sscan(r.URL.Query().Get("k"), &k)
				page(w, fmt.Sprintf("%s?k=%d", r.URL.Path, k+1), `{"name":"a","tags":["v1"]}`)
			}
		}, "names nothing new", 10},
		{"catalog pages of 400-character names", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v2/_catalog" {
				return
			}
			k := 0
			fmt.Sscan(r.URL.Query().Get("k"), &k)
			names := make([]string, 1000)
			for i := range names {
				names[i] = fmt.Sprintf("%s%06d", strings.Repeat("n", 394), k*1000+i)
			}
			page(w, fmt.Sprintf("/v2/_catalog?k=%d", k+1), `{"repositories":["`+strings.Join(names, `","`)+`"]}`)
		}, "more than a name may be", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "registry: catalog of mirror --all")
			host, _, reqs := countingServer(t, tc.handler)
			_, err := ListAll(context.Background(), host, WithKeychain(authn.NewMultiKeychain()), withRetries(1, 0))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || len(err.Error()) > 400 {
				t.Errorf("ListAll() = %.300v, want one short line saying %q", err, tc.want)
			}
			if n := reqs.Load(); n > tc.maxReqs {
				t.Errorf("ListAll() made %d requests, want at most %d", n, tc.maxReqs)
			}
		})
	}
}
