package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/gateway"
)

// TestProbeUpstream: any HTTP answer of the upstream will do (a 401
// included); one that does not answer is refused, naming where its URL
// came from; a run without a model is not probed.
func TestProbeUpstream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) }))
	defer srv.Close()
	env := func(base string) func(string) string {
		return func(k string) string {
			if k == gateway.DefaultBaseURLEnv {
				return base
			}
			return ""
		}
	}
	ctx := context.Background()
	if err := gateway.ProbeUpstream(ctx, "m", "", t.TempDir(), env(srv.URL+"/v1")); err != nil {
		t.Errorf("an upstream that answers 401: %v", err)
	}
	down := httptest.NewServer(http.NotFoundHandler())
	url := down.URL
	down.Close()
	err := gateway.ProbeUpstream(ctx, "m", "", t.TempDir(), env(url+"/v1"))
	if err == nil || !strings.Contains(err.Error(), "does not answer") || !strings.Contains(err.Error(), "check "+gateway.DefaultBaseURLEnv) {
		t.Errorf("an upstream that is down: %v, want it named with %s", err, gateway.DefaultBaseURLEnv)
	}
	if err := gateway.ProbeUpstream(ctx, "none", "", t.TempDir(), env(url+"/v1")); err != nil {
		t.Errorf("a run without a model was probed: %v", err)
	}
}
