package commands_test

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// repoRoot is the checkout this package lives in: VERSION, datasets/ and
// agents/ come from there. It is absolute because the tests change
// directory.
var repoRoot = testenv.ModuleRoot()

// cli is one hermetic ssebench environment: a home (datasets/, agents/), a
// store, a cache and a working directory, all under a temporary folder, and
// none of the caller's SSEBench settings.
type cli struct {
	root, home, store, wd string
}

// newCLI sets the environment of the test to a fresh temporary world and
// changes into its working directory (so that no .env of the caller is
// read).
func newCLI(t *testing.T) *cli {
	t.Helper()
	root := t.TempDir()
	c := &cli{
		root:  root,
		home:  filepath.Join(root, "home"),
		store: filepath.Join(root, "store"),
		wd:    filepath.Join(root, "wd"),
	}
	for _, d := range []string{c.home, c.wd, filepath.Join(root, "user")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", filepath.Join(root, "user"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(root, "user", "data"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(root, "user", "cache"))
	t.Setenv("SSEBENCH_STORE", c.store)
	t.Setenv("SSEBENCH_CACHE", filepath.Join(root, "cache"))
	// The images runs leave in containerd (--keep-images keeps them under
	// a budget by default) go to a namespace of the test's own, removed
	// with everything in it when the test ends.
	if addr := os.Getenv("CONTAINERD_ADDRESS"); addr != "" {
		if _, err := os.Stat(addr); err == nil {
			t.Setenv(runner.NamespaceEnv, testenv.ContainerdNamespace(t, addr, "ssebench-cli"))
		}
	}
	// Empty means unset for every one of these (SPEC.md section 1).
	for _, k := range []string{
		"SSEBENCH_REGISTRY", "SSEBENCH_HOME", "SSEBENCH_RUNTIME_IMAGE", "SSEBENCH_PREBUILT",
		"SSEBENCH_OS_IMAGE", "SOURCE_DATE_EPOCH", "BUILDKIT_HOST", "CONTAINERD_ADDRESS",
		"SSE_MODEL_NAME", "SSE_API_KEY", "SSE_BASE_URL",
	} {
		t.Setenv(k, "")
	}
	t.Chdir(c.wd)
	return c
}

// run runs ssebench with args and --home set to the test's home (unless
// args set it), and returns what it printed.
func (c *cli) run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	for _, a := range args {
		if a == "--home" || strings.HasPrefix(a, "--home=") {
			return runRoot(t, args...)
		}
	}
	return runRoot(t, append(args, "--home", c.home)...)
}

// runRoot runs the real root command with args as they are.
func runRoot(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := commands.New()
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	err = cmd.ExecuteContext(t.Context())
	return out.String(), errb.String(), err
}

// mustRun runs ssebench and fails the test on an error.
func (c *cli) mustRun(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	stdout, stderr, err := c.run(t, args...)
	if err != nil {
		t.Fatalf("ssebench %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout, stderr
}

// writeFiles writes files (path relative to dir → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// copyTree copies the checkout's folder src (relative to the repository
// root) to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(repoRoot, src))); err != nil {
		t.Fatalf("copying %s: %v", src, err)
	}
}

// entry is one file of a test layer.
type entry struct {
	name     string
	typ      byte
	mode     int64
	uid, gid int
	body     string
}

func file(name string, mode int64, body string) entry {
	return entry{name: name, typ: tar.TypeReg, mode: mode, body: body}
}

func folder(name string, mode int64) entry { return entry{name: name, typ: tar.TypeDir, mode: mode} }

// tarLayer is a gzip layer holding entries in the order given.
func tarLayer(t *testing.T, entries ...entry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Typeflag: e.typ, Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid,
			ModTime: time.Unix(1700000000, 0), Format: tar.FormatPAX}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// hostPlatform sets img's platform to linux/<host arch>, the platform the
// commands pick by default.
func hostPlatform(t *testing.T, img v1.Image, cfg v1.Config) v1.Image {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = cfg
	cf.Created = v1.Time{Time: time.Unix(1750000000, 0).UTC()}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// caseImage is a small case image: accounts, a project at /src/proj with a
// stray .git, and the task files. It breaks the tool image contract.
func caseImage(t *testing.T) v1.Image {
	t.Helper()
	l := tarLayer(t,
		folder("etc", 0o755),
		file("etc/passwd", 0o644, "root:x:0:0:root:/root:/bin/bash\nubuntu:x:1000:1000::/home/ubuntu:/bin/bash\n"),
		file("etc/group", 0o644, "root:x:0:\nubuntu:x:1000:\n"),
		folder("tmp", 0o1777),
		folder("usr", 0o755), folder("usr/bin", 0o755),
		file("usr/bin/tool", 0o777, "#!/bin/sh\n"),
		folder("src", 0o755), folder("src/proj", 0o755),
		file("src/proj/main.go", 0o644, "package main\n\nfunc main() {}\n"),
		folder("src/proj/.git", 0o755), file("src/proj/.git/HEAD", 0o644, "ref: refs/heads/main\n"),
		folder("ssebench", 0o755), file("ssebench/config.yaml", 0o644, "id: proj-1\n"),
	)
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	return hostPlatform(t, img, v1.Config{WorkingDir: "/src/proj", Cmd: []string{"bash"}, Env: []string{"PATH=/usr/bin"}})
}

// runtimeImage is a stand-in runtime image: the daemon and the entrypoint.
func runtimeImage(t *testing.T) v1.Image {
	t.Helper()
	l := tarLayer(t,
		folder("ssebench", 0o755), file("ssebench/ssebench-daemon", 0o755, "daemon"),
		folder("usr", 0o755), folder("usr/local", 0o755), folder("usr/local/bin", 0o755),
		file("usr/local/bin/entrypoint", 0o755, "entrypoint"),
	)
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	return hostPlatform(t, img, v1.Config{})
}

// toolImage assembles the tool image of caseImage, as assemble tool would.
func toolImage(t *testing.T) v1.Image {
	t.Helper()
	ti, err := assemble.Tool(context.Background(), caseImage(t), runtimeImage(t),
		assemble.WithSourceDir("/src/proj"), assemble.WithTempDir(t.TempDir()))
	if err != nil {
		t.Fatalf("assemble.Tool() = %v", err)
	}
	t.Cleanup(func() { ti.Close() })
	return ti
}

// storeImage writes img into the test's store as ref.
func (c *cli) storeImage(t *testing.T, ref string, img v1.Image) {
	t.Helper()
	s, err := store.Open(c.store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(context.Background(), r, img); err != nil {
		t.Fatalf("writing %s to the store: %v", ref, err)
	}
}

// storedImage reads ref from the test's store.
func (c *cli) storedImage(t *testing.T, ref string) v1.Image {
	t.Helper()
	s, err := store.Open(c.store)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := s.Image(r)
	if err != nil {
		t.Fatalf("reading %s from the store: %v", ref, err)
	}
	return img
}

// oneLine fails the test when err is nil or spans several lines: every
// error ssebench prints is one line.
func oneLine(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("got no error")
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is not one line: %q", err)
	}
}
