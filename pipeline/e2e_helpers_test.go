package pipeline_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/images/buildkit"
	"github.com/42-b3yond-6ug/ssebench/images/casebuild"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
)

// e2eTask is the example task the end-to-end tests build and run.
const e2eTask = "kvconf-12-afb9ee1"

// e2eVersion is the VERSION of the test homes.
const e2eVersion = "0.1.0-dev"

// moduleDir is this checkout's root.
func moduleDir(t *testing.T) string {
	t.Helper()
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// exampleHome makes an SSEBench home whose examples dataset holds e2eTask,
// with an empty agents folder.
func exampleHome(t *testing.T, repo string) string {
	t.Helper()
	home := t.TempDir()
	ds := filepath.Join(home, "datasets", "examples")
	if err := os.MkdirAll(ds, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"dataset.yaml", "manifest.json", e2eTask} {
		cp(t, filepath.Join(repo, "datasets", "examples", f), filepath.Join(ds, f))
	}
	if err := os.MkdirAll(filepath.Join(home, "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "VERSION"), []byte(e2eVersion+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return home
}

// newEnv returns an Env on home whose REGISTRY is prefix, with a store and a
// facts cache of its own under dir (a machine of its own, as far as images
// go) and buildkitd at bkAddr.
func newEnv(t *testing.T, home, dir, prefix, bkAddr string) *pipeline.Env {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	facts, err := assemble.NewFacts(filepath.Join(dir, "facts"))
	if err != nil {
		t.Fatal(err)
	}
	// Runs remove the images they import, but not kept ones or what a
	// failed test leaves: the clean-up does, this prefix's only, so the
	// prefix must be the test's own (testenv.Unique).
	if addr := os.Getenv(testenv.ContainerdAddressEnv); addr != "" {
		testenv.RemoveImagesAfter(t, addr, prefix+"/")
	}
	return &pipeline.Env{
		Home: home, ModuleDir: moduleDir(t), Names: naming.NewNames(prefix, e2eVersion), Store: st, Facts: facts, Log: testWriter{t},
		BuildKit: func(ctx context.Context) (*buildkit.Client, error) {
			return buildkit.New(ctx, buildkit.WithAddress(bkAddr), buildkit.WithProgress(testWriter{t}), buildkit.WithTempDir(st.TempDir()))
		},
	}
}

// buildGoBase builds the Go base image into e's store, where case builds
// take it from.
func buildGoBase(t *testing.T, ctx context.Context, e *pipeline.Env, repo, osImage string) {
	t.Helper()
	bk, err := e.BuildKit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer bk.Close()
	b := &casebuild.Builder{BuildKit: bk, Store: e.Store, Names: e.Names, Log: testWriter{t}}
	if _, err := b.BuildBase(ctx, repo, "go", osImage, "", false); err != nil {
		t.Fatalf("building the Go base image: %v", err)
	}
}

// buildRuntime builds our own runtime from this checkout, for platforms ps
// (none: every platform runtimebin builds by default), and records it in e's
// store under its name.
func buildRuntime(t *testing.T, ctx context.Context, e *pipeline.Env, repo string, ps ...v1.Platform) v1.ImageIndex {
	t.Helper()
	opts := []runtimebin.BuildOption{runtimebin.WithModuleDir(repo), runtimebin.WithTempDir(e.Store.TempDir())}
	if len(ps) > 0 {
		opts = append(opts, runtimebin.WithPlatforms(ps...))
	}
	idx, err := runtimebin.Build(ctx, opts...)
	if err != nil {
		t.Fatalf("building the runtime: %v", err)
	}
	if err := e.Store.WriteIndex(ctx, mustRef(t, e.Names.Runtime()), idx); err != nil {
		t.Fatal(err)
	}
	return idx
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func cp(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp %s: %v\n%s", src, err, out)
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s, name.WeakValidation)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
