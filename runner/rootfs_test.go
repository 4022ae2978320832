package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInRoot(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "src", "proj"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(root, "evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(root, "a", "b")); err != nil {
		t.Fatal(err)
	}
	if p, err := InRoot(root, "/src/proj"); err != nil || p != filepath.Join(root, "src", "proj") {
		t.Errorf("InRoot(/src/proj) = %q, %v", p, err)
	}
	for _, rel := range []string{"/evil", "/evil/etc", "/a/b", "/../evil"} {
		if p, err := InRoot(root, rel); err == nil || !strings.Contains(err.Error(), "refusing") && !strings.Contains(err.Error(), "has no") {
			t.Errorf("InRoot(%s) = %q, %v; want a refusal", rel, p, err)
		}
	}
	if _, err := InRoot(root, "/missing"); err == nil {
		t.Error("InRoot(/missing) succeeded")
	}
}

func TestUnescapeMount(t *testing.T) {
	if got := unescapeMount(`/run/a\040b/rootfs`); got != "/run/a b/rootfs" {
		t.Errorf("unescapeMount = %q", got)
	}
}
