package gitrepo

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/oci"
)

// needGit skips the test when git is not installed.
func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// gitEnv is an environment where no system or user configuration of this
// machine reaches git, like the model user's fresh home.
func gitEnv(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C")
}

// git runs git in dir and returns its standard output.
func git(t *testing.T, env []string, dir string, args ...string) string {
	t.Helper()
	out, err := gitErr(env, dir, args...)
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return out
}

func gitErr(env []string, dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%w: %s", err, stderr.String())
	}
	return stdout.String(), nil
}

// realGit makes a repository in a copy of tree with real git and returns
// `git ls-files -s` (mode, id and path of every added file) and the tree
// id.
func realGit(t *testing.T, tree string) (files map[string]string, treeID string) {
	t.Helper()
	env := gitEnv(t)
	dir := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", tree, dir).CombinedOutput(); err != nil {
		t.Fatalf("copying tree: %v: %s", err, out)
	}
	// No template: hooks and samples do not change what add does, and
	// copying them dominates the time of a small tree.
	git(t, env, dir, "init", "-q", "--template=")
	git(t, env, dir, "add", "-A")
	files = map[string]string{}
	for _, rec := range strings.Split(git(t, env, dir, "ls-files", "-s", "-z"), "\x00") {
		if rec == "" {
			continue
		}
		meta, path, _ := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		files[path] = f[0] + " " + f[1]
	}
	return files, strings.TrimSpace(git(t, env, dir, "write-tree"))
}

// feed gives the tree on disk to a new Builder the way the assembler does:
// .gitignore and .gitattributes files first, then every file and symlink in a shuffled order.
func feed(t *testing.T, tree string, seed int64, opts ...Option) *Builder {
	t.Helper()
	b, err := NewBuilder(t.TempDir(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	type item struct {
		rel  string
		info fs.FileInfo
	}
	var items []item
	err = filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(tree, p)
		if rel == "." || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if (d.Name() == ".gitignore" || d.Name() == ".gitattributes") && info.Mode().IsRegular() {
			content, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			add := b.AddIgnoreFile
			if d.Name() == ".gitattributes" {
				add = b.AddAttributesFile
			}
			if err := add(filepath.ToSlash(filepath.Dir(rel)), content); err != nil {
				t.Fatalf("adding %s: %v", rel, err)
			}
		}
		items = append(items, item{filepath.ToSlash(rel), info})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rand.New(rand.NewSource(seed)).Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	for _, it := range items {
		if b.Ignored(it.rel, false) {
			continue
		}
		p := filepath.Join(tree, filepath.FromSlash(it.rel))
		switch {
		case it.info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.AddSymlink(it.rel, target); err != nil {
				t.Fatalf("AddSymlink(%q): %v", it.rel, err)
			}
		case it.info.Mode().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			err = b.AddFile(it.rel, int64(it.info.Mode().Perm()), it.info.Size(), f)
			f.Close()
			if err != nil {
				t.Fatalf("AddFile(%q): %v", it.rel, err)
			}
		}
	}
	return b
}

// builderFiles lists what the Builder holds in the shape of realGit.
func builderFiles(b *Builder) map[string]string {
	got := map[string]string{}
	if err := b.files.files(func(f fileEntry) bool {
		got[f.path] = modeString(f.mode) + " " + f.id.String()
		return true
	}); err != nil {
		panic(err)
	}
	return got
}

// materialise writes entries under dir, as unpacking the layer would.
func materialise(t *testing.T, dir string, entries []oci.Entry) {
	t.Helper()
	for _, e := range entries {
		p := filepath.Join(dir, filepath.FromSlash(e.Header.Name))
		switch e.Header.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, fs.FileMode(e.Header.Mode)); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			rc, err := e.Open()
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(data)) != e.Header.Size {
				t.Fatalf("entry %q: header size %d, content %d bytes", e.Header.Name, e.Header.Size, len(data))
			}
			if err := os.WriteFile(p, data, fs.FileMode(e.Header.Mode)); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("entry %q: unexpected type %c", e.Header.Name, e.Header.Typeflag)
		}
	}
}

// writeTree creates files under dir: a map from slash path to content;
// a content starting with "->" makes a symlink, a path ending in "/" an
// empty directory, and a path ending in "*" an executable file.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(strings.TrimSuffix(p, "*")))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasPrefix(content, "->"):
			err = os.Symlink(content[2:], full)
		case strings.HasSuffix(p, "*"):
			err = os.WriteFile(full, []byte(content), 0o755)
		default:
			err = os.WriteFile(full, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func sortedKeys(m map[string]string) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

var testTime = time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)

// gitStdin runs git in dir with stdin and returns its standard output.
func gitStdin(env []string, dir, stdin string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%w: %s", err, stderr.String())
	}
	return stdout.String(), nil
}
