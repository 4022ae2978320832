package remote

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/imagetest"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// TestResolveLocalOnly: images under the WithLocalOnly prefix come from the
// store alone (the registry is not asked, even when it has them), unless
// the policy is PullAlways; other names are pulled as usual, after a
// notice.
func TestResolveLocalOnly(t *testing.T) {
	ctx := context.Background()
	reg := startTestRegistry(t)
	prefix := reg.host + "/default"
	missing := prefix + "/tool/x:1"
	push(t, missing, imagetest.RandomImage(t, 100, 1))
	other := reg.host + "/other/x:1"
	push(t, other, imagetest.RandomImage(t, 100, 1))
	stored := prefix + "/tool/y:1"
	s := imagetest.Store(t)
	if err := s.Write(ctx, imagetest.Ref(t, stored), imagetest.RandomImage(t, 100, 1)); err != nil {
		t.Fatal(err)
	}
	var notices []string
	opts := []Option{WithStore(s), WithLocalOnly(prefix+"/", "not configured"), WithNotice(func(m string) { notices = append(notices, m) })}

	before := reg.requests.Load()
	_, err := newResolver(t, opts...).Resolve(ctx, missing)
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "is not in the local store ("+s.Dir()+"), and not configured") {
		t.Errorf("Resolve(%s) = %v, want a store miss ending with the hint", missing, err)
	}
	if reg.requests.Load() != before {
		t.Errorf("the registry was asked for %s", missing)
	}
	if res, err := newResolver(t, opts...).Resolve(ctx, stored); err != nil || res.FromRegistry {
		t.Errorf("Resolve(%s) = %v, %v; want it from the store", stored, res, err)
	}
	if res, err := newResolver(t, append(opts, WithPullPolicy(PullAlways))...).Resolve(ctx, missing); err != nil || !res.FromRegistry {
		t.Errorf("Resolve(%s) with PullAlways = %v; want it from the registry", missing, err)
	}
	if res, err := newResolver(t, opts...).Resolve(ctx, other); err != nil || !res.FromRegistry {
		t.Fatalf("Resolve(%s) = %v; want it from the registry", other, err)
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "image "+other+" is not in the local store") || !strings.HasSuffix(notices[0], "pulling it from "+reg.host) {
		t.Errorf("notices = %q, want one for %s", notices, other)
	}
}
