package agentimage

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/42-b3yond-6ug/ssebench/images/buildkit"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// fakeBuilder records the request and answers with a layout holding img.
type fakeBuilder struct {
	t   *testing.T
	got buildkit.Request
	// env, when set, is the built image's ENV.
	env []string
}

func (f *fakeBuilder) Build(_ context.Context, req buildkit.Request) (*buildkit.Result, error) {
	f.got = req
	dir := f.t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return nil, err
	}
	img := toolImage(f.t)
	if f.env != nil {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		c := cf.Config
		c.Env = f.env
		if img, err = mutate.Config(img, c); err != nil {
			return nil, err
		}
	}
	if err := p.AppendImage(img); err != nil {
		return nil, err
	}
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	return &buildkit.Result{Digest: d, LayoutDir: dir}, nil
}

func TestBuildKitRequestAndStore(t *testing.T) {
	store, toolRef, _ := storeTool(t)
	src, err := ToolFromStore(store, toolRef)
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBuilder{t: t}
	ref := name.MustParseReference("example.invalid/ssebench/agent-x/task:1")
	dig, err := BuildKit(context.Background(), b, BuildRequest{
		AgentDir: "/home/u/ssebench/agents/x", Home: "/home/u/ssebench", Tool: src,
		BuildArgs: map[string]string{"A": "1"}, Platform: "linux/arm64", Store: store, Ref: ref,
	})
	if err != nil {
		t.Fatalf("BuildKit() = %v", err)
	}
	want := buildkit.Request{
		Dockerfile:     "/home/u/ssebench/agents/x/Dockerfile",
		ContextDir:     "/home/u/ssebench/agents/x",
		Platform:       "linux/arm64",
		BuildArgs:      map[string]string{"A": "1"},
		LocalContexts:  map[string]string{"workspace": "/home/u/ssebench"},
		LayoutContexts: map[string]buildkit.LayoutImage{"ssebench-agent": {Dir: store.Dir(), Digest: src.Layout.Digest}},
	}
	if diff := cmp.Diff(want, b.got); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	img, err := store.Image(ref)
	if err != nil {
		t.Fatalf("the built image is not in the store: %v", err)
	}
	if got, _ := img.Digest(); got != dig {
		t.Errorf("stored digest %s, BuildKit() returned %s", got, dig)
	}

	// A registry reference goes to buildkitd as an image context.
	if _, err := BuildKit(context.Background(), b, BuildRequest{AgentDir: "a", Home: "h", Tool: ToolSource{Image: "localhost:5000/t:1"}, Store: store, Ref: ref}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"ssebench-agent": "localhost:5000/t:1"}, b.got.ImageContexts); diff != "" || b.got.LayoutContexts != nil {
		t.Errorf("image contexts (-want +got):\n%s", diff)
	}
	if _, err := BuildKit(context.Background(), b, BuildRequest{AgentDir: "a", Home: "h", Tool: src}); err == nil {
		t.Error("BuildKit() without Store/Ref or Push = nil error")
	}
}

// TestHostileBuildKitEnv: an image BuildKit built with a run-only variable
// in its ENV (set through a build argument, say) is not stored.
func TestHostileBuildKitEnv(t *testing.T) {
	hostile.Case(t, "contract: agent ENTRYPOINT and ENV")
	store, toolRef, _ := storeTool(t)
	src, err := ToolFromStore(store, toolRef)
	if err != nil {
		t.Fatal(err)
	}
	b := &fakeBuilder{t: t, env: []string{"PATH=/bin", "SSE_RUNNER_USER=root"}}
	ref := name.MustParseReference("example.invalid/ssebench/agent-x/task:1")
	_, err = BuildKit(context.Background(), b, BuildRequest{AgentDir: "a", Home: "h", Tool: src, Store: store, Ref: ref})
	if !errors.Is(err, ErrBypassesEntrypoint) {
		t.Fatalf("BuildKit() = %v, want ErrBypassesEntrypoint", err)
	}
	if _, err := store.Image(ref); err == nil {
		t.Error("the refused image is in the store")
	}
}
