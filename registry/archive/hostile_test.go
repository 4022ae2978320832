package archive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/42-b3yond-6ug/ssebench/internal/hostile"
	"github.com/42-b3yond-6ug/ssebench/internal/imagetest"
	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// fanIn is a graph of 8 levels of 64 indexes, each listing 16 of the
// level below: 584 distinct nodes, 16^8 (4 billion) paths from the root.
// A walk that does not remember what it visited never ends.
var fanIn = bomb{levels: 8, width: 64, fanout: 16}

const bombRef = "localhost:5000/ssebench/tool/bomb:1.0.0"

// quickly runs f under a context that ends after limit and fails t when f
// does not return by then: a walk that follows every path of a graph bomb
// is cut by the context, and the error it returns fails the case.
func quickly(t *testing.T, limit time.Duration, what string, f func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	start := time.Now()
	if err := f(ctx); err != nil {
		t.Fatalf("%s: %v (after %s)", what, err, time.Since(start).Round(time.Millisecond))
	}
	if el := time.Since(start); el > limit {
		t.Fatalf("%s took %s, want under %s", what, el, limit)
	}
}

// loadedBomb loads g's archive (entries index.json entries naming its
// root) into a new store.
func loadedBomb(t *testing.T, g bomb, entries int) (*store.Store, *ArchiveReport) {
	t.Helper()
	bs, root := g.blobs()
	ar := archiveOf(t, bs, root, bombRef, entries)
	s := imagetest.Store(t)
	var rep *ArchiveReport
	quickly(t, 10*time.Second, "load", func(ctx context.Context) (err error) {
		rep, err = Load(ctx, bytes.NewReader(ar), WithStore(s))
		return err
	})
	return s, rep
}

func oneLine(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one saying %q", parts)
	}
	if strings.Contains(err.Error(), "\n") || len(err.Error()) > 500 {
		t.Errorf("error is not one short line: %q", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not say %q", err, p)
		}
	}
}

// TestHostileGraphBombs: manifest graphs built to exhaust a walk (heavy
// fan-in, many entries naming one graph, deep nesting) are loaded, saved,
// listed, verified, collected, pushed and mirrored in time linear in their
// distinct nodes, or refused in one line past the caps.
func TestHostileGraphBombs(t *testing.T) {
	t.Run("load fan-in", func(t *testing.T) {
		hostile.Case(t, "graph bombs")
		_, rep := loadedBomb(t, fanIn, 1)
		if len(rep.Images) != 1 {
			t.Errorf("load recorded %d images, want 1", len(rep.Images))
		}
	})
	t.Run("load 3000 entries naming one fan-in graph", func(t *testing.T) {
		hostile.Case(t, "graph bombs")
		// Each entry's walk alone is 584 nodes: 1.7 million visits
		// unless the entries share what they visited.
		_, rep := loadedBomb(t, bomb{levels: 4, width: 64, fanout: 16}, 3000)
		if len(rep.Images) != 3000 {
			t.Errorf("load recorded %d images, want 3000", len(rep.Images))
		}
	})
	t.Run("store ls verify and gc of a fan-in graph", func(t *testing.T) {
		hostile.Case(t, "graph bombs")
		s, _ := loadedBomb(t, fanIn, 1)
		quickly(t, 10*time.Second, "store ls", func(context.Context) error {
			u, err := s.Usage()
			if err == nil && len(u.Images) != 1 {
				t.Errorf("store ls shows %d images, want 1", len(u.Images))
			}
			return err
		})
		quickly(t, 10*time.Second, "store verify", func(ctx context.Context) error {
			probs, err := s.Verify(ctx)
			if len(probs) > 0 {
				t.Errorf("store verify: %v", probs)
			}
			return err
		})
		quickly(t, 10*time.Second, "store gc", func(ctx context.Context) error {
			res, err := s.GC(ctx)
			if err == nil && res.Blobs != 0 {
				t.Errorf("store gc removed %d blobs of the loaded graph", res.Blobs)
			}
			return err
		})
	})
	t.Run("save of a fan-in graph", func(t *testing.T) {
		hostile.Case(t, "graph bombs")
		s, _ := loadedBomb(t, fanIn, 1)
		var buf bytes.Buffer
		quickly(t, 10*time.Second, "save", func(ctx context.Context) error {
			_, err := Save(ctx, &buf, []string{bombRef}, noAuth, WithStore(s), WithRegistryPrefix("localhost:5000/ssebench"))
			return err
		})
		bs, _ := fanIn.blobs()
		if got := len(tarEntries(t, buf.Bytes())); got < len(bs) {
			t.Errorf("the saved archive has %d entries, want the graph's %d blobs and more", got, len(bs))
		}
	})
	t.Run("push and mirror of a fan-in graph", func(t *testing.T) {
		hostile.Case(t, "graph bombs")
		s, rep := loadedBomb(t, fanIn, 1)
		srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
		defer srv.Close()
		host := strings.TrimPrefix(srv.URL, "http://")
		var prep *remote.PushReport
		quickly(t, 20*time.Second, "push", func(ctx context.Context) (err error) {
			prep, err = PushLoaded(ctx, rep, host+"/src", noAuth, WithStore(s))
			return err
		})
		bs, _ := fanIn.blobs()
		if prep.Manifests != len(bs)-2 {
			t.Errorf("push wrote %d manifests, want each of the %d once", prep.Manifests, len(bs)-2)
		}
		quickly(t, 20*time.Second, "mirror", func(ctx context.Context) error {
			_, err := remote.Mirror(ctx, []string{host + "/src/ssebench/tool/bomb:1.0.0"}, host+"/src", host+"/dst", remote.WithKeychain(authn.NewMultiKeychain()))
			return err
		})
	})
	t.Run("indexes nested beyond the depth cap", func(t *testing.T) {
		hostile.Case(t, "graph bombs")
		bs, root := deepChain(oci.MaxGraphDepth + 1)
		_, _, err := load(t, archiveOf(t, bs, root, bombRef, 1))
		oneLine(t, err, bombRef, "nests more than 16 deep")
		if !errors.Is(err, oci.ErrGraphTooLarge) {
			t.Errorf("error %v is not ErrGraphTooLarge", err)
		}
		// At the cap (the image's layer two below the innermost
		// index) the graph loads.
		bs, root = deepChain(oci.MaxGraphDepth - 2)
		if _, _, err := load(t, archiveOf(t, bs, root, bombRef, 1)); err != nil {
			t.Fatalf("load of %d nested indexes: %v", oci.MaxGraphDepth-2, err)
		}
	})
}
