package commands_test

import (
	"context"
	"crypto/rand"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/faultproxy"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// TestHostileAssembleFaults assembles a tool image from a case image that
// sits behind a fault-injecting proxy in front of a real registry: past
// resets and 5xx the tool image is the one a clean network gives; a
// corrupted manifest fails in one line, tags nothing, and a rerun without
// the fault finishes.
func TestHostileAssembleFaults(t *testing.T) {
	reg := testenv.StartRegistry(t)
	ctx := context.Background()
	blob := make([]byte, 400_000)
	rand.Read(blob)
	img, err := mutate.AppendLayers(caseImage(t), tarLayer(t, folder("data", 0o755), file("data/blob", 0o644, string(blob))))
	if err != nil {
		t.Fatal(err)
	}
	for ref, im := range map[string]v1.Image{reg + "/faults/case/examples/proj-1": img, reg + "/faults/runtime:1": runtimeImage(t)} {
		if _, err := remote.Push(ctx, ref, im); err != nil {
			t.Fatal(err)
		}
	}
	version := strings.TrimSpace(string(mustRead(t, filepath.Join(repoRoot, "VERSION"))))
	assemble := func(c *cli, host string) (string, error) {
		_, stderr, err := c.run(t, "assemble", "tool", "--case", host+"/faults/case/examples/proj-1", "--task", "proj-1",
			"--source", "/src/proj", "--runtime", host+"/faults/runtime:1", "--registry", reg+"/out", "--pull=missing")
		if err != nil {
			return stderr, err
		}
		return stderr, nil
	}
	toolRef := reg + "/out/tool/proj-1:" + version
	clean := newCLI(t)
	if stderr, err := assemble(clean, reg); err != nil {
		t.Fatalf("assemble without faults: %v\n%s", err, stderr)
	}
	want := clean.storedDigest(t, toolRef)

	for _, tc := range []struct {
		name  string
		rule  faultproxy.Rule
		fails string
	}{
		{"reset mid-layer", faultproxy.Rule{Method: "GET", Path: "/blobs/sha256:", Times: 2, Fault: faultproxy.Fault{Kind: faultproxy.Reset, After: 150_000}}, ""},
		{"truncated layer", faultproxy.Rule{Method: "GET", Path: "/blobs/sha256:", Times: 1, Fault: faultproxy.Fault{Kind: faultproxy.Truncate, After: 200_000}}, ""},
		{"5xx on layers", faultproxy.Rule{Method: "GET", Path: "/blobs/sha256:", Times: 2, Fault: faultproxy.Fault{Kind: faultproxy.Status, Code: 503, Body: `{"errors":[{"code":"UNAVAILABLE","message":"later"}]}`}}, ""},
		{"corrupted manifest", faultproxy.Rule{Method: "GET", Path: "/faults/case/examples/proj-1/manifests/", Fault: faultproxy.Fault{Kind: faultproxy.Corrupt, After: 30}}, "damaged"},
		{"corrupted layer", faultproxy.Rule{Method: "GET", Path: "/blobs/sha256:", Fault: faultproxy.Fault{Kind: faultproxy.Corrupt, After: 1000}}, "sha256:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "registry faults")
			p := faultproxy.New(reg)
			defer p.Close()
			p.Add(tc.rule)
			c := newCLI(t)
			stderr, err := assemble(c, p.Host)
			if len(p.Log()) == 0 {
				t.Fatal("no fault fired: the case tests nothing")
			}
			if tc.fails == "" {
				if err != nil {
					t.Fatalf("assemble past %v: %v\n%s", p.Log(), err, stderr)
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), tc.fails) {
					t.Fatalf("assemble = %v, want an error naming %q", err, tc.fails)
				}
				oneLine(t, err)
				if _, ok := c.storedDigestOK(t, toolRef); ok {
					t.Fatal("a failed assembly tagged the tool image")
				}
				verifyStore(t, c.store)
				p.Clear()
				if stderr, err := assemble(c, p.Host); err != nil {
					t.Fatalf("rerun without the fault: %v\n%s", err, stderr)
				}
			}
			if got := c.storedDigest(t, toolRef); got != want {
				t.Errorf("tool image %s, want %s (assembled on a clean network)", got, want)
			}
			verifyStore(t, c.store)
		})
	}
}
