package casebuild_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/42-b3yond-6ug/ssebench/images/buildkit"
	"github.com/42-b3yond-6ug/ssebench/images/casebuild"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// home is the checkout: the base images and the example dataset.
func home(t *testing.T) string {
	t.Helper()
	return testenv.ModuleRoot()
}

// TestBaseAndCaseImages builds every base image and every example case
// image from the Dockerfiles into a fresh store, then checks the rules of
// build-case: a second run skips all, touching one task's file rebuilds only
// that task, --force rebuilds all, and the label is the folder's digest.
func TestBaseAndCaseImages(t *testing.T) {
	addr := testenv.RequireBuildKit(t)
	osImage := testenv.OSImage(t)
	ctx := context.Background()

	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bk, err := buildkit.New(ctx, buildkit.WithAddress(addr), buildkit.WithProgress(io.Discard), buildkit.WithTempDir(st.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer bk.Close()
	r, err := remote.NewResolver(remote.WithStore(st), remote.WithPullPolicy(remote.PullNever))
	if err != nil {
		t.Fatal(err)
	}
	// A registry prefix nobody pushes to: every image must come from the
	// store, none from a registry.
	names := naming.NewNames("127.0.0.1:1/ssebench-test", "0.1.0-dev")
	var log strings.Builder
	b := &casebuild.Builder{BuildKit: bk, Store: st, Resolver: r, Names: names, Log: &log}

	langs, err := casebuild.BaseLanguages(home(t))
	if err != nil || len(langs) != 3 {
		t.Fatalf("BaseLanguages() = %v, %v; want c, go, rust", langs, err)
	}
	for _, lang := range langs {
		d, err := b.BuildBase(ctx, home(t), lang, osImage, "", false)
		if err != nil {
			t.Fatalf("building base %s: %v", lang, err)
		}
		for _, n := range []string{names.Base(lang), names.BaseLatest(lang)} {
			if _, err := st.Descriptor(mustRef(t, n)); err != nil {
				t.Errorf("base image %s is not in the store: %v", n, err)
			}
		}
		// Unchanged inputs: not built again, same image.
		log.Reset()
		again, err := b.BuildBase(ctx, home(t), lang, osImage, "", false)
		if err != nil || again != d || !strings.Contains(log.String(), "up to date: "+names.Base(lang)) {
			t.Errorf("second build of base %s = %s, %v (log %q); want %s, up to date", lang, again, err, log.String(), d)
		}
	}

	// A copy of the dataset, so a test may touch its files.
	ds := filepath.Join(t.TempDir(), "examples")
	if out, err := exec.Command("cp", "-a", filepath.Join(home(t), "datasets", "examples"), ds).CombinedOutput(); err != nil {
		t.Fatalf("copying the dataset: %v\n%s", err, out)
	}
	build := func(force bool) map[string]string {
		t.Helper()
		out, err := b.BuildCases(ctx, ds, casebuild.CaseOptions{Force: force, HostArch: runtime.GOARCH})
		if err != nil {
			t.Fatalf("BuildCases: %v\n%s", err, log.String())
		}
		got := map[string]string{}
		for _, oc := range out {
			got[oc.Task] = oc.Action
		}
		return got
	}
	d, err := task.LoadDataset(ds)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range d.Tasks {
		ids = append(ids, tk.ID)
	}
	sort.Strings(ids)
	all := func(action string) map[string]string {
		m := map[string]string{}
		for _, id := range ids {
			m[id] = action
		}
		return m
	}
	check := func(step string, got, want map[string]string) {
		t.Helper()
		for id, w := range want {
			if got[id] != w {
				t.Errorf("%s: task %s was %q, want %q", step, id, got[id], w)
			}
		}
	}
	check("first build", build(false), all("built"))

	// The label is the folder's digest.
	for _, tk := range d.Tasks {
		img, err := st.Image(mustRef(t, names.Case("examples", tk.ID)))
		if err != nil {
			t.Fatalf("case image of %s: %v", tk.ID, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		want, err := tk.FilesDigest()
		if err != nil {
			t.Fatal(err)
		}
		if got := cf.Config.Labels[casebuild.LabelTaskFiles]; got != want {
			t.Errorf("%s: label %s = %q, want the folder digest %q", tk.ID, casebuild.LabelTaskFiles, got, want)
		}
		files, err := tk.Files()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := cf.Config.Labels[casebuild.LabelTaskSSE], task.SSEDigest(files); got != want {
			t.Errorf("%s: label %s = %q, want the digest of sse/ %q", tk.ID, casebuild.LabelTaskSSE, got, want)
		}
	}

	check("second build", build(false), all("skipped"))

	touched := ids[0]
	f := filepath.Join(ds, touched, "sse", "config.yaml")
	content, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, append(content, []byte("\n# touched\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	want := all("skipped")
	want[touched] = "rebuilt"
	check("after touching "+touched, build(false), want)
	if !strings.Contains(log.String(), "was built from other task files") {
		t.Errorf("no warning about the changed folder in:\n%s", log.String())
	}

	check("forced", build(true), all("built"))
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s, name.WeakValidation)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
