package agentimage

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

// BenchmarkDummyNative measures the native assembly of the dummy agent
// (FROM ssebench-agent, CMD): a config change, no layer, computed down to
// the manifest digest.
func BenchmarkDummyNative(b *testing.B) {
	tool := toolImage(b)
	dir := filepath.Join("..", "..", "agents", "dummy")
	p, err := LoadPlan(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		img, err := Assemble(ctx, tool, p, dir, "")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := img.Digest(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDummyBuildKit builds the same Dockerfile with BuildKit, into a
// local store, for comparison. It skips without a buildkitd.
func BenchmarkDummyBuildKit(b *testing.B) {
	client := newBuildKit(b)
	store, toolRef, _ := storeTool(b)
	src, err := ToolFromStore(store, toolRef)
	if err != nil {
		b.Fatal(err)
	}
	root := repoRoot(b)
	ref := name.MustParseReference("example.invalid/ssebench/agent-dummy/bench:1")
	ctx := context.Background()
	start := time.Now()
	n := 0
	for b.Loop() {
		if _, err := BuildKit(ctx, client, BuildRequest{AgentDir: filepath.Join(root, "agents", "dummy"), Home: root, Tool: src, Platform: testPlatform, Store: store, Ref: ref}); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.Logf("BuildKit built the dummy agent in %v per build (%d builds)", time.Since(start)/time.Duration(n), n)
}
