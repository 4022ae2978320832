package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sampleTree exercises what `git add -A` decides: rules at several depths,
// negations, directory-only and anchored rules, "**", classes, escapes,
// trailing spaces, re-inclusion under an excluded directory, executables,
// symlinks, odd names, empty directories and submodule .git files.
var sampleTree = map[string]string{
	".gitignore": "# comment\n*.o\n!keep.o\nbuild/\n/root-only\n**/logs/*.log\n" +
		"doc/**/*.tmp\n\\#hash\n\\!bang\ntrail   \nescaped\\ \n[!a-c]x\ncache/\n!cache/keep\n" +
		"vendor/**\n!vendor/keep/\n!vendor/keep/**\nspaced dir/ignored\r\n/nested-ig/.gitignore\n",
	"main.c":                "int main(){}\n",
	"main.o":                "obj",
	"keep.o":                "kept",
	"build/out":             "x",
	"src/build":             "a file named build is kept",
	"src/build2/x":          "y",
	"root-only":             "ignored at root",
	"src/root-only":         "kept below",
	"logs/a.log":            "l",
	"src/logs/b.log":        "l",
	"src/logs/b.txt":        "t",
	"doc/a.tmp":             "kept: ** needs a slash",
	"doc/x/y/z.tmp":         "ignored",
	"#hash":                 "ignored",
	"#other":                "kept",
	"!bang":                 "ignored",
	"trail":                 "ignored despite trailing spaces in the rule",
	"escaped ":              "ignored",
	"escaped":               "kept",
	"dx":                    "ignored",
	"ax":                    "kept",
	"cache/keep":            "cannot be re-included",
	"cache/other":           "ignored",
	"cache/sub/f":           "ignored",
	"vendor/a":              "ignored",
	"vendor/keep/b":         "re-included",
	"spaced dir/ignored":    "ignored",
	"spaced dir/kept":       "kept",
	"src/.gitignore":        "*.txt\n!important.txt\n/local\nsub/*.c\n",
	"src/a.txt":             "ignored by src/.gitignore",
	"src/important.txt":     "re-included",
	"src/local":             "anchored to src",
	"src/deeper/local":      "kept",
	"src/sub/x.c":           "ignored",
	"src/sub/deep/y.c":      "kept: * does not cross /",
	"src/deeper/.gitignore": "!*.o\n",
	"src/deeper/z.o":        "re-included by a deeper rule",
	"run.sh*":               "#!/bin/sh\n",
	"link":                  "->main.c",
	"dangling":              "->nowhere",
	"dirlink":               "->src",
	"ünïcödé name":          "non-ASCII",
	"tab\tname":             "tab",
	"quote\"name":           "quote",
	"back\\slash":           "backslash",
	"empty/":                "",
	"onlyignored/x.o":       "dir with only ignored files",
	"sub/.git":              "gitdir: ../.git/modules/sub\n",
	"sub/file":              "kept: the .git file points nowhere",
	"Case.O":                "kept: matching is case-sensitive",
	"empty-file":            "",
	"a.b":                   "tree order",
	"a/b":                   "tree order",
	"a-b":                   "tree order",
	"mode0654":              "group exec only",
	"mode0744":              "owner exec only",
	"mode0611":              "others",
	"symdir/.gitignore":     "->rules",
	"symdir/rules":          "*\n",
	"symdir/x":              "kept: git does not follow a symlinked .gitignore",
	"nested-ig/.gitignore":  "*.x\n",
	"nested-ig/a.x":         "ignored by an ignored .gitignore",
	"nested-ig/b":           "kept",
}

// writeSample writes sampleTree under dir, with the modes its names say.
func writeSample(t *testing.T, dir string) {
	t.Helper()
	writeTree(t, dir, sampleTree)
	for _, m := range []string{"0654", "0744", "0611"} {
		perm, _ := strconv.ParseUint(m, 8, 32)
		if err := os.Chmod(filepath.Join(dir, "mode"+m), os.FileMode(perm)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBuilderMatchesGit(t *testing.T) {
	needGit(t)
	tree := t.TempDir()
	writeSample(t, tree)
	wantFiles, wantTree := realGit(t, tree)
	// Guard the fixture itself: git must see a mix of both.
	for _, p := range []string{"keep.o", "vendor/keep/b", "symdir/x", "nested-ig/b", "mode0744", "src/important.txt", "src/deeper/z.o", "sub/file", "link", "escaped"} {
		if _, ok := wantFiles[p]; !ok {
			t.Errorf("git did not add %q", p)
		}
	}
	for _, p := range []string{"main.o", "cache/keep", "src/a.txt", "trail", "escaped ", "sub/.git", "dx", "nested-ig/a.x", "nested-ig/.gitignore"} {
		if _, ok := wantFiles[p]; ok {
			t.Errorf("git added %q", p)
		}
	}

	// Directories: what Ignored says must be what check-ignore says.
	var dirs []string
	filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != tree {
			rel, _ := filepath.Rel(tree, p)
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return nil
	})
	env := gitEnv(t)
	repo := filepath.Join(t.TempDir(), "repo")
	if out, err := exec.Command("cp", "-a", tree, repo).CombinedOutput(); err != nil {
		t.Fatalf("copying tree: %v: %s", err, out)
	}
	git(t, env, repo, "init", "-q", "--template=")
	wantDirs := checkIgnore(t, env, repo, dirs)
	if len(wantDirs) < 3 { // build, cache, cache/sub
		t.Errorf("git ignores only directories %q", wantDirs)
	}

	for _, seed := range []int64{1, 2, 3} {
		b := feed(t, tree, seed, WithTime(testTime))
		var gotDirs []string
		for _, d := range dirs {
			if b.Ignored(d, true) {
				gotDirs = append(gotDirs, d)
			}
		}
		if diff := cmp.Diff(wantDirs, gotDirs); diff != "" {
			t.Errorf("seed %d: ignored directories differ from git check-ignore (-want +got):\n%s", seed, diff)
		}
		if diff := cmp.Diff(wantFiles, builderFiles(b)); diff != "" {
			t.Errorf("seed %d: added files differ from git add -A (-want +got):\n%s", seed, diff)
		}
		_, gotTree, _, err := b.Finish(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if gotTree != wantTree {
			t.Errorf("seed %d: tree = %s, want %s (git write-tree)", seed, gotTree, wantTree)
		}
	}
}

func TestRepositoryWorksWithGit(t *testing.T) {
	needGit(t)
	env := gitEnv(t)
	tree := t.TempDir()
	writeSample(t, tree)
	// A big file, to cross zlib and buffer boundaries.
	big := bytes.Repeat([]byte("0123456789abcdef\n"), 300000)
	if err := os.WriteFile(filepath.Join(tree, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	_, wantTree := realGit(t, tree)

	b := feed(t, tree, 7, WithTime(testTime))
	entries, treeID, commitID, err := b.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if treeID != wantTree {
		t.Errorf("tree = %s, want %s", treeID, wantTree)
	}
	for _, e := range entries {
		if e.Header.Uid != 1000 || e.Header.Gid != 1000 {
			t.Errorf("entry %q owned %d:%d, want 1000:1000", e.Header.Name, e.Header.Uid, e.Header.Gid)
		}
		if !strings.HasPrefix(e.Header.Name, ".git") {
			t.Errorf("entry %q is outside .git", e.Header.Name)
		}
	}
	materialise(t, tree, entries)

	if out, err := gitErr(env, tree, "fsck", "--strict", "--no-dangling"); err != nil || out != "" {
		t.Errorf("git fsck --strict: %v\n%s", err, out)
	}
	if got, want := git(t, env, tree, "log", "--format=%H %an <%ae> %at %cn <%ce> %ct %s"),
		commitID+" SSEBench Agent <agent@ssebench.invalid> 1714979289 SSEBench Agent <agent@ssebench.invalid> 1714979289 buggy commit\n"; got != want {
		t.Errorf("git log = %q, want %q", got, want)
	}
	if got := git(t, env, tree, "rev-list", "--count", "HEAD"); got != "1\n" {
		t.Errorf("commits = %q, want 1", got)
	}
	wantCommit := "tree " + wantTree + "\n" +
		"author SSEBench Agent <agent@ssebench.invalid> 1714979289 +0000\n" +
		"committer SSEBench Agent <agent@ssebench.invalid> 1714979289 +0000\n\nbuggy commit\n"
	if got := git(t, env, tree, "cat-file", "-p", "HEAD"); got != wantCommit {
		t.Errorf("git cat-file -p HEAD (-want +got):\n%s", cmp.Diff(wantCommit, got))
	}
	if got := git(t, env, tree, "symbolic-ref", "HEAD"); got != "refs/heads/master\n" {
		t.Errorf("HEAD = %q, want refs/heads/master", got)
	}
	// diff-files trusts the stat data without refreshing: before the
	// first status it reports every file; status must still be clean.
	if got := git(t, env, tree, "status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Errorf("git status --porcelain = %q, want nothing", got)
	}
	if got := git(t, env, tree, "diff-files", "--name-only"); got != "" {
		t.Errorf("after status, git diff-files = %q, want nothing", got)
	}
	if got := git(t, env, tree, "reflog", "--format=%gs"); got != "commit (initial): buggy commit\n" {
		t.Errorf("git reflog = %q", got)
	}
	// The index holds what git add -A would.
	if got, want := git(t, env, tree, "ls-files", "-s"), git(t, env, tree, "ls-tree", "-r", "--format=%(objectmode) %(objectname) 0\t%(path)", "HEAD"); got != want {
		t.Errorf("index differs from HEAD (-want +got):\n%s", cmp.Diff(want, got))
	}
	// A change is seen, so the index is not lying either.
	if err := os.WriteFile(filepath.Join(tree, "main.c"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := git(t, env, tree, "status", "--porcelain"); got != " M main.c\n" {
		t.Errorf("after a change, git status --porcelain = %q, want \" M main.c\\n\"", got)
	}
}

func TestDeterministic(t *testing.T) {
	tree := t.TempDir()
	writeSample(t, tree)
	read := func(seed int64) map[string]string {
		b := feed(t, tree, seed, WithTime(testTime))
		entries, _, _, err := b.Finish(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, e := range entries {
			h := e.Header
			s := fmt.Sprintf("%c %o %d:%d %s\n", h.Typeflag, h.Mode, h.Uid, h.Gid, h.ModTime)
			if e.Open != nil {
				rc, err := e.Open()
				if err != nil {
					t.Fatal(err)
				}
				data, _ := io.ReadAll(rc)
				rc.Close()
				s += string(data)
			}
			got[h.Name] = s
		}
		return got
	}
	first := read(11)
	if diff := cmp.Diff(first, read(12)); diff != "" {
		t.Errorf("two builds of the same tree differ (-first +second):\n%s", diff)
	}
}

func TestEmptyTree(t *testing.T) {
	b, err := NewBuilder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, treeID, _, err := b.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// git's well-known empty tree.
	if want := "4b825dc642cb6eb9a060e54bf8d69288fbee4904"; treeID != want {
		t.Errorf("empty tree = %s, want %s", treeID, want)
	}
}

// addThenFinish is err, or Finish's error when err is nil.
func addThenFinish(b *Builder, err error) error {
	if err != nil {
		return err
	}
	_, _, _, err = b.Finish(context.Background())
	return err
}

func TestAddErrors(t *testing.T) {
	tests := []struct {
		name string
		run  func(b *Builder) error
		want error // nil: any error
	}{
		{"git file at root", func(b *Builder) error { return b.AddFile(".git", 0o644, 1, strings.NewReader("x")) }, ErrGitFileAtRoot},
		{"upper-case .GIT", func(b *Builder) error { return b.AddFile(".GIT/x", 0o644, 1, strings.NewReader("x")) }, ErrInvalidPath},
		{"NTFS short name", func(b *Builder) error { return b.AddFile("d/git~1", 0o644, 1, strings.NewReader("x")) }, ErrInvalidPath},
		{"symlinked .gitmodules", func(b *Builder) error { return b.AddSymlink(".gitmodules", "x") }, ErrInvalidPath},
		{"short content", func(b *Builder) error { return b.AddFile("a", 0o644, 5, strings.NewReader("x")) }, errSizeMismatch},
		{"long content", func(b *Builder) error { return b.AddFile("a", 0o644, 1, strings.NewReader("xy")) }, errSizeMismatch},
		{"unclean path", func(b *Builder) error { return b.AddFile("a/../b", 0o644, 1, strings.NewReader("x")) }, nil},
		// A path added twice, or a file where a directory is, is refused
		// by Finish: the files wait on disk until then.
		{"twice", func(b *Builder) error {
			b.AddFile("a", 0o644, 1, strings.NewReader("x"))
			return addThenFinish(b, b.AddFile("a", 0o644, 1, strings.NewReader("x")))
		}, nil},
		{"file then dir", func(b *Builder) error {
			b.AddFile("a", 0o644, 1, strings.NewReader("x"))
			return addThenFinish(b, b.AddFile("a/b", 0o644, 1, strings.NewReader("x")))
		}, nil},
		{"dir then file", func(b *Builder) error {
			b.AddFile("a/b", 0o644, 1, strings.NewReader("x"))
			return addThenFinish(b, b.AddSymlink("a", "x"))
		}, nil},
		{"ignore rules after files", func(b *Builder) error {
			b.AddFile("a", 0o644, 1, strings.NewReader("x"))
			return b.AddIgnoreFile("", []byte("a\n"))
		}, errSealed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := NewBuilder(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			err = tt.run(b)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Errorf("error = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestInvalidPathsMatchGit checks that AddFile refuses exactly the names on
// which `git add -A` fails.
func TestInvalidPathsMatchGit(t *testing.T) {
	needGit(t)
	env := gitEnv(t)
	names := []string{".Git", "git~1", "GIT~1", ".git.", ".git ", ".git..", ".git::$INDEX_ALLOCATION",
		".gitmodules", ".gitmodules ", ".GITMODULES", "git~2", ".git~1", "x.git", "a\\b", ".gitx", "gitmod~1"}
	for _, name := range names {
		for _, symlink := range []bool{false, true} {
			t.Run(fmtName(name, symlink), func(t *testing.T) {
				dir := t.TempDir()
				git(t, env, dir, "init", "-q")
				p := filepath.Join(dir, "d", name)
				os.Mkdir(filepath.Join(dir, "d"), 0o755)
				var err error
				if symlink {
					err = os.Symlink("target", p)
				} else {
					err = os.WriteFile(p, []byte("x"), 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
				_, gitFailed := gitErr(env, dir, "add", "-A")

				b, err := NewBuilder(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				if symlink {
					err = b.AddSymlink("d/"+name, "target")
				} else {
					err = b.AddFile("d/"+name, 0o644, 1, strings.NewReader("x"))
				}
				if got, want := errors.Is(err, ErrInvalidPath), gitFailed != nil; got != want {
					t.Errorf("Add refused = %v (%v), git add -A failed = %v (%v)", got, err, want, gitFailed)
				}
			})
		}
	}
}

func fmtName(name string, symlink bool) string {
	if symlink {
		return "symlink " + name
	}
	return "file " + name
}

func TestUserConfigMatchesGit(t *testing.T) {
	needGit(t)
	for _, id := range [][2]string{
		{DefaultName, DefaultEmail},
		{" lead", "trail "},
		{"semi;colon", "hash#mark"},
		{`quo"te`, `back\slash`},
		{"tab\tname", "x@y"},
	} {
		t.Run(id[0], func(t *testing.T) {
			env := gitEnv(t)
			home := strings.TrimPrefix(env[len(env)-3], "HOME=")
			git(t, env, home, "config", "--global", "user.name", id[0])
			git(t, env, home, "config", "--global", "user.email", id[1])
			want, err := os.ReadFile(filepath.Join(home, ".gitconfig"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(UserConfig(id[0], id[1]))); diff != "" {
				t.Errorf("UserConfig (-git +got):\n%s", diff)
			}
		})
	}
}

func TestOptions(t *testing.T) {
	tests := []struct {
		name string
		opt  Option
		ok   bool
	}{
		{"time", WithTime(testTime), true},
		{"time before 1970", WithTime(testTime.AddDate(-60, 0, 0)), false},
		{"identity", WithIdentity("A", "a@b"), true},
		{"identity with bracket", WithIdentity("A<", "a@b"), false},
		{"identity empty", WithIdentity("", "a@b"), false},
		{"branch", WithBranch("main"), true},
		{"nested branch", WithBranch("feature/x"), true},
		{"branch with space", WithBranch("a b"), false},
		{"branch with dot dot", WithBranch("a..b"), false},
		{"branch lock", WithBranch("a.lock"), false},
		{"message", WithMessage("fix"), true},
		{"empty message", WithMessage(" "), false},
		{"compression", WithCompression(9), true},
		{"compression too high", WithCompression(10), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := makeOptions(tt.opt)
			if (err == nil) != tt.ok {
				t.Errorf("makeOptions() error = %v, want ok = %v", err, tt.ok)
			}
		})
	}
}

func TestIgnoredGitEntries(t *testing.T) {
	tests := []struct {
		path  string
		isDir bool
		want  bool
	}{
		{".git", false, false}, // so that AddFile reports ErrGitFileAtRoot
		{".git", true, true},
		{"sub/.git", false, true},
		{"sub/.git", true, true},
		{"sub/.git/config", false, true},
		{".github/workflows/ci.yml", false, false},
		{"x.git", false, false},
	}
	b, err := NewBuilder(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, tt := range tests {
		if got := b.Ignored(tt.path, tt.isDir); got != tt.want {
			t.Errorf("Ignored(%q, %v) = %v, want %v", tt.path, tt.isDir, got, tt.want)
		}
	}
}
