package sserun

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestApplyDiff(t *testing.T) {
	uid, gid := os.Getuid(), os.Getgid()
	tests := []struct {
		name  string
		patch string
		want  map[string]fileState // changed or added entries
		gone  []string
	}{
		{
			name: "plain diff with a/ and b/ prefixes, as patch -p1 reads it",
			patch: "--- a/main.c\n+++ b/main.c\n@@ -1,2 +1,2 @@\n int a;\n-int b;\n+int c;\n" +
				"--- /dev/null\n+++ b/tests/new_test.c\n@@ -0,0 +1 @@\n+test\n",
			want: map[string]fileState{
				"main.c":           {Mode: 0o600, Content: "int a;\nint c;\n"},
				"tests":            {Mode: 0o755 | os.ModeDir},
				"tests/new_test.c": {Mode: 0o644, Content: "test\n"},
			},
		},
		{
			name: "git diff: modes, deletion and rename",
			patch: "diff --git a/run.sh b/run.sh\nnew file mode 100755\nindex 0000000..1111111\n--- /dev/null\n+++ b/run.sh\n@@ -0,0 +1 @@\n+echo run\n" +
				"diff --git a/old.txt b/old.txt\ndeleted file mode 100644\nindex 2222222..0000000\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n" +
				"diff --git a/sub/x.txt b/sub/y.txt\nsimilarity index 100%\nrename from sub/x.txt\nrename to sub/y.txt\n",
			want: map[string]fileState{
				"run.sh":    {Mode: 0o755, Content: "echo run\n"},
				"sub/y.txt": {Mode: 0o644, Content: "x\n"},
			},
			gone: []string{"old.txt", "sub/x.txt"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "main.c"), "int a;\nint b;\n", 0o600)
			write(t, filepath.Join(dir, "old.txt"), "old\n", 0o644)
			write(t, filepath.Join(dir, "sub", "x.txt"), "x\n", 0o644)
			before := treeState(t, dir)
			if err := applyDiff([]byte(tt.patch), dir, uid, gid); err != nil {
				t.Fatalf("applyDiff: %v", err)
			}
			after := treeState(t, dir)
			for p, w := range tt.want {
				g := after[p]
				g.MTime = w.MTime
				if diff := cmp.Diff(w, g); diff != "" {
					t.Errorf("%s (-want +got):\n%s", p, diff)
				}
			}
			for _, p := range tt.gone {
				if _, ok := after[p]; ok {
					t.Errorf("%s is still there", p)
				}
			}
			for p, s := range before {
				if _, changed := tt.want[p]; !changed && !slices.Contains(tt.gone, p) && after[p] != s {
					t.Errorf("%s changed: %+v, was %+v", p, after[p], s)
				}
			}
		})
	}
}

func TestApplyDiffRefuses(t *testing.T) {
	outside := t.TempDir()
	write(t, filepath.Join(outside, "secret"), "root only\n", 0o600)
	for _, tt := range []struct {
		name, patch, want string
	}{
		{"a path out of the tree", "--- /dev/null\n+++ b/../escape\n@@ -0,0 +1 @@\n+x\n", "not a path inside the tree"},
		{"a path in .git", "--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+x\n", "inside a .git directory"},
		{"a symlink the agent left", "--- a/link\n+++ b/link\n@@ -1 +1 @@\n-root only\n+owned\n", "not a regular file"},
		{"a directory through a symlink", "--- /dev/null\n+++ b/linkdir/new\n@@ -0,0 +1 @@\n+x\n", "linkdir"},
		{"lines that are not there", "--- a/main.c\n+++ b/main.c\n@@ -1 +1 @@\n-something else\n+x\n", "main.c"},
		{"a new file that exists", "--- /dev/null\n+++ b/main.c\n@@ -0,0 +1 @@\n+x\n", "exists"},
		{"no diff at all", "just text\n", "changes no file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "main.c"), "int a;\n", 0o644)
			if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(dir, "linkdir")); err != nil {
				t.Fatal(err)
			}
			err := applyDiff([]byte(tt.patch), dir, os.Getuid(), os.Getgid())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("applyDiff = %v, want an error about %q", err, tt.want)
			}
			if b, _ := os.ReadFile(filepath.Join(outside, "secret")); string(b) != "root only\n" {
				t.Errorf("the file outside the tree now holds %q", b)
			}
			if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
				t.Error("a file was created outside the tree")
			}
		})
	}
}
