package gitrepo

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// globPatterns are .gitignore lines, many taken from the cases of git's
// own wildmatch tests (t3070), plus quirks of the .gitignore syntax.
var globPatterns = []string{
	"foo", "fo?", "*", "f*", "*f", "*foo*", "*ob*a*r*", "*ab", `foo\*`, `foo\*bar`,
	`f\\oo`, "*[al]?", "[ten]", "**[!te]", "**[!ten]", "t[a-g]n", "t[!a-g]n", "t[^a-g]n",
	"a[]]b", "a[]-]b", "a[]a-]b", "]", "foo*bar", "foo**bar", "foo/*/bar", "foo/**/bar",
	"foo/**/**/bar", "**/foo", "**/bar*", "**/bar/*", "*/bar/**", "**/*", "*/*", "*/**",
	"**/x", "a/**", "a/**/x", "[[:alpha:]][[:digit:]][[:upper:]]", "[[:digit:][:upper:][:space:]]",
	"[[:digit:][:punct:][:space:]]", "[a-c[:digit:]x-z]", `[\-^]`, `[\]]`, `[\\]`, `[!\\]`,
	`[A-\\]`, "b*a", "*/.*", "**/.*", ".*", "[[:xdigit:]]", "[[:blank:]]x", "[[:space:]]x",
	"a[[:foo:]]", "[a-]", `\`, `a\`, "[", "[!", "[a", "*[", "[[:space:]", "[[:a",
	"-*-*-*-*-*-*-12-*-*-*-m-*-*-*", "**/*a*b*g*n*t", "*.c", "/*.c", "x/*.c", "/x",
	`\#x`, `\!x`, "#x", "!x", "!*", "*.txt", "abcd/**/*.txt", "deep/**", "**/deep/**",
	"foo/", "/foo/", "**/", "a/b/", "é", "a b", "a\\ ", "a  ", "a\\  ", "/", "//", "!",
	"foo/**/", "***/foo", "foo***", "a/***", "**foo", "foo/**bar", "[[:punct:]]*",
	"[[:cntrl:]]*", "[[:print:]]", "[[:graph:]]", "[[:lower:]]*", "[^[:lower:]]*",
	"[z-a]", "[a-a]", "[--0]", "*/", "?", "??", "*?", "[]", "[]]", "[!]]", "[\\",
}

// ignoreFiles are whole .gitignore files that test the line syntax.
var ignoreFiles = []string{
	"\xef\xbb\xbffoo\n",             // a byte order mark is skipped
	"\xef\xbb\xbf\xef\xbb\xbffoo\n", // only one
	"foo",                           // no final newline
	"foo\r\nbar\r\n",                // CRLF
	"foo\r\r\n",                     // only one CR goes
	"foo\rbar\n",                    // a lone CR is part of the line
	"fo\x00o\nbar\n",                // a NUL ends the line
	"# foo\n#bar\n \\#x\n",          // comments; a space before # is no comment
	"foo\n!foo\n",                   // the last rule wins
	"!foo\nfoo\n",
	"*\n!a*\n",
	"a \t\n", // tabs are not trimmed
	"\n\n\nx\n\n",
	"a/**\n!a/b\n",
	"x\n!x/\n",
}

// globPaths are the paths checked against every pattern.
var globPaths = []string{
	"foo", "fo", "fob", "f", "foo*", "foo*bar", `f\oo`, "ball", "ten", "tan", "tbn", "a]b",
	"a-b", "aab", "]", "foobar", "foo/baz/bar", "foo/bar", "foo/b/a/z/bar", "deep/foo/bar/baz",
	"x", "a/x", "a/b/x", "a/b/c/x", "a1B", "5", "A", "_", "b", "a.c", "x/a.c", "x/y/a.c",
	"x/.hidden", ".hidden", "-adobe-courier-bold-o-normal--12-120-75-75-m-70-iso8859-1",
	"abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txt", "abcd/x.txt", "x.txt", "[", `\`, `a\`,
	"#x", "!x", " x", "\tx", "é", "a b", "a ", "a  ", "ab", "bar", "bar/foo", "x/foo",
	"x/y/foo", "foox", "xfoo", "a/foo", "deep", "deep/x", "z/deep/x", "a/b", "a/b/c",
	"foo/x/y", "bar/x", "aXb/foo", "-", "0", "^", "Z", "z", "a\x01", "\x7f", ".", "x.",
}

// TestPatternsMatchGitCheckIgnore compares Ignored with
// `git check-ignore` for every pattern and path above, one pattern at a
// time, at the root and in a subdirectory's .gitignore.
func TestPatternsMatchGitCheckIgnore(t *testing.T) {
	needGit(t)
	env := gitEnv(t)
	repo := t.TempDir()
	git(t, env, repo, "init", "-q")
	if err := os.Mkdir(filepath.Join(repo, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	total := 0
	defer func() {
		// Guard the harness: most patterns must match something.
		if total < 1000 {
			t.Errorf("git check-ignore reported only %d ignored paths in all", total)
		}
	}()
	for _, dir := range []string{"", "sub"} {
		var paths []string
		for _, p := range globPaths {
			if p == "." {
				continue
			}
			if dir != "" {
				p = dir + "/" + p
			}
			paths = append(paths, p)
		}
		contents := append([]string(nil), ignoreFiles...)
		for _, pat := range globPatterns {
			contents = append(contents, pat+"\n")
		}
		for _, content := range contents {
			os.Remove(filepath.Join(repo, ".gitignore"))
			os.Remove(filepath.Join(repo, "sub", ".gitignore"))
			if err := os.WriteFile(filepath.Join(repo, dir, ".gitignore"), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			want := checkIgnore(t, env, repo, paths)

			b, err := NewBuilder(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if err := b.AddIgnoreFile(dir, []byte(content)); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range paths {
				if b.Ignored(p, false) {
					got = append(got, p)
				}
			}
			b.Close()
			total += len(want)
			if diff := cmp.Diff(want, got); diff != "" {
				pat := content
				t.Errorf(".gitignore %q in %q: ignored paths differ from git check-ignore (-git +got):\n%s", pat, dir, diff)
			}
		}
	}
}

// checkIgnore returns the paths git check-ignore reports as ignored.
func checkIgnore(t *testing.T, env []string, repo string, paths []string) []string {
	t.Helper()
	cmd := strings.Join(paths, "\x00") + "\x00"
	out, err := gitStdin(env, repo, cmd, "check-ignore", "--no-index", "--stdin", "-z")
	if err != nil && out == "" && !strings.Contains(err.Error(), "exit status 1") {
		t.Fatalf("git check-ignore: %v", err)
	}
	var got []string
	for _, p := range strings.Split(out, "\x00") {
		if p != "" {
			got = append(got, p)
		}
	}
	return got
}

// TestRandomTreesMatchGit builds random trees with random .gitignore files
// at every depth and checks that the Builder adds exactly what
// `git add -A` adds, with the same tree id.
func TestRandomTreesMatchGit(t *testing.T) {
	needGit(t)
	n := 40
	if testing.Short() {
		n = 8
	}
	for seed := int64(0); seed < int64(n); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			tree := t.TempDir()
			randomTree(t, rand.New(rand.NewSource(seed)), tree)
			wantFiles, wantTree := realGit(t, tree)
			b := feed(t, tree, seed)
			if diff := cmp.Diff(wantFiles, builderFiles(b)); diff != "" {
				t.Fatalf("added files differ from git add -A (-git +got):\n%s\nignore files:\n%s", diff, dumpIgnores(t, tree))
			}
			_, gotTree, _, err := b.Finish(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if gotTree != wantTree {
				t.Errorf("tree = %s, want %s", gotTree, wantTree)
			}
		})
	}
}

var (
	randomNames = []string{"a", "b", "foo", "bar", "Foo", "x.o", "y.log", "build", "doc", "a b",
		"é", "#hash", "!bang", "sp ", "[x]", "q?", "-", "a.txt", "b.TXT", ".hidden", "deep",
		"node_modules", "a\\b", "*", "tmp", "keep", "x.c", "lib.a"}
	randomRules = []string{"*.o", "build/", "/foo", "foo/", "!foo", "**/bar", "a/**", "**/deep/**",
		"doc/*.txt", "*.[oa]", "[!a]*", "x?o", `\#hash`, `\!bang`, `sp\ `, "sp ", "#comment", "",
		"!*.o", "Foo", "*.TXT", "deep/", "!deep/", "a/**/b", "*", "!/foo/bar", "b", "!b",
		"[[:upper:]]*", "[a-c]", `\[x\]`, "[x]", "*.log\r", "!keep", "!keep/", "tmp", "!tmp/keep",
		"!*/", "*/", "/*", "!/a", "!**/a", "node_modules/", "*.txt", "!a.txt", "/a/b", "deep/**/x.c",
		"**", "!**/keep/**", "\\*", "q\\?", "a\\\\b"}
)

// randomTree fills dir with a random tree: files, executables, symlinks,
// empty directories, submodule .git files and .gitignore files whose rules
// come from randomRules or from the tree's own paths.
func randomTree(t *testing.T, r *rand.Rand, dir string) {
	t.Helper()
	var paths []string
	var mk func(rel string, depth int)
	mk = func(rel string, depth int) {
		n := 1 + r.Intn(7)
		if depth == 0 {
			n = 8 + r.Intn(8)
		}
		for i := 0; i < n; i++ {
			name := randomNames[r.Intn(len(randomNames))]
			p := name
			if rel != "" {
				p = rel + "/" + name
			}
			full := filepath.Join(dir, filepath.FromSlash(p))
			if _, err := os.Lstat(full); err == nil {
				continue
			}
			paths = append(paths, p)
			switch k := r.Intn(10); {
			case k < 4 && depth < 4:
				if err := os.Mkdir(full, 0o755); err != nil {
					t.Fatal(err)
				}
				mk(p, depth+1)
			case k == 3:
				if err := os.Symlink(randomNames[r.Intn(len(randomNames))], full); err != nil {
					t.Fatal(err)
				}
			case k == 4:
				if err := os.WriteFile(full, []byte(p), 0o755); err != nil {
					t.Fatal(err)
				}
			default:
				if err := os.WriteFile(full, []byte(fmt.Sprint(r.Intn(3))), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		if depth > 0 && r.Intn(8) == 0 {
			os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel), ".git"), []byte("gitdir: /nonexistent\n"), 0o644)
		}
	}
	mk("", 0)
	// .gitignore files, in the root and in random directories.
	dirs := []string{""}
	for _, p := range paths {
		if fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); err == nil && fi.IsDir() {
			dirs = append(dirs, p)
		}
	}
	for _, d := range dirs {
		if d != "" && r.Intn(2) == 0 {
			continue
		}
		var lines []string
		for i, n := 0, 1+r.Intn(6); i < n; i++ {
			if r.Intn(3) == 0 && len(paths) > 0 {
				// A rule naming a path of the tree, relative to d
				// when it is inside.
				p := paths[r.Intn(len(paths))]
				if d != "" {
					if !strings.HasPrefix(p, d+"/") {
						p = p[strings.LastIndexByte(p, '/')+1:]
					} else {
						p = strings.TrimPrefix(p, d+"/")
					}
				}
				p = strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "#", `\#`, "!", `\!`).Replace(p)
				if strings.HasSuffix(p, " ") {
					p = strings.TrimSuffix(p, " ") + `\ `
				}
				for _, f := range []string{"/", "!", "**/", "/"} {
					if r.Intn(3) == 0 {
						switch f {
						case "/":
							p = "/" + strings.TrimPrefix(p, "/")
						case "!":
							p = "!" + p
						default:
							p = f + strings.TrimPrefix(p, "/")
						}
					}
				}
				if r.Intn(4) == 0 {
					p += "/"
				}
				lines = append(lines, p)
			} else {
				lines = append(lines, randomRules[r.Intn(len(randomRules))])
			}
		}
		content := strings.Join(lines, "\n")
		if r.Intn(2) == 0 {
			content += "\n"
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(d), ".gitignore"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func dumpIgnores(t *testing.T, tree string) string {
	var out []string
	filepath.Walk(tree, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Name() == ".gitignore" {
			data, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(tree, p)
			out = append(out, fmt.Sprintf("%s: %q", rel, data))
		}
		return nil
	})
	sort.Strings(out)
	return strings.Join(out, "\n")
}
