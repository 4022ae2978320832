package commands_test

import (
	"github.com/42-b3yond-6ug/ssebench/assemble/agentimage"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	ssebench "github.com/42-b3yond-6ug/ssebench"
)

func layerDigests(t *testing.T, img v1.Image) []string {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range ls {
		d, err := l.Digest()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d.String())
	}
	return out
}

// TestAssembleAgentExplain explains the checkout's dummy agent (the plan,
// nothing built), then builds it on a tool image of the store: natively
// (no BuildKit is configured, so any other path fails), with the agent's
// CMD and no layer of its own.
func TestAssembleAgentExplain(t *testing.T) {
	c := newCLI(t)
	copyTree(t, "agents/dummy", filepath.Join(c.home, "agents", "dummy"))
	const tool = "localhost:5000/ssebench/tool/proj-1:1.0.0"
	toolImg := toolImage(t)
	c.storeImage(t, tool, toolImg)

	plan, _ := c.mustRun(t, "assemble", "agent", "--tool", tool, "--agent", "dummy", "--explain",
		"--pull=never", "--registry", "localhost:5000/ssebench")
	if !strings.Contains(plan, "Dockerfile: assembled natively (no instruction needs a container)") {
		t.Errorf("--explain does not say the native path is taken:\n%s", plan)
	}
	for _, want := range []string{"FROM ssebench-agent", "-> the tool image", `CMD ["echo dummy_QAQ"]`, "-> image config"} {
		if !strings.Contains(plan, want) {
			t.Errorf("--explain lacks %q:\n%s", want, plan)
		}
	}
	if strings.Contains(plan, "sha256:") {
		t.Errorf("--explain built an image:\n%s", plan)
	}

	out, _ := c.mustRun(t, "assemble", "agent", "--tool", tool, "--agent", "dummy",
		"--pull=never", "--registry", "localhost:5000/ssebench")
	name := "localhost:5000/ssebench/agent-dummy/proj-1:" + strings.ToLower(ssebench.Version())
	gotName, digest, ok := strings.Cut(strings.TrimSpace(out), "@")
	if !ok || gotName != name || !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("assemble agent printed %q, want %s@sha256:...", out, name)
	}

	agentImg := c.storedImage(t, name)
	if d, _ := agentImg.Digest(); d.String() != digest {
		t.Errorf("the store has %s at %s, the command printed %s", name, d, digest)
	}
	// The dummy adds no layer: its image is the tool image without the
	// answers (the blind layer).
	blind, err := agentimage.Blind(toolImg)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(layerDigests(t, blind), layerDigests(t, agentImg)); diff != "" {
		t.Errorf("the agent image's layers differ from the tool image's and its blind layer (-want +got):\n%s", diff)
	}
	cf, err := agentImg.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"echo dummy_QAQ"}, cf.Config.Cmd); diff != "" {
		t.Errorf("agent image CMD mismatch (-want +got):\n%s", diff)
	}
}
