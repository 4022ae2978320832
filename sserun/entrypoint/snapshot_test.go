package entrypoint

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
	"github.com/42-b3yond-6ug/ssebench/sserun"
)

// snapshotCase is a SOURCE_DIR with its one-commit repository, the
// pristine tree beside it, and the buggy commit kept (keepBase) before
// the "agent" runs.
type snapshotCase struct {
	e             *entrypoint
	src, pristine string
	snap          *snapshot
}

func newSnapshotCase(t *testing.T) *snapshotCase {
	t.Helper()
	return newSnapshotCaseWith(t, nil)
}

// newSnapshotCaseWith is newSnapshotCase with more files in both trees,
// by slash-separated path.
func newSnapshotCaseWith(t *testing.T, files map[string]string) *snapshotCase {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	base := t.TempDir()
	c := &snapshotCase{src: filepath.Join(base, "src"), pristine: filepath.Join(base, "pristine")}
	for _, dir := range []string{c.pristine, c.src} {
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "main.go"), "package main // bug\n")
		writeFile(t, filepath.Join(dir, "sub", "keep.txt"), "kept\n")
		writeFile(t, filepath.Join(dir, ".gitignore"), "*.o\n")
		// An ignored file the build needs (vendored, generated): part of
		// the tree, not of the commit.
		writeFile(t, filepath.Join(dir, "lib.o"), "pristine object\n")
		for name, body := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, p, body)
		}
	}
	gitInit(t, c.src)
	out, err := exec.Command("git", "-C", c.src, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	c.e = &entrypoint{env: sserun.Env{WorkDir: t.TempDir()}, pristine: c.pristine, log: os.Stderr}
	note := func(f string, a ...any) { t.Logf("note: "+f, a...) }
	c.snap = c.e.keepBase(c.src, strings.TrimSpace(string(out)), note)
	if c.snap == nil {
		t.Fatal("keepBase() = nil")
	}
	t.Cleanup(c.snap.remove)
	return c
}

// agent runs a shell script as the agent would, in SOURCE_DIR.
func (c *snapshotCase) agent(t *testing.T, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = c.src
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@a.invalid", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@a.invalid")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("agent: %v\n%s", err, out)
	}
}

func (c *snapshotCase) take(t *testing.T) (patch, tree string) {
	t.Helper()
	var buf bytes.Buffer
	tree, _, err := c.snap.take(context.Background(), c.src, c.pristine, nil, &buf)
	if err != nil {
		t.Fatalf("take() = %v", err)
	}
	return buf.String(), tree
}

// TestSnapshot: the patch and the graded tree come from one reading of
// the agent's tree, in which nothing the agent configured runs, and the
// graded tree is the pristine tree with exactly the patch applied.
func TestSnapshot(t *testing.T) {
	t.Run("a fix", func(t *testing.T) {
		c := newSnapshotCase(t)
		c.agent(t, `printf 'package main // fixed\n' > main.go; echo new > sub/new.txt; rm sub/keep.txt; echo junk > x.o; ln -s /etc/hostname link`)
		patch, tree := c.take(t)
		for _, want := range []string{"-package main // bug\n+package main // fixed\n", "diff --git a/sub/new.txt b/sub/new.txt\nnew file mode 100644", "deleted file mode 100644", "+/etc/hostname\n\\ No newline at end of file"} {
			if !strings.Contains(patch, want) {
				t.Errorf("final.patch lacks %q:\n%s", want, patch)
			}
		}
		if strings.Contains(patch, "x.o") {
			t.Errorf("final.patch has an ignored file:\n%s", patch)
		}
		if got := readFile(t, filepath.Join(tree, "main.go")); got != "package main // fixed\n" {
			t.Errorf("graded main.go = %q", got)
		}
		if got := readFile(t, filepath.Join(tree, "sub", "new.txt")); got != "new\n" {
			t.Errorf("graded sub/new.txt = %q", got)
		}
		if _, err := os.Lstat(filepath.Join(tree, "sub", "keep.txt")); !os.IsNotExist(err) {
			t.Errorf("graded sub/keep.txt: %v, want it removed", err)
		}
		if link, err := os.Readlink(filepath.Join(tree, "link")); err != nil || link != "/etc/hostname" {
			t.Errorf("graded link = %q, %v; want the symlink, not followed", link, err)
		}
		// The ignored files come from the pristine tree, not the agent's.
		if got := readFile(t, filepath.Join(tree, "lib.o")); got != "pristine object\n" {
			t.Errorf("graded lib.o = %q", got)
		}
		if _, err := os.Lstat(filepath.Join(tree, "x.o")); !os.IsNotExist(err) {
			t.Errorf("graded x.o: %v, want the agent's ignored file left out", err)
		}
		if _, err := os.Lstat(filepath.Join(tree, ".git")); !os.IsNotExist(err) {
			t.Errorf("graded .git: %v, want none", err)
		}
	})

	for _, tc := range []struct {
		name, script string
	}{
		// A clean filter of the agent's would run in `git add -A` and
		// change the tree after the phase (issue: work after the phase).
		{"clean filter in the repository config", `git config filter.x.clean 'sh -c "echo filtered > main.go; touch /tmp/ssebench-snapshot-filter-ran; cat"'
mkdir -p .git/info; echo '* filter=x' > .git/info/attributes; echo '* filter=x' > .gitattributes`},
		{"include.path to a config of the agent's", `printf '[filter "x"]\n\tclean = sh -c "touch /tmp/ssebench-snapshot-filter-ran; cat"\n' > /tmp/ssebench-agent-gitconfig
git config include.path /tmp/ssebench-agent-gitconfig; echo '* filter=x' > .gitattributes`},
		{"fsmonitor and hooks", `git config core.fsmonitor 'touch /tmp/ssebench-snapshot-filter-ran'; mkdir -p .git/hooks; printf '#!/bin/sh\ntouch /tmp/ssebench-snapshot-filter-ran\n' > .git/hooks/post-index-change; chmod +x .git/hooks/post-index-change`},
		// A history of the agent's making: the base stays the buggy
		// commit kept before the agent ran.
		{"a new repository", `rm -rf .git; git init -q; git add -A; git commit -qm 'buggy commit'`},
		{"rewritten objects", `chmod -R u+w .git/objects; for f in $(find .git/objects -type f); do : > "$f"; done`},
		// Attributes that would make the graded bytes differ from the
		// patch's.
		{"eol attributes", `echo '* text eol=crlf' > .gitattributes`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Attack(t, "after the phase", "one snapshot by root with none of the agent's git configuration")
			os.Remove("/tmp/ssebench-snapshot-filter-ran")
			c := newSnapshotCase(t)
			c.agent(t, `printf 'package main // fixed\n' > main.go`)
			c.agent(t, tc.script)
			patch, tree := c.take(t)
			if _, err := os.Stat("/tmp/ssebench-snapshot-filter-ran"); err == nil {
				t.Errorf("a program of the agent's ran while the snapshot was taken")
			}
			if !strings.Contains(patch, "+package main // fixed\n") {
				t.Errorf("final.patch lacks the agent's change:\n%s", patch)
			}
			if got := readFile(t, filepath.Join(tree, "main.go")); got != "package main // fixed\n" {
				t.Errorf("graded main.go = %q, want the bytes the patch shows", got)
			}
		})
	}
}

// TestSnapshotProtected: the agent's changes to protected paths (test
// files, test data, vendored code, go.work) are in final.patch but not in
// the graded tree, which keeps the pristine version of each (an added
// one left out, a deleted one kept), and take lists them; the rest of the
// change is applied.
func TestSnapshotProtected(t *testing.T) {
	hostile.Attack(t, "protected paths", "the graded tree takes protected paths from the pristine tree")
	protected, err := contract.CompileGlobs(contract.ProtectedPaths("go"))
	if err != nil {
		t.Fatal(err)
	}
	c := newSnapshotCaseWith(t, map[string]string{
		"main_test.go":        "package main // pristine test\n",
		"sub/keep_test.go":    "package sub // pristine test\n",
		"pkg/a.go":            "package pkg\n",
		"pkg/a_test.go":       "package pkg // pristine test\n",
		"testdata/golden.txt": "pristine golden\n",
		"vendor/dep/dep.go":   "package dep // pristine\n",
		"vendor/modules.txt":  "# dep\n",
	})
	c.agent(t, `printf 'package main // fixed\n' > main.go
printf 'package main // agent test\n' > main_test.go
printf 'package main // agent added test\n' > new_test.go
printf 'agent golden\n' > testdata/golden.txt
printf 'package dep // agent\n' > vendor/dep/dep.go
printf 'package dep // agent\n' > vendor/dep/new.go
rm sub/keep_test.go
printf 'go 1.22\nuse ./vendor/dep\n' > go.work
rm -r pkg; printf 'not a package\n' > pkg
echo new > sub/new.txt`)
	var buf bytes.Buffer
	tree, dropped, err := c.snap.take(context.Background(), c.src, c.pristine, protected, &buf)
	if err != nil {
		t.Fatalf("take() = %v", err)
	}
	patch := buf.String()

	wantDropped := []string{"go.work", "main_test.go", "new_test.go", "pkg", "pkg/a_test.go", "sub/keep_test.go", "testdata/golden.txt", "vendor/dep/dep.go", "vendor/dep/new.go"}
	if diff := cmp.Diff(wantDropped, dropped); diff != "" {
		t.Errorf("dropped paths (-want +got):\n%s", diff)
	}
	// final.patch shows everything the agent did.
	for _, want := range []string{"+package main // fixed", "+package main // agent test", "+package main // agent added test",
		"+agent golden", "+package dep // agent", "deleted file mode 100644\nindex", "a/sub/keep_test.go", "+use ./vendor/dep", "+not a package", "+new"} {
		if !strings.Contains(patch, want) {
			t.Errorf("final.patch lacks %q:\n%s", want, patch)
		}
	}
	// The graded tree is pristine at every protected path...
	for name, want := range map[string]string{
		"main_test.go":        "package main // pristine test\n",
		"sub/keep_test.go":    "package sub // pristine test\n",
		"pkg/a_test.go":       "package pkg // pristine test\n",
		"testdata/golden.txt": "pristine golden\n",
		"vendor/dep/dep.go":   "package dep // pristine\n",
		// ...and has the rest of the change.
		"main.go":     "package main // fixed\n",
		"sub/new.txt": "new\n",
	} {
		if got, err := os.ReadFile(filepath.Join(tree, filepath.FromSlash(name))); err != nil || string(got) != want {
			t.Errorf("graded %s = %q, %v; want %q", name, got, err, want)
		}
	}
	for _, gone := range []string{"new_test.go", "vendor/dep/new.go", "go.work", "pkg/a.go"} {
		if _, err := os.Lstat(filepath.Join(tree, filepath.FromSlash(gone))); !os.IsNotExist(err) {
			t.Errorf("graded %s: %v, want it absent", gone, err)
		}
	}
}

// TestSnapshotDirectoryToFile: a directory the agent replaced by a file
// becomes that file in the graded tree, whatever empty folders and
// ignored files of the pristine tree the removals left in it.
func TestSnapshotDirectoryToFile(t *testing.T) {
	c := newSnapshotCaseWith(t, map[string]string{"pkg/deep/a.go": "package deep\n", "pkg/x.o": "ignored\n"})
	c.agent(t, `rm -r pkg; printf 'a file now\n' > pkg; ln -s main.go sub2`)
	patch, tree := c.take(t)
	if !strings.Contains(patch, "+a file now") {
		t.Errorf("final.patch lacks the new file:\n%s", patch)
	}
	if got := readFile(t, filepath.Join(tree, "pkg")); got != "a file now\n" {
		t.Errorf("graded pkg = %q", got)
	}
}

func TestParseRawDiff(t *testing.T) {
	raw := ":100644 100644 aaaa bbbb M\x00main.go\x00:000000 120000 0000 cccc A\x00link\x00"
	got, err := parseRawDiff([]byte(raw))
	if err != nil || len(got) != 2 || got[0].path != "main.go" || got[1].newMode != "120000" || got[1].status != "A" {
		t.Errorf("parseRawDiff() = %+v, %v", got, err)
	}
	for _, bad := range []string{":100644 100644 a b M\x00../x\x00", ":100644 100644 a b M\x00/etc/x\x00", "junk\x00x\x00"} {
		if _, err := parseRawDiff([]byte(bad)); err == nil {
			t.Errorf("parseRawDiff(%q) = nil error", bad)
		}
	}
}
