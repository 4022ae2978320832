package sserun

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// protectedTestScript shows what of the protected paths the copy holds,
// then runs the guard test the task ships.
const protectedTestScript = `set -e
echo "guard: $(cat tests/guard.sh)"
echo "tests: $(ls tests | tr '\n' ' ')"
if [ -L pkg ]; then echo pkg-is-a-link; fi
echo "check: $(cat pkg/a_check.sh)"
echo "dep: $(cat vendor/dep.txt)"
echo "vendor: $(ls vendor | tr '\n' ' ')"
if [ -e .git ]; then echo has-git; fi
sh tests/guard.sh
echo tests pass
`

// newProtectedTask is a fake task whose test script runs tests/guard.sh,
// with a pristine tree beside it; the agent's tree starts as a copy of
// the pristine one.
func newProtectedTask(t *testing.T) (ft *fakeTask, pristine string) {
	t.Helper()
	ft = newFakeTask(t, "good bug\n")
	write(t, filepath.Join(ft.root, "scripts", "test.sh"), protectedTestScript, 0o755)
	ft.cfg.Language = "c"
	ft.cfg.Tests.Protected = []string{"tests/**", "**/*_check.sh", "vendor/**"}
	pristine = filepath.Join(filepath.Dir(ft.src), "pristine")
	for _, dir := range []string{pristine, ft.src} {
		write(t, filepath.Join(dir, "main.txt"), "good bug\n", 0o644)
		write(t, filepath.Join(dir, "tests", "guard.sh"), "! grep -q bug main.txt\n", 0o644)
		write(t, filepath.Join(dir, "pkg", "a_check.sh"), "pristine check\n", 0o644)
		write(t, filepath.Join(dir, "pkg", "a.c"), "int a;\n", 0o644)
		write(t, filepath.Join(dir, "vendor", "dep.txt"), "pristine dep\n", 0o644)
	}
	write(t, filepath.Join(pristine, ".git", "HEAD"), "ref: refs/heads/main\n", 0o644)
	return ft, pristine
}

// TestDaemonTestToolProtected: the agent's test tool runs on a copy whose
// protected paths come from the pristine tree: an edited test, an added
// one, an edited or added vendored file are not there, and a protected
// directory the agent replaced by a symlink out of its tree is a
// directory again, with nothing written through the symlink.
func TestDaemonTestToolProtected(t *testing.T) {
	hostile.Attack(t, "protected paths", "the scripts' copies take protected paths from the pristine tree")
	ft, pristine := newProtectedTask(t)
	outside := t.TempDir()
	write(t, filepath.Join(ft.src, "tests", "guard.sh"), "true\n", 0o644)
	write(t, filepath.Join(ft.src, "tests", "extra.sh"), "echo agent-added\n", 0o644)
	write(t, filepath.Join(ft.src, "vendor", "dep.txt"), "agent dep\n", 0o644)
	write(t, filepath.Join(ft.src, "vendor", "new.txt"), "agent new\n", 0o644)
	if err := os.RemoveAll(filepath.Join(ft.src, "pkg")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ft.src, "pkg")); err != nil {
		t.Fatal(err)
	}
	d := ft.daemon(t, WithPristine(pristine))
	ctx := context.Background()

	got := d.Handle(ctx, Request{Op: OpTest}, false)
	if got.OK {
		t.Errorf("test = ok, want the pristine guard to fail on the bug:\n%s", got.Output)
	}
	for _, want := range []string{"guard: ! grep -q bug main.txt\n", "tests: guard.sh \n", "check: pristine check\n", "dep: pristine dep\n", "vendor: dep.txt \n"} {
		if !strings.Contains(got.Output, want) {
			t.Errorf("test output lacks %q:\n%s", want, got.Output)
		}
	}
	for _, bad := range []string{"agent-added", "extra.sh", "pkg-is-a-link", "new.txt", "has-git"} {
		if strings.Contains(got.Output, bad) {
			t.Errorf("test output has %q:\n%s", bad, got.Output)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("the copy wrote %d entries through the agent's symlink", len(ents))
	}

	// The fix alone makes the pristine guard pass.
	write(t, filepath.Join(ft.src, "main.txt"), "good fixed\n", 0o644)
	if got := d.Handle(ctx, Request{Op: OpTest}, false); !got.OK || !strings.Contains(got.Output, "tests pass") {
		t.Errorf("test after the fix = %+v, want ok", got)
	}
	ft.checkClean(t)
}

// TestDaemonGradeProtected: the grade's copies (the hidden tests' too)
// take the protected paths from the pristine tree.
func TestDaemonGradeProtected(t *testing.T) {
	hostile.Attack(t, "protected paths", "the scripts' copies take protected paths from the pristine tree")
	ft, pristine := newProtectedTask(t)
	write(t, filepath.Join(ft.src, "tests", "guard.sh"), "true\n", 0o644)
	got := ft.daemon(t, WithPristine(pristine)).Handle(context.Background(), Request{Op: OpGrade}, true)
	if got.Grade == nil || got.Grade.Test == nil || got.Grade.Test.OK {
		t.Fatalf("grade = %+v, want the test check failed by the pristine guard", got)
	}
	if !strings.Contains(got.Grade.Test.Output, "guard: ! grep -q bug main.txt") {
		t.Errorf("the grade's test ran the agent's guard:\n%s", got.Grade.Test.Output)
	}
}

// TestDaemonPristineMissing: without a pristine tree the copies are
// the agent's tree as it is, and the daemon says so in its log.
func TestDaemonPristineMissing(t *testing.T) {
	ft, _ := newProtectedTask(t)
	write(t, filepath.Join(ft.src, "tests", "guard.sh"), "true\n", 0o644)
	var log bytes.Buffer
	d := ft.daemon(t, WithPristine(filepath.Join(ft.work, "none")), WithLog(&log))
	if !strings.Contains(log.String(), "no pristine tree at "+filepath.Join(ft.work, "none")) {
		t.Errorf("daemon log = %q, want it to say there is no pristine tree", log.String())
	}
	if got := d.Handle(context.Background(), Request{Op: OpTest}, false); !got.OK {
		t.Errorf("test = %+v, want the agent's tree as it is", got)
	}
	if _, err := NewDaemon(ft.root, ft.cfg, WithPristine("rel")); err == nil {
		t.Error("NewDaemon(WithPristine(relative)) succeeded")
	}
}

// TestCopyProtected: the copy of a tree with its protected paths left out
// (copyOpts.skip), overlaid with copyProtected, has every protected path
// as the pristine tree has it and every other path as the tree has it.
func TestCopyProtected(t *testing.T) {
	base := t.TempDir()
	pristine, tree, dst := filepath.Join(base, "pristine"), filepath.Join(base, "tree"), filepath.Join(base, "dst")
	for name, body := range map[string]string{
		"main.go":           "pristine main",
		"a/b/c_test.go":     "pristine test",
		"a/b/c.go":          "pristine c",
		"gone/x_test.go":    "pristine gone test",
		"gone/x.go":         "pristine gone",
		"vendor/m/m.go":     "pristine m",
		"x/testdata/in.txt": "pristine in",
		"file/y_test.go":    "pristine y",
		".git/HEAD":         "pristine head",
		"sub/.git/HEAD":     "pristine sub head",
		"sub/.git_test.go":  "pristine dot test",
	} {
		write(t, filepath.Join(pristine, filepath.FromSlash(name)), body, 0o644)
	}
	for name, body := range map[string]string{
		"main.go":           "agent main",
		"a/b/c_test.go":     "agent test",
		"a/b/d_test.go":     "agent added test",
		"a/b/c.go":          "agent c",
		"vendor/m/m.go":     "agent m",
		"x/testdata/in.txt": "agent in",
		"x/testdata/new":    "agent new",
		"file":              "agent file where a directory was",
		"new.go":            "agent new go",
	} {
		write(t, filepath.Join(tree, filepath.FromSlash(name)), body, 0o644)
	}
	g, err := contract.CompileGlobs(contract.ProtectedPaths("go"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	o := copyOpts{uid: os.Getuid(), gid: os.Getgid(), skip: g.Match}
	if err := copyTree(tree, dst, ".", o); err != nil {
		t.Fatal(err)
	}
	if err := copyProtected(pristine, dst, g, copyOpts{uid: os.Getuid(), gid: os.Getgid(), skipGit: true, skip: func(string) bool { return true }}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"main.go":           "agent main",
		"a/b/c_test.go":     "pristine test",
		"a/b/c.go":          "agent c",
		"gone/x_test.go":    "pristine gone test",
		"vendor/m/m.go":     "pristine m",
		"x/testdata/in.txt": "pristine in",
		"file/y_test.go":    "pristine y",
		"sub/.git_test.go":  "pristine dot test",
		"new.go":            "agent new go",
	}
	got := map[string]string{}
	err = filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dst, p)
		got[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("copy of %s = %q, want %q", name, got[name], w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("the copy has %s, which it should not", name)
		}
	}
}
