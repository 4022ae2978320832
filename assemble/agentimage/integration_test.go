package agentimage

import (
	"archive/tar"
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// TestIntegrationAptDemo builds the apt-demo agent (a RUN with apt-get) with
// BuildKit on the Debian OS image, which the test first copies into a local
// OCI layout store: the build reads the tool image from that layout, with
// no registry involved.
func TestIntegrationAptDemo(t *testing.T) {
	client := newBuildKit(t)
	osRef := testenv.OSImage(t)
	ctx := context.Background()

	r, err := name.ParseReference(osRef)
	if err != nil {
		t.Fatal(err)
	}
	p, err := v1.ParsePlatform(testPlatform)
	if err != nil {
		t.Fatal(err)
	}
	osImg, err := remote.Image(r, remote.WithContext(ctx), remote.WithPlatform(*p))
	if err != nil {
		t.Fatalf("pulling %s: %v", osRef, err)
	}
	store, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	toolRef := name.MustParseReference("example.invalid/ssebench/tool/apt-demo:1.0.0")
	if err := store.Write(ctx, toolRef, osImg); err != nil {
		t.Fatal(err)
	}
	src, err := ToolFromStore(store, toolRef)
	if err != nil {
		t.Fatal(err)
	}

	root := repoRoot(t)
	dir := filepath.Join(root, "agents", "apt-demo")
	plan, err := LoadPlan(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Native {
		t.Fatal("apt-demo planned natively, want BuildKit")
	}
	ref := name.MustParseReference("example.invalid/ssebench/agent-apt-demo/task:1.0.0")
	dig, err := BuildKit(ctx, client, BuildRequest{AgentDir: dir, Home: root, Tool: src, Platform: testPlatform, Store: store, Ref: ref})
	if err != nil {
		t.Fatalf("BuildKit() = %v", err)
	}
	img, err := store.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := img.Digest(); got != dig {
		t.Errorf("stored image digest = %s, BuildKit() returned %s", got, dig)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"jq", "--version"}, cf.Config.Cmd); diff != "" {
		t.Errorf("CMD (-want +got):\n%s", diff)
	}
	layers := newLayers(t, img, osImg)
	if len(layers) != 1 {
		t.Fatalf("apt-demo added %d layers, want one (the RUN)", len(layers))
	}
	idx, err := oci.IndexLayer(ctx, layers[0])
	if err != nil {
		t.Fatal(err)
	}
	view, err := oci.Merge([]*oci.LayerIndex{idx})
	if err != nil {
		t.Fatal(err)
	}
	n, ok := view.Lookup("usr/bin/jq")
	if !ok || n.Header.Typeflag != tar.TypeReg || n.Header.Mode&0o111 == 0 {
		t.Errorf("the RUN layer has no executable /usr/bin/jq (found %v: %+v)", ok, n.Header)
	}
}
