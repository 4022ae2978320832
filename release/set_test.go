package release_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/agent"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/release"
)

// TestImageSet: a published task is its base, its case image under the
// dataset's version, its tool image, the agents' images and the runtime;
// a task no dataset has is refused.
func TestImageSet(t *testing.T) {
	ds := dataset(t)
	names := naming.NewNames("localhost:5000/sse", "1.0.0")
	got, err := release.ImageSet(names, []string{ds.Dir}, nil, []*agent.Agent{{Name: "dummy", Version: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		names.CaseTagged(ds.Name, id, "examples-v1"): true,
		names.Tool(id):                true,
		names.Agent("dummy", id, "1"): true,
		names.Runtime():               true,
	}
	if b := ds.Tasks[0].Base; b != "" {
		want[names.Prefixed(b)] = true
	}
	for _, r := range got {
		if !want[r] {
			t.Errorf("ImageSet() has %s, want only %v", r, want)
		}
		delete(want, r)
	}
	if len(want) > 0 {
		t.Errorf("ImageSet() = %v, lacks %v", got, want)
	}
	if _, err := release.ImageSet(names, []string{ds.Dir}, []string{"absent-1-abc"}, nil); err == nil || !strings.Contains(err.Error(), "is in none of the datasets") {
		t.Errorf("ImageSet(an absent task) = %v, want it refused", err)
	}
}

// TestHomeImageSet: the images of every dataset of a home, or of the
// one named, with the named agent folders' images.
func TestHomeImageSet(t *testing.T) {
	ds := dataset(t)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "datasets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(ds.Dir, filepath.Join(home, "datasets", "examples")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, "agents", "mine"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "agents", "mine", "agent.yaml"), []byte("name: dummy\nversion: \"1\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	names := naming.NewNames("localhost:5000/sse", "1.0.0")
	for _, datasets := range [][]string{nil, {"examples"}} {
		got, err := release.HomeImageSet(home, names, datasets, nil, []string{"mine"})
		if err != nil || !slices.Contains(got, names.CaseTagged("examples", id, "examples-v1")) || !slices.Contains(got, names.Agent("dummy", id, "1")) {
			t.Errorf("HomeImageSet(datasets %q) = %q, %v; want the task's case and agent images", datasets, got, err)
		}
	}
	if _, err := release.HomeImageSet(home, names, nil, nil, []string{"nope"}); err == nil {
		t.Error("HomeImageSet of an agent folder the home lacks: no error")
	}
	if got, err := release.HomeImageSet(home, names, []string{"other"}, nil, nil); err == nil && len(got) > 0 {
		t.Errorf("HomeImageSet of a dataset the home lacks = %q", got)
	}
}
