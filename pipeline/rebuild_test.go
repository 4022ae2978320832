package pipeline_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/42-b3yond-6ug/ssebench/images/casebuild"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/registry/trust"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// TestToolRebuildOnNewMachine is the runtime bump on CI: the tool image was
// pushed with runtime A; a machine with an empty store and an empty facts
// cache rebuilds it with runtime B (A plus one layer) and pushes it. It must
// read no case layer, index only the runtime's layers, upload only the new
// layer and the config, and make the image a full assembly makes.
func TestToolRebuildOnNewMachine(t *testing.T) {
	bkAddr := testenv.RequireBuildKit(t)
	reg := testenv.RequireRegistry(t)
	osImage := testenv.OSImage(t)
	ctx := context.Background()
	repo := moduleDir(t)
	home := exampleHome(t, repo)
	// A repository prefix of our own: nothing this test pushes is in the
	// tool repository before it starts.
	nonce := fmt.Sprintf("%x", time.Now().UnixNano())
	prefix := reg + "/ssebench-rebuild-" + nonce
	host := v1.Platform{OS: "linux", Architecture: runtime.GOARCH}

	// Machine 1 builds the case image, pushes it, and pushes the tool
	// image made with runtime A. Its case layers are read from its store,
	// so only the case repository named to the push says where they are.
	m1 := newEnv(t, home, t.TempDir(), prefix, bkAddr)
	// CI signs what it pushes (tool images, layer facts); machines that
	// hold its public key believe them, others recompute.
	ciKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	m1.Trust = &trust.Policy{Signer: ciKey}
	buildGoBase(t, ctx, m1, repo, osImage)
	caseRef := buildCase(t, ctx, m1)
	caseImg, err := m1.Store.Image(mustRef(t, caseRef))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Push(ctx, caseRef, caseImg); err != nil {
		t.Fatal(err)
	}
	tk, err := task.Load(filepath.Join(home, "datasets", "examples", e2eTask))
	if err != nil {
		t.Fatal(err)
	}
	req := pipeline.ToolRequest{Case: caseRef, Task: e2eTask, SourceDir: tk.Config.Source, Push: true}
	idxA := buildRuntime(t, ctx, m1, repo, host)
	first, err := m1.Tool(ctx, req)
	if err != nil {
		t.Fatalf("assembling and pushing the tool image with runtime A: %v", err)
	}
	caseLayers := layerDigests(t, ctx, caseRef)
	if first.Push == nil {
		t.Fatal("Tool with Push returned no push report")
	}
	for _, ev := range first.Push.Blobs {
		if caseLayers[ev.Digest] && ev.Action != remote.BlobMounted {
			t.Errorf("first push: case layer %s was %s, want mounted from the case repository", ev.Digest, ev.Action)
		}
	}
	t.Logf("first push: %s", first.Push)

	// The agent image pushed next mounts the case layers (and the tool's)
	// from the repositories the store knows hold them: it uploads only
	// what is its own.
	agentDir := filepath.Join(home, "agents", "mounts")
	if err := os.MkdirAll(agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, body := range map[string]string{"agent.yaml": "name: mounts\n", "Dockerfile": "FROM ssebench-agent\nCMD [\"true\"]\n"} {
		if err := os.WriteFile(filepath.Join(agentDir, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ag, err := m1.Agent(ctx, pipeline.AgentRequest{Tool: m1.Names.Tool(e2eTask), Folder: "mounts", Task: e2eTask, Push: true})
	if err != nil {
		t.Fatalf("pushing the agent image: %v", err)
	}
	if ag.Push == nil {
		t.Fatal("Agent with Push returned no push report")
	}
	for _, ev := range ag.Push.Blobs {
		if caseLayers[ev.Digest] && ev.Action != remote.BlobMounted {
			t.Errorf("agent push: case layer %s was %s, want mounted", ev.Digest, ev.Action)
		}
	}
	t.Logf("agent push: %s", ag.Push)

	// Runtime B: runtime A plus one layer.
	imgA, err := runtimebin.Platform(m1.Names.Runtime(), idxA, host)
	if err != nil {
		t.Fatal(err)
	}
	bump := bumpLayer(t, imgA, nonce)
	imgB, err := mutate.Append(imgA, mutate.Addendum{Layer: bump, History: v1.History{CreatedBy: "runtime bump"}})
	if err != nil {
		t.Fatal(err)
	}
	layersB, err := imgB.Layers()
	if err != nil {
		t.Fatal(err)
	}

	// Machine 2, as on CI: an empty store but for runtime B, which it has
	// just built, and an empty facts cache.
	m2 := newEnv(t, home, t.TempDir(), prefix, bkAddr)
	m2.Trust = &trust.Policy{Key: &ciKey.PublicKey}
	if err := m2.Store.Write(ctx, mustRef(t, m2.Names.Runtime()), imgB); err != nil {
		t.Fatal(err)
	}
	counter := &blobGets{}
	m2.RegistryOptions = []remote.Option{remote.WithTransport(counter)}
	// No other flag than --push: the store records the tool image with
	// the case layers it never needed, without their bytes.
	second, err := m2.Tool(ctx, req)
	if err != nil {
		t.Fatalf("rebuilding the tool image with runtime B: %v", err)
	}
	if !strings.Contains(second.How, "reused") {
		t.Errorf("rebuild: %q, want the system and source layers reused", second.How)
	}
	// Runtime A's layers were analysed on machine 1, which published their
	// facts: only the new layer of runtime B is read here.
	if got, want := m2.Facts.Indexed(), 1; got != want {
		t.Errorf("rebuild indexed %d layers, want %d: runtime B's new layer and no case layer", got, want)
	}
	if got, want := m2.Facts.Indexed()+m2.Facts.Fetched(), len(layersB); got != want {
		t.Errorf("rebuild indexed or fetched the facts of %d layers, want %d (runtime B's)", got, want)
	}
	if !second.Reused {
		t.Error("Built.Reused is false")
	}
	// The counter sees the registry's traffic: the case config was read.
	caseCfg, err := remoteImage(t, ctx, caseRef).ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if counter.count(caseCfg) == 0 {
		t.Errorf("the rebuild fetched no case config %s: the request counter sees nothing", caseCfg)
	}
	for d := range caseLayers {
		if n := counter.count(d); n > 0 {
			t.Errorf("rebuild fetched case layer %s %d times, want 0", d, n)
		}
	}

	// The store names the tool image and verifies, though it holds no
	// byte of the case layers: a later local use fetches them.
	if d, err := m2.Store.Descriptor(mustRef(t, m2.Names.Tool(e2eTask))); err != nil || d.Digest != second.Digest {
		t.Errorf("the store has %v (%v) for the tool image, want %s", d.Digest, err, second.Digest)
	}
	for d := range caseLayers {
		if m2.Store.HasBlob(d) {
			t.Errorf("case layer %s is in machine 2's store: it was read", d)
		}
	}
	if probs, err := m2.Store.Verify(ctx); err != nil || len(probs) > 0 {
		t.Errorf("store verify after the rebuild: %v %v", probs, err)
	}

	// What the push moved: the new runtime layer and the config, nothing
	// else; everything else was in the tool repository already.
	pushed := remoteImage(t, ctx, m2.Names.Tool(e2eTask))
	if d, err := pushed.Digest(); err != nil || d != second.Digest {
		t.Fatalf("the registry has %s (%v), want %s", d, err, second.Digest)
	}
	m, err := pushed.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	bumpDigest, _ := bump.Digest()
	bumpSize, _ := bump.Size()
	rep := second.Push
	if rep == nil {
		t.Fatal("Tool with Push returned no push report")
	}
	t.Logf("rebuild push: %s", rep)
	if got, want := rep.Uploaded, bumpSize+m.Config.Size; got != want {
		t.Errorf("rebuild uploaded %d bytes, want %d (the new layer, %d, and the config, %d): %s", got, want, bumpSize, m.Config.Size, rep)
	}
	if rep.Manifests != 1 {
		t.Errorf("rebuild wrote %d manifests, want 1", rep.Manifests)
	}
	for _, ev := range rep.Blobs {
		want := remote.BlobExists
		if ev.Digest == bumpDigest || ev.Digest == m.Config.Digest {
			want = remote.BlobPushed
		}
		if ev.Action != want {
			t.Errorf("rebuild push: blob %s (%d bytes) was %s, want %s", ev.Digest, ev.Size, ev.Action, want)
		}
	}
	unique := map[v1.Hash]bool{m.Config.Digest: true}
	for _, l := range m.Layers {
		unique[l.Digest] = true
	}
	if got, want := len(rep.Blobs), len(unique); got != want {
		t.Errorf("rebuild push settled %d blobs, want %d (every unique layer and the config)", got, want)
	}

	// Machine 3 assembles from scratch with runtime B, under another
	// name so that there is no earlier image to reuse: the same image.
	m3 := newEnv(t, home, t.TempDir(), prefix+"/full", bkAddr)
	m3.RuntimeRef = m1.Names.Runtime()
	if err := m3.Store.Write(ctx, mustRef(t, m3.RuntimeRef), imgB); err != nil {
		t.Fatal(err)
	}
	full, err := m3.Tool(ctx, pipeline.ToolRequest{Case: caseRef, Task: e2eTask, SourceDir: tk.Config.Source})
	if err != nil {
		t.Fatalf("assembling the tool image from scratch with runtime B: %v", err)
	}
	if full.How != "assembled" {
		t.Errorf("machine 3: %q, want a full assembly", full.How)
	}
	if full.Digest != second.Digest {
		t.Errorf("full assembly with runtime B made %s, the rebuild %s: want the same image", full.Digest, second.Digest)
	}

	// Machine 4 holds another key: the registry's tool image and facts
	// are not believed (anyone who can push the tag could have made
	// them), so it assembles from the case image, and gets the same
	// image all the same.
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	m4 := newEnv(t, home, t.TempDir(), prefix, bkAddr)
	m4.Trust = &trust.Policy{Key: &other.PublicKey}
	if err := m4.Store.Write(ctx, mustRef(t, m4.Names.Runtime()), imgB); err != nil {
		t.Fatal(err)
	}
	untrusted, err := m4.Tool(ctx, pipeline.ToolRequest{Case: caseRef, Task: e2eTask, SourceDir: tk.Config.Source})
	if err != nil {
		t.Fatalf("assembling with an untrusted registry: %v", err)
	}
	if untrusted.Reused || m4.Facts.Fetched() != 0 {
		t.Errorf("machine 4 reused the registry's layers (%v) or fetched %d layers' facts: it trusts neither", untrusted.Reused, m4.Facts.Fetched())
	}
	if untrusted.Digest != second.Digest {
		t.Errorf("machine 4 made %s, want %s", untrusted.Digest, second.Digest)
	}
}

// buildCase builds the case image of e2eTask into e's store and returns
// its name.
func buildCase(t *testing.T, ctx context.Context, e *pipeline.Env) string {
	t.Helper()
	bk, err := e.BuildKit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer bk.Close()
	b := &casebuild.Builder{BuildKit: bk, Store: e.Store, Names: e.Names, Log: testWriter{t}}
	out, err := b.BuildCases(ctx, filepath.Join(e.Home, "datasets", "examples"),
		casebuild.CaseOptions{Tasks: []string{e2eTask}, HostArch: runtime.GOARCH})
	if err != nil {
		t.Fatalf("building the case image: %v", err)
	}
	return out[0].Image
}

// remoteImage reads ref's image from its registry, not any store.
func remoteImage(t *testing.T, ctx context.Context, ref string) v1.Image {
	t.Helper()
	r, err := remote.NewResolver(remote.WithPullPolicy(remote.PullAlways))
	if err != nil {
		t.Fatal(err)
	}
	img, err := r.Image(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// layerDigests returns the set of ref's layer digests.
func layerDigests(t *testing.T, ctx context.Context, ref string) map[v1.Hash]bool {
	t.Helper()
	m, err := remoteImage(t, ctx, ref).Manifest()
	if err != nil {
		t.Fatal(err)
	}
	out := map[v1.Hash]bool{}
	for _, l := range m.Layers {
		out[l.Digest] = true
	}
	return out
}

// bumpLayer returns a layer adding one root-owned file, whose content is
// nonce, with the media type of img's layers.
func bumpLayer(t *testing.T, img v1.Image, nonce string) v1.Layer {
	t.Helper()
	ls, err := img.Layers()
	if err != nil || len(ls) == 0 {
		t.Fatalf("runtime image has no layers (%v)", err)
	}
	mt, err := ls[len(ls)-1].MediaType()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	body := []byte("runtime bump " + nonce + "\n")
	hdr := &tar.Header{Name: "usr/local/share/ssebench-bump", Mode: 0o644, Size: int64(len(body)),
		Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		t.Fatal(err)
	}
	tw.Write(body)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	// Not static.NewLayer: its diff_id is the compressed blob's digest,
	// which the tool assembly refuses as damaged metadata.
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithMediaType(mt))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// blobGets is an http.RoundTripper that counts the GET requests for each
// blob.
type blobGets struct {
	mu   sync.Mutex
	gets map[string]int
}

var _ http.RoundTripper = (*blobGets)(nil)

var blobPath = regexp.MustCompile(`/blobs/(sha256:[0-9a-f]{64})$`)

// RoundTrip implements http.RoundTripper.
func (c *blobGets) RoundTrip(req *http.Request) (*http.Response, error) {
	if m := blobPath.FindStringSubmatch(req.URL.Path); m != nil && req.Method == http.MethodGet {
		c.mu.Lock()
		if c.gets == nil {
			c.gets = map[string]int{}
		}
		c.gets[m[1]]++
		c.mu.Unlock()
	}
	return ggremote.DefaultTransport.RoundTrip(req)
}

func (c *blobGets) count(d v1.Hash) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets[d.String()]
}
