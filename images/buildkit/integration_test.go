package buildkit

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

// These tests need a buildkitd (scripts/setup.sh); testenv skips them under
// -short or when BUILDKIT_HOST is unset.

// testPlatform is the platform every integration build asks for: the
// daemon's own, so that RUN needs no emulation.
var testPlatform = "linux/" + runtime.GOARCH

// logWriter sends BuildKit's progress to the test log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// newIntegrationClient connects to the test's buildkitd; progress goes to the
// test log and to each of also.
func newIntegrationClient(t *testing.T, also ...io.Writer) *Client {
	t.Helper()
	addr := testenv.RequireBuildKit(t)
	progress := io.MultiWriter(append([]io.Writer{logWriter{t}}, also...)...)
	c, err := New(context.Background(), WithAddress(addr), WithProgress(progress), WithProgressMode(ProgressPlain), WithTempDir(t.TempDir()))
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// build runs req and returns the image from the result's layout, checked
// with validate.Image.
func build(t *testing.T, c *Client, req Request) v1.Image {
	t.Helper()
	res, err := c.Build(context.Background(), req)
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	t.Cleanup(func() { res.Close() })
	img, err := res.Image()
	if err != nil {
		t.Fatalf("Image() = %v", err)
	}
	if err := validate.Image(img); err != nil {
		t.Fatalf("validate.Image() = %v", err)
	}
	got, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got != res.Digest {
		t.Errorf("image digest = %s, want Result.Digest %s", got, res.Digest)
	}
	return img
}

// files returns the regular files of img's merged filesystem, path to
// content, for paths under one of the given prefixes.
func files(t *testing.T, img v1.Image, prefixes ...string) map[string]string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("reading image filesystem: %v", err)
		}
		p := "/" + strings.TrimPrefix(hdr.Name, "/")
		if hdr.Typeflag != tar.TypeReg || !hasPrefix(p, prefixes) {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = string(b)
	}
}

func hasPrefix(p string, prefixes []string) bool {
	for _, pre := range prefixes {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	return false
}

func TestIntegrationScratchCopy(t *testing.T) {
	c := newIntegrationClient(t)
	dir := contextDir(t, "FROM scratch\nCOPY a.txt /\n")
	writeFile(t, dir, "a.txt", "hello from a\n")

	img := build(t, c, Request{ContextDir: dir, Platform: testPlatform})

	if diff := cmp.Diff(map[string]string{"/a.txt": "hello from a\n"}, files(t, img, "/")); diff != "" {
		t.Errorf("image files (-want +got):\n%s", diff)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Platform().String(); got != testPlatform {
		t.Errorf("image platform = %s, want %s", got, testPlatform)
	}
	mt, err := img.MediaType()
	if err != nil {
		t.Fatal(err)
	}
	if mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type = %s, want %s", mt, types.OCIManifestSchema1)
	}
}

// TestIntegrationContextsOfTwoFolders: two task folders hold a file of the
// same name, size and modification time (git archive gives every file one
// time) with other content. Each image must get its own folder's file:
// BuildKit keeps the last copy of a context and sends only the files whose
// size or time changed, so without a shared key per folder the second
// build got the first folder's script.
func TestIntegrationContextsOfTwoFolders(t *testing.T) {
	c := newIntegrationClient(t)
	when := time.Unix(1700000000, 0)
	var dirs []string
	for _, content := range []string{"echo task one\n", "echo task two\n"} {
		dir := contextDir(t, "FROM scratch\nCOPY build.sh /\n")
		writeFile(t, dir, "build.sh", content)
		for _, f := range []string{"Dockerfile", "build.sh"} {
			if err := os.Chtimes(filepath.Join(dir, f), when, when); err != nil {
				t.Fatal(err)
			}
		}
		dirs = append(dirs, dir)
	}
	for i, want := range []string{"echo task one\n", "echo task two\n", "echo task one\n"} {
		img := build(t, c, Request{ContextDir: dirs[i%2], Platform: testPlatform})
		if got := files(t, img, "/")["/build.sh"]; got != want {
			t.Errorf("build %d of %s: /build.sh = %q, want %q", i+1, dirs[i%2], got, want)
		}
	}
}

func TestIntegrationRunWithArgAndLabel(t *testing.T) {
	var progress bytes.Buffer
	c := newIntegrationClient(t, &progress)
	osImage := testenv.OSImage(t)
	dir := contextDir(t, `ARG OS_IMAGE=scratch
FROM ${OS_IMAGE}
ARG GREETING
RUN mkdir -p /out && echo "$GREETING" > /out/greeting
`)
	img := build(t, c, Request{
		ContextDir: dir,
		Platform:   testPlatform,
		BuildArgs:  map[string]string{"OS_IMAGE": osImage, "GREETING": "hello ssebench"},
		Labels:     map[string]string{"ssebench.test": "run"},
		// Without it the RUN would be cached from an earlier run of
		// this test and not run at all.
		NoCache: true,
	})

	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	runLayer := layerFiles(t, layers[len(layers)-1])
	if diff := cmp.Diff(map[string]string{"/out/greeting": "hello ssebench\n"}, runLayer); diff != "" {
		t.Errorf("files of the RUN layer (-want +got):\n%s", diff)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Labels["ssebench.test"]; got != "run" {
		t.Errorf("label ssebench.test = %q, want %q", got, "run")
	}
	// The FROM of an image already pulled shows CACHED whatever NoCache
	// says; the RUN step must have run.
	step := ""
	for _, line := range strings.Split(progress.String(), "\n") {
		if f := strings.Fields(line); len(f) > 2 && strings.HasPrefix(f[0], "#") && strings.Contains(line, "RUN mkdir") {
			step = f[0]
		}
	}
	if step == "" {
		t.Fatalf("the progress shows no RUN step:\n%s", progress.String())
	}
	if strings.Contains(progress.String(), step+" CACHED") {
		t.Errorf("a build with NoCache reused the RUN step (%s):\n%s", step, progress.String())
	}
}

func TestIntegrationImageContext(t *testing.T) {
	c := newIntegrationClient(t)
	osImage := testenv.OSImage(t)
	dir := contextDir(t, "FROM os\nCOPY b.txt /ssebench/\n")
	writeFile(t, dir, "b.txt", "b\n")

	img := build(t, c, Request{
		ContextDir:    dir,
		Platform:      testPlatform,
		ImageContexts: map[string]string{"os": osImage},
	})

	r, err := name.ParseReference(osImage)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := v1.ParsePlatform(testPlatform)
	base, err := remote.Image(r, remote.WithPlatform(*p))
	if err != nil {
		t.Fatal(err)
	}
	want := diffIDs(t, base)
	got := diffIDs(t, img)
	if len(got) != len(want)+1 || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("image layers = %v, want the OS image's %v and one more", got, want)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"/ssebench/b.txt": "b\n"}, layerFiles(t, layers[len(layers)-1])); diff != "" {
		t.Errorf("files of the COPY layer (-want +got):\n%s", diff)
	}
}

func diffIDs(t *testing.T, img v1.Image) []v1.Hash {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return cf.RootFS.DiffIDs
}

// layerFiles returns the regular files of one layer, path to content.
func layerFiles(t *testing.T, l v1.Layer) map[string]string {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	return files(t, img, "/")
}

// agentLayout writes an image with one file, /agent.txt, into a new OCI
// layout, the way the tool image reaches an agent build.
func agentLayout(t *testing.T) (string, v1.Hash, v1.Layer) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	content := "agent\n"
	if err := tw.WriteHeader(&tar.Header{Name: "agent.txt", Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte(content))
	tw.Close()
	tarBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	p, err := v1.ParsePlatform(testPlatform)
	if err != nil {
		t.Fatal(err)
	}
	cf.OS, cf.Architecture = p.OS, p.Architecture
	cf.Config.Env = []string{"SSEBENCH_AGENT=1"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return dir, d, layer
}

func TestIntegrationLayoutContext(t *testing.T) {
	c := newIntegrationClient(t)
	layoutDir, dgst, agentLayer := agentLayout(t)
	before := listTree(t, layoutDir)
	dir := contextDir(t, "FROM ssebench-agent\nCOPY c.txt /\n")
	writeFile(t, dir, "c.txt", "c\n")

	img := build(t, c, Request{
		ContextDir:     dir,
		Platform:       testPlatform,
		LayoutContexts: map[string]LayoutImage{"ssebench-agent": {Dir: layoutDir, Digest: dgst}},
	})

	want := map[string]string{"/agent.txt": "agent\n", "/c.txt": "c\n"}
	if diff := cmp.Diff(want, files(t, img, "/")); diff != "" {
		t.Errorf("image files (-want +got):\n%s", diff)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	wantDiffID, _ := agentLayer.DiffID()
	if len(layers) != 2 {
		t.Fatalf("image has %d layers, want the agent layer and one for COPY", len(layers))
	}
	if got, _ := layers[0].DiffID(); got != wantDiffID {
		t.Errorf("first layer diffID = %s, want the agent layer's %s", got, wantDiffID)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cf.Config.Env, "SSEBENCH_AGENT=1") {
		t.Errorf("image env = %q, want the named context's SSEBENCH_AGENT=1", cf.Config.Env)
	}
	if diff := cmp.Diff(before, listTree(t, layoutDir)); diff != "" {
		t.Errorf("the build changed the context's layout (-before +after):\n%s", diff)
	}
}

func TestIntegrationFailureIsOneLine(t *testing.T) {
	c := newIntegrationClient(t)
	for _, tc := range []struct {
		name       string
		dockerfile string
		osImage    bool
		wantInMsg  string
	}{
		{name: "missing file", dockerfile: "FROM scratch\nCOPY missing.txt /\n", wantInMsg: "missing.txt"},
		{name: "failing RUN", dockerfile: "ARG OS_IMAGE=scratch\nFROM ${OS_IMAGE}\nRUN echo doomed && exit 3\n", osImage: true, wantInMsg: "exit code: 3"},
		{name: "parse error", dockerfile: "FROM scratch\nFOO bar\n", wantInMsg: "FOO"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := contextDir(t, tc.dockerfile)
			req := Request{ContextDir: dir, Platform: testPlatform}
			if tc.osImage {
				req.BuildArgs = map[string]string{"OS_IMAGE": testenv.OSImage(t)}
			}

			_, err := c.Build(context.Background(), req)
			if err == nil {
				t.Fatal("Build() = nil error, want one")
			}
			t.Logf("Build() error: %v", err)
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("Build() error spans lines: %q", msg)
			}
			prefix := `building "` + filepath.Join(dir, "Dockerfile") + `": `
			if !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tc.wantInMsg) {
				t.Errorf("Build() error = %q, want it to start with %q and contain %q", msg, prefix, tc.wantInMsg)
			}
			var be *BuildError
			if !errors.As(err, &be) || be.Err == nil {
				t.Errorf("Build() error = %#v, want a *BuildError holding the solve error", err)
			}
		})
	}
}

func TestIntegrationPush(t *testing.T) {
	c := newIntegrationClient(t)
	reg := testenv.RequireRegistry(t)
	dir := contextDir(t, "FROM scratch\nCOPY a.txt /\n")
	writeFile(t, dir, "a.txt", "pushed\n")
	ref := reg + "/ssebench/buildkit-test/push:" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))

	res, err := c.Build(context.Background(), Request{ContextDir: dir, Platform: testPlatform, Push: ref})
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	if res.LayoutDir != "" || res.Pushed != ref {
		t.Errorf("Build() = %+v, want a push to %s and no layout", res, ref)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(r)
	if err != nil {
		t.Fatalf("HEAD %s: %v", ref, err)
	}
	if desc.Digest != res.Digest {
		t.Errorf("registry has %s at %s, want Result.Digest %s", desc.Digest, ref, res.Digest)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"/a.txt": "pushed\n"}, files(t, img, "/")); diff != "" {
		t.Errorf("pushed image files (-want +got):\n%s", diff)
	}
}

// listTree lists every path under dir with its size, to see whether
// anything was written there.
func listTree(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out[rel+"/"] = 0
		} else {
			out[rel] = fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestIntegrationPushInsecureRegistry pushes to a plain-HTTP registry under
// a name that is not loopback (registry.test, a second name of 127.0.0.1):
// BuildKit reaches it only when ssebench's plain-HTTP policy (the hosts of
// --insecure-registry) says so.
func TestIntegrationPushInsecureRegistry(t *testing.T) {
	reg := testenv.HostAlias(t, "registry.test")
	host, _, _ := net.SplitHostPort(reg)
	dir := contextDir(t, "FROM scratch\nCOPY a.txt /\n")
	writeFile(t, dir, "a.txt", "insecure\n")
	ref := reg + "/ssebench/buildkit-test/insecure:" + fmt.Sprint(time.Now().UnixNano())

	plain := newIntegrationClient(t)
	if _, err := plain.Build(context.Background(), Request{ContextDir: dir, Platform: testPlatform, Push: ref}); err == nil {
		t.Fatalf("pushing to %s without the policy succeeded: the test cannot tell", ref)
	}
	addr := testenv.RequireBuildKit(t)
	c, err := New(context.Background(), WithAddress(addr), WithProgress(logWriter{t}), WithProgressMode(ProgressPlain), WithTempDir(t.TempDir()),
		WithPlainHTTP(func(h string) bool { return h == reg || h == host }))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Build(context.Background(), Request{ContextDir: dir, Platform: testPlatform, Push: ref})
	if err != nil {
		t.Fatalf("pushing to %s with it marked plain HTTP: %v", ref, err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(r)
	if err != nil || desc.Digest != res.Digest {
		t.Errorf("registry has %v (%v) at %s, want %s", desc, err, ref, res.Digest)
	}
}
