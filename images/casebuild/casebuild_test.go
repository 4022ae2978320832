package casebuild

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/task"
)

func TestBaseNames(t *testing.T) {
	home := t.TempDir()
	for _, lang := range []string{"go", "rust"} {
		d := filepath.Join(home, "images", "base-images", "generic-"+lang)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "Dockerfile"), []byte("FROM x\n"), 0o644)
	}
	os.MkdirAll(filepath.Join(home, "datasets", "pilot"), 0o755)
	manifest := `{"dataset":"pilot","version":"pilot-v1","tasks":[
 {"id":"a","image":"case/pilot/a","base":"base-generic-go:0.9.0","arch":["amd64"]},
 {"id":"b","image":"case/pilot/b","base":"base-generic-go:1.0.0","arch":["amd64"]},
 {"id":"c","image":"case/pilot/c","base":"base-generic-rust:1.0.0","arch":["amd64"]},
 {"id":"d","image":"case/pilot/d","base":"base-generic-go@sha256:0000000000000000000000000000000000000000000000000000000000000000","arch":["amd64"]}]}`
	os.WriteFile(filepath.Join(home, "datasets", "pilot", "manifest.json"), []byte(manifest), 0o644)

	b := &Builder{Names: naming.NewNames("localhost:5000/sse", "1.0.0")}
	got, err := b.BaseNames(home, "go")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"localhost:5000/sse/base-generic-go:1.0.0",
		"localhost:5000/sse/base-generic-go:latest",
		"localhost:5000/sse/base-generic-go:0.9.0",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("BaseNames(go) (-want +got):\n%s", d)
	}
	langs, err := BaseLanguages(home)
	if err != nil || strings.Join(langs, ",") != "go,rust" {
		t.Errorf("BaseLanguages() = %v, %v; want go, rust", langs, err)
	}
}

func TestBuildBaseNeedsOSImage(t *testing.T) {
	b := &Builder{Names: naming.NewNames("localhost:5000/sse", "1.0.0")}
	_, err := b.BuildBase(t.Context(), t.TempDir(), "go", "", "", false)
	if err == nil || !strings.Contains(err.Error(), "--os-image") {
		t.Errorf("BuildBase without an OS image: %v, want a hint about --os-image", err)
	}
}

// A home without base images says so, instead of listing none.
func TestBuildBaseNoBaseImages(t *testing.T) {
	b := &Builder{Names: naming.NewNames("localhost:5000/sse", "1.0.0")}
	home := t.TempDir()
	_, err := b.BuildBase(t.Context(), home, "go", "127.0.0.1:5000/os:x", "", false)
	if err == nil || !strings.Contains(err.Error(), "holds no base images") || !strings.Contains(err.Error(), "SSEBENCH_HOME") || strings.Contains(err.Error(), "base images: )") {
		t.Errorf("BuildBase in a home without base images: %v, want one that says the home has none and how to name one", err)
	}
	os.MkdirAll(filepath.Join(home, "images", "base-images", "generic-rust"), 0o755)
	os.WriteFile(filepath.Join(home, "images", "base-images", "generic-rust", "Dockerfile"), []byte("FROM x\n"), 0o644)
	_, err = b.BuildBase(t.Context(), home, "go", "127.0.0.1:5000/os:x", "", false)
	if err == nil || !strings.Contains(err.Error(), "(base images: rust)") {
		t.Errorf("BuildBase of a language the home lacks: %v, want the list of the home's base images", err)
	}
}

// TestBrokenSibling builds one task of a dataset whose other task folder
// is broken: the broken one is reported, the asked-for one is handled.
func TestBrokenSibling(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "examples")
	const good = "kvconf-12-afb9ee1"
	if err := os.CopyFS(filepath.Join(dir, good), os.DirFS(filepath.Join(testenv.ModuleRoot(), "datasets", "examples", good))); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "broken-1-aaaaaaa"), os.DirFS(filepath.Join(testenv.ModuleRoot(), "datasets", "examples", good))); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "dataset.yaml"), []byte("version: examples-v1\n"), 0o644)
	os.Remove(filepath.Join(dir, "broken-1-aaaaaaa", "Dockerfile"))

	st, err := store.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	names := naming.NewNames("localhost:5000/sse", "1.0.0")
	digest, err := task.FilesDigest(filepath.Join(dir, good))
	if err != nil {
		t.Fatal(err)
	}
	// The good task's case image is up to date: no build is needed.
	img, _ := random.Image(10, 1)
	cf, _ := img.ConfigFile()
	cf.Config.Labels = map[string]string{LabelTaskFiles: digest}
	img, _ = mutate.ConfigFile(img, cf)
	ref, _ := name.ParseReference(names.Case("examples", good), name.WeakValidation)
	if err := st.Write(ctx, ref, img); err != nil {
		t.Fatal(err)
	}
	r, err := remote.NewResolver(remote.WithStore(st), remote.WithPullPolicy(remote.PullNever))
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	b := &Builder{Store: st, Resolver: r, Names: names, Log: &log}

	out, err := b.BuildCases(ctx, dir, CaseOptions{Tasks: []string{good}, HostArch: "amd64"})
	if err != nil || len(out) != 1 || out[0].Action != "skipped" {
		t.Fatalf("BuildCases(%s) = %+v, %v; want it skipped (up to date) despite its broken sibling", good, out, err)
	}
	if !strings.Contains(log.String(), "warning: task broken-1-aaaaaaa of dataset examples has problems") {
		t.Errorf("the broken sibling was not reported:\n%s", log.String())
	}

	// Every task: the broken one fails, the good one is still handled.
	out, err = b.BuildCases(ctx, dir, CaseOptions{HostArch: "amd64"})
	if err == nil || !strings.Contains(err.Error(), "broken-1-aaaaaaa") {
		t.Errorf("BuildCases(all) = %v, want the broken task named", err)
	}
	got := map[string]string{}
	for _, oc := range out {
		got[oc.Task] = oc.Action
	}
	if d := cmp.Diff(map[string]string{good: "skipped", "broken-1-aaaaaaa": "failed"}, got); d != "" {
		t.Errorf("BuildCases(all) outcomes (-want +got):\n%s", d)
	}
}

// TestMissingBase: a case whose base is in neither the store nor a
// registry fails before BuildKit is asked (BuildKit would pull it from the
// default registry on the internet), and says how to build it.
func TestMissingBase(t *testing.T) {
	const good = "kvconf-12-afb9ee1"
	dir := filepath.Join(t.TempDir(), "examples")
	if err := os.CopyFS(filepath.Join(dir, good), os.DirFS(filepath.Join(testenv.ModuleRoot(), "datasets", "examples", good))); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "dataset.yaml"), []byte("version: examples-v1\n"), 0o644)
	st, err := store.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := remote.NewResolver(remote.WithStore(st), remote.WithPullPolicy(remote.PullNever))
	if err != nil {
		t.Fatal(err)
	}
	// No BuildKit: reaching it is the bug.
	b := &Builder{Store: st, Resolver: r, Names: naming.NewNames("localhost:5000/sse", "1.0.0"), Log: &strings.Builder{}}
	out, err := b.BuildCases(t.Context(), dir, CaseOptions{HostArch: "amd64"})
	if err == nil || len(out) != 1 || out[0].Err == nil {
		t.Fatalf("BuildCases() = %+v, %v; want the task failed", out, err)
	}
	// The build's error keeps the cause: an evaluation does not retry a
	// build no retry can mend.
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("BuildCases() error %q is not store.ErrNotFound", err)
	}
	msg := out[0].Err.Error()
	for _, want := range []string{"localhost:5000/sse/base-generic-go:", "in neither the store nor its registry", "ssebench base-images go"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") || len(msg) > 300 {
		t.Errorf("the error is not one short line: %q", msg)
	}
	if !errors.Is(out[0].Err, store.ErrNotFound) {
		t.Errorf("the error %q does not match store.ErrNotFound: an evaluation would retry it", msg)
	}
}

func TestBaseLanguage(t *testing.T) {
	for ref, want := range map[string]string{
		"localhost:5000/sse/base-generic-go:1.0.0":       "go",
		"r.example:5000/a/b/base-generic-rust@sha256:ab": "rust",
		"localhost:5000/sse/other:1":                     "LANG",
	} {
		if got := baseLanguage(ref); got != want {
			t.Errorf("baseLanguage(%q) = %q, want %q", ref, got, want)
		}
	}
}

// TestPickBases: named bases are taken as given, with or without their
// generic- prefix; none named is every base of the home.
func TestPickBases(t *testing.T) {
	home := t.TempDir()
	for _, l := range []string{"go", "rust"} {
		d := filepath.Join(home, "images", "base-images", "generic-"+l)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "Dockerfile"), []byte("FROM x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ args, want []string }{{nil, []string{"go", "rust"}}, {[]string{"generic-c", "go"}, []string{"c", "go"}}} {
		got, err := PickBases(home, c.args)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("PickBases(%v) = %v, %v; want %v", c.args, got, err, c.want)
		}
	}
}
