package preflight

import (
	"strings"
	"testing"
)

// TestSettle: a base image is made only where its case image is missing,
// the runtime only where a tool image is, and each gets its command; the
// base-images commands of one OS image merge into one.
func TestSettle(t *testing.T) {
	const prefix = "localhost:5000/ssebench"
	checks := []Image{
		{Task: "a-1", Kind: KindBase, Ref: prefix + "/base-generic-go:1", Where: WhereMissing},
		{Task: "a-1", Kind: KindCase, Ref: prefix + "/case/x/a-1:1", Where: WhereMissing},
		{Task: "a-1", Kind: KindTool, Ref: prefix + "/tool/a-1:1", Where: WhereStore, Platforms: []string{"linux/amd64"}},
		{Task: "b-2", Kind: KindBase, Ref: prefix + "/base-generic-c:1", Where: WhereMissing},
		{Task: "b-2", Kind: KindCase, Ref: prefix + "/case/x/b-2:1", Where: WhereMissing},
		{Task: "c-3", Kind: KindBase, Ref: prefix + "/base-generic-rust:1", Where: WhereMissing},
		{Task: "c-3", Kind: KindCase, Ref: prefix + "/case/x/c-3:1", Where: WhereStore, Platforms: []string{"linux/amd64"}},
		{Kind: KindRuntime, Ref: prefix + "/runtime:1", Where: WhereMissing},
	}
	settle(checks, "linux/amd64", fixer{prefix: prefix})
	want := []string{"make", "build", "ok", "make", "build", "-", "ok", "-"}
	for i, w := range want {
		if got := checks[i].Action(); got != w {
			t.Errorf("%s %s: Action() = %q, want %q", checks[i].Task, checks[i].Kind, got, w)
		}
	}
	fixes := Fixes(checks)
	if len(fixes) != 1 || fixes[0] != "ssebench base-images c go --os-image "+OSImagePlaceholder {
		t.Errorf("Fixes() = %q, want one base-images command for c and go", fixes)
	}
	err := Missing("the run", checks)
	if err == nil || !strings.Contains(err.Error(), "which are missing") || !strings.Contains(err.Error(), OSImageNote) {
		t.Errorf("Missing() = %v, want both bases named, with the OS image's note", err)
	}
	if err := Missing("the run", checks[2:3]); err != nil {
		t.Errorf("Missing(nothing to make) = %v, want nil", err)
	}
}
