package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
)

// TestAgentBuildKitMemo: an agent image that needs BuildKit is built once
// for the same inputs; the next request takes it from the store (the same
// digest, no export and graft again), and a change of the folder builds it
// again.
func TestAgentBuildKitMemo(t *testing.T) {
	bkAddr := testenv.RequireBuildKit(t)
	reg := testenv.RequireRegistry(t)
	osImage := testenv.OSImage(t)
	ctx := context.Background()
	repo := moduleDir(t)
	home := exampleHome(t, repo)
	dir := filepath.Join(home, "agents", "memo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(df string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte("name: memo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// RUN needs a container: BuildKit builds it.
	write("FROM ssebench-agent\nRUN echo one > /opt/memo\n")
	e := newEnv(t, home, home, testenv.Unique(reg+"/memo-e2e"), bkAddr)
	buildGoBase(t, ctx, e, repo, osImage)
	buildRuntime(t, ctx, e, repo, v1.Platform{OS: "linux", Architecture: runtime.GOARCH})
	ti, err := e.BuildTask(ctx, pipeline.RunRequest{Task: e2eTask})
	if err != nil {
		t.Fatal(err)
	}
	agent := func() *pipeline.Built {
		t.Helper()
		b, err := e.Agent(ctx, pipeline.AgentRequest{Tool: ti.Tool.Name, Folder: "memo", Task: e2eTask})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	first := agent()
	if first.How != "built with BuildKit" {
		t.Fatalf("first build: %s, want built with BuildKit", first.How)
	}
	second := agent()
	if second.Digest != first.Digest || !strings.Contains(second.How, "earlier build") {
		t.Errorf("second build of the same inputs: %s %s, want the first's image %s taken", second.How, second.Digest, first.Digest)
	}
	write("FROM ssebench-agent\nRUN echo two > /opt/memo\n")
	third := agent()
	if third.How != "built with BuildKit" || third.Digest == first.Digest {
		t.Errorf("after a change of the folder: %s %s, want a new BuildKit build", third.How, third.Digest)
	}
}
