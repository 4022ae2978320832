package agentimage

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/42-b3yond-6ug/ssebench/assemble"
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

// BenchmarkGraft measures what building blind and grafting costs over a
// native assembly straight on the tool image, for native agents of the
// examples on the Debian OS image (with the answers layer): blind image,
// workspace copy, assembly on the blind image, policy check of every
// entry, graft, manifest digest. The tool image's layers are indexed once
// (the facts cache), as in a run. It logs both times and their ratio.
func BenchmarkGraft(b *testing.B) {
	tool := osTool(b)
	facts, err := assemble.NewFacts(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	root := repoRoot(b)
	ctx := context.Background()
	for _, a := range []string{"files-demo", "patcher", "reference"} {
		b.Run(a, func(b *testing.B) {
			dir := filepath.Join(root, "agents", a)
			plan, err := LoadPlan(dir, nil)
			if err != nil {
				b.Fatal(err)
			}
			native := func() {
				img, err := Assemble(ctx, tool, plan, dir, root, WithTempDir(b.TempDir()), WithFacts(facts))
				if err != nil {
					b.Fatal(err)
				}
				if _, err := img.Digest(); err != nil {
					b.Fatal(err)
				}
				img.Close()
			}
			grafted := func() {
				blind, err := Blind(tool)
				if err != nil {
					b.Fatal(err)
				}
				tmp := b.TempDir()
				ws, err := Workspace(root, dir, tmp)
				if err != nil {
					b.Fatal(err)
				}
				// One view of the blind image for the assembly and the
				// policy, as the pipeline does.
				bl, err := blind.Layers()
				if err != nil {
					b.Fatal(err)
				}
				view, err := facts.View(ctx, bl)
				if err != nil {
					b.Fatal(err)
				}
				img, err := Assemble(ctx, blind, plan, dir, ws, WithTempDir(tmp), WithFacts(facts), WithLowerView(view))
				if err != nil {
					b.Fatal(err)
				}
				pol, err := NewPolicy(tool, WithPolicyView(view))
				if err != nil {
					b.Fatal(err)
				}
				out, err := Graft(ctx, tool, blind, img, pol)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := out.Digest(); err != nil {
					b.Fatal(err)
				}
				img.Close()
			}
			native() // index the tool image's layers once
			grafted()
			var tn, tg time.Duration
			for b.Loop() {
				t := time.Now()
				native()
				tn += time.Since(t)
				t = time.Now()
				grafted()
				tg += time.Since(t)
			}
			b.ReportMetric(float64(tg)/float64(tn), "graft/native")
			b.Logf("%s: native %v, blind and grafted %v per build: ratio %.2f", a, tn/time.Duration(b.N), tg/time.Duration(b.N), float64(tg)/float64(tn))
		})
	}
}
