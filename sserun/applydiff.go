package sserun

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// applyDiff applies a unified diff (git's, or a plain one with a/ and b/
// prefixes, as `patch -p1` reads it) to the tree at dir: the grade's hidden
// tests. The daemon runs as root and the tree is the agent's, so every
// path goes through an os.Root: a symlink the agent left cannot make the
// daemon write outside the tree, and a path of the diff that is a symlink
// is refused. New files and directories are owned by uid:gid, the script
// runner, like the rest of the copy. Hunks must apply exactly; a failure
// leaves the copy half-patched, and the caller discards it.
func applyDiff(patch []byte, dir string, uid, gid int) error {
	files, _, err := gitdiff.Parse(bytes.NewReader(patch))
	if err != nil {
		return fmt.Errorf("reading the diff: %w", err)
	}
	if len(files) == 0 {
		return errors.New("the diff changes no file")
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	// git's own headers name paths without their a/ and b/; the
	// traditional ones keep them.
	strip := !bytes.HasPrefix(patch, []byte("diff --git ")) && !bytes.Contains(patch, []byte("\ndiff --git "))
	for _, f := range files {
		oldName, err := diffPath(f.OldName, strip)
		if err != nil {
			return err
		}
		newName, err := diffPath(f.NewName, strip)
		if err != nil {
			return err
		}
		if err := applyFile(root, f, oldName, newName, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// diffPath cleans a path of the diff and checks that it stays in the tree
// and out of .git.
func diffPath(p string, strip bool) (string, error) {
	if p == "" {
		return "", nil
	}
	if strip {
		if _, rest, ok := strings.Cut(p, "/"); ok {
			p = rest
		}
	}
	c := path.Clean(p)
	if path.IsAbs(c) || c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("the diff names %q, which is not a path inside the tree", p)
	}
	for _, part := range strings.Split(c, "/") {
		if part == ".git" {
			return "", fmt.Errorf("the diff names %q, inside a .git directory", p)
		}
	}
	return c, nil
}

func applyFile(root *os.Root, f *gitdiff.File, oldName, newName string, uid, gid int) error {
	var src io.ReaderAt = bytes.NewReader(nil)
	mode := fs.FileMode(0o644)
	if !f.IsNew {
		fi, err := root.Lstat(oldName)
		if err != nil {
			return fmt.Errorf("%s: %w", oldName, err)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", oldName)
		}
		mode = fi.Mode().Perm()
		fh, err := root.Open(oldName)
		if err != nil {
			return fmt.Errorf("%s: %w", oldName, err)
		}
		defer fh.Close()
		src = fh
	}
	var out bytes.Buffer
	if err := gitdiff.Apply(&out, src, f); err != nil {
		name := newName
		if name == "" {
			name = oldName
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	if f.IsDelete {
		return root.Remove(oldName)
	}
	if f.NewMode != 0 {
		mode = f.NewMode.Perm()
	}
	if err := mkdirs(root, path.Dir(newName), uid, gid); err != nil {
		return err
	}
	if fi, err := root.Lstat(newName); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", newName)
	} else if err == nil && f.IsNew {
		return fmt.Errorf("%s: the diff creates it, and it exists", newName)
	}
	if err := root.WriteFile(newName, out.Bytes(), mode); err != nil {
		return fmt.Errorf("writing %s: %w", newName, err)
	}
	// WriteFile keeps an existing file's owner and mode, and a new one
	// gets the umask's.
	if err := root.Lchown(newName, uid, gid); err != nil {
		return err
	}
	if err := root.Chmod(newName, mode); err != nil {
		return err
	}
	if f.IsRename && oldName != newName {
		return root.Remove(oldName)
	}
	return nil
}

// mkdirs creates dir and its missing parents inside root, owned by
// uid:gid.
func mkdirs(root *os.Root, dir string, uid, gid int) error {
	if dir == "." {
		return nil
	}
	if fi, err := root.Lstat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if err := mkdirs(root, path.Dir(dir), uid, gid); err != nil {
		return err
	}
	if err := root.Mkdir(dir, 0o755); err != nil {
		return err
	}
	return root.Lchown(dir, uid, gid)
}
