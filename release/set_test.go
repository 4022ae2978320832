package release_test

import (
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
