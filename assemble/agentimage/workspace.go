package agentimage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WorkspaceFiles are the files of the SSEBench home that an agent's build
// may read through the workspace context, besides its own folder (at its
// place in the home, agents/<folder>/): the SDK files docs/agents.md
// names. datasets/, other agents' folders, runs/ and the rest of the home
// are not there: they hold every task's answers and other people's work.
var WorkspaceFiles = []string{"VERSION", ".dockerignore"}

// Workspace makes, in a new directory under tmp, the workspace context of
// the agent folder agentDir: copies of WorkspaceFiles from home and of the
// folder (when it is inside home) at its place, with their modes and
// times. Symlinks are copied as symlinks, never followed. The caller
// removes the directory.
func Workspace(home, agentDir, tmp string) (string, error) {
	dir, err := os.MkdirTemp(tmp, "workspace-")
	if err != nil {
		return "", fmt.Errorf("making the agent's workspace context: %w", err)
	}
	fail := func(err error) (string, error) {
		os.RemoveAll(dir)
		return "", fmt.Errorf("making the agent's workspace context: %w", err)
	}
	for _, f := range WorkspaceFiles {
		fi, err := os.Lstat(filepath.Join(home, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fail(err)
		}
		if fi.Mode().IsRegular() {
			if err := copyEntry(filepath.Join(home, f), filepath.Join(dir, f), fi); err != nil {
				return fail(err)
			}
		}
	}
	absHome, err := filepath.Abs(home)
	if err != nil {
		return fail(err)
	}
	absAgent, err := filepath.Abs(agentDir)
	if err != nil {
		return fail(err)
	}
	rel, err := filepath.Rel(absHome, absAgent)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return dir, nil // a folder outside the home has no place in it
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
		return fail(err)
	}
	err = filepath.WalkDir(absAgent, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, err := filepath.Rel(absAgent, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return copyEntry(p, filepath.Join(dir, rel, r), fi)
	})
	if err != nil {
		return fail(err)
	}
	// Directory times last: writing into a directory changes its time.
	err = filepath.WalkDir(absAgent, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(absAgent, p)
		return os.Chtimes(filepath.Join(dir, rel, r), fi.ModTime(), fi.ModTime())
	})
	if err != nil {
		return fail(err)
	}
	return dir, nil
}

// copyEntry copies one file, directory or symlink with its mode and time.
func copyEntry(src, dst string, fi fs.FileInfo) error {
	switch {
	case fi.IsDir():
		if err := os.Mkdir(dst, fi.Mode().Perm()); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return os.Chmod(dst, fi.Mode().Perm())
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(t, dst)
	case fi.Mode().IsRegular():
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		if err := out.Close(); err != nil {
			return err
		}
		if err := os.Chmod(dst, fi.Mode().Perm()); err != nil {
			return err
		}
		return os.Chtimes(dst, fi.ModTime(), fi.ModTime())
	}
	return nil // FIFOs, sockets, devices: not part of a context
}
