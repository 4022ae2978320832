package sserun

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// maxCopyDepth bounds directory nesting in a copied tree: a tree that the
// agent changes during the copy could otherwise send the walk in circles.
const maxCopyDepth = 256

// copyOpts says who owns a copy and how its modes are set.
type copyOpts struct {
	uid, gid int
	// readOnly gives files mode 0644 or 0755 (by the owner's execute bit)
	// and directories 0755: task files that scripts read but must not
	// change. Otherwise modes are kept, without setuid, setgid and sticky
	// bits, and directories are always open to their owner.
	readOnly bool
	// reader, when set, limits the copy to regular files that this user
	// (uid, gid) can read. The agent may have hard-linked a file it
	// cannot read into its tree; root must not hand it over.
	reader *[2]int
	// skipGit leaves out every directory named .git, at any depth (a
	// submodule's .git file stays), as the tool layer's step 7 does.
	skipGit bool
	// skip, when set, leaves out every entry below the top for whose
	// path (slash-separated, relative to the source) it is true, and
	// with a directory all it holds: the protected paths, which
	// copyProtected then takes from the pristine tree.
	skip func(rel string) bool
}

// CopyOptions says how CopyTree copies.
type CopyOptions struct {
	// UID and GID own every entry of the copy.
	UID, GID int
	// SkipGitDirs leaves out every directory named .git, at any depth.
	SkipGitDirs bool
}

// CopyTree copies src/rel to dst/rel as the daemon copies a tree for a
// script: through an os.Root (symlinks copied, never followed out of src),
// directories, regular files and symlinks only, modes kept without setuid,
// setgid and sticky bits, modification times kept. dst must be a fresh
// directory nobody else can write to.
func CopyTree(src, dst, rel string, o CopyOptions) error {
	return copyTree(src, dst, rel, copyOpts{uid: o.UID, gid: o.GID, skipGit: o.SkipGitDirs})
}

// copyTree copies the tree src/rel (a directory, a file or a symlink)
// to dst/rel, creating dst/rel's missing parents as directories owned
// like the copy. dst must be a fresh directory nobody else can write to.
//
// The source is read through an os.Root, because it may belong to the
// agent, who may have planted symlinks pointing at what it must not read:
// symlinks are copied as symlinks, never followed out of src, and only
// directories, regular files and symlinks are copied (a FIFO would block
// the daemon). Modification times are kept, so that make and friends see
// the tree as it was.
func copyTree(src, dst, rel string, o copyOpts) error {
	root, err := os.OpenRoot(src)
	if err != nil {
		return fmt.Errorf("copying %s: %w", src, err)
	}
	defer root.Close()
	rel = path.Clean(rel)
	if dir := path.Dir(rel); dir != "." {
		if err := mkdirOwned(dst, dir, o); err != nil {
			return err
		}
	}
	c := copier{root: root, dst: dst, o: o}
	if err := c.copy(rel, 0); err != nil {
		return fmt.Errorf("copying %s: %w", filepath.Join(src, rel), err)
	}
	return nil
}

type copier struct {
	root *os.Root
	dst  string
	o    copyOpts
}

func (c *copier) copy(rel string, depth int) error {
	if depth > maxCopyDepth {
		return fmt.Errorf("%s: directories nested more than %d deep", rel, maxCopyDepth)
	}
	fi, err := c.root.Lstat(rel)
	if err != nil {
		return err
	}
	target := filepath.Join(c.dst, filepath.FromSlash(rel))
	switch fi.Mode().Type() {
	case fs.ModeDir:
		if rel == "." {
			// The top of the copy exists already; only its mode is set.
			if err := os.Chmod(target, c.dirMode(fi.Mode())); err != nil {
				return err
			}
		} else if err := os.Mkdir(target, c.dirMode(fi.Mode())); err != nil {
			return err
		}
		if err := os.Lchown(target, c.o.uid, c.o.gid); err != nil {
			return err
		}
		d, err := c.root.Open(rel)
		if err != nil {
			return err
		}
		ents, err := d.ReadDir(-1)
		d.Close()
		if err != nil {
			return err
		}
		for _, e := range ents {
			if c.o.skipGit && e.Name() == ".git" && e.IsDir() {
				continue
			}
			if c.o.skip != nil && c.o.skip(path.Join(rel, e.Name())) {
				continue
			}
			if err := c.copy(path.Join(rel, e.Name()), depth+1); err != nil {
				return err
			}
		}
		// After the children, whose creation changed it.
		return os.Chtimes(target, time.Time{}, fi.ModTime())
	case 0:
		return c.copyFile(rel, target, fi)
	case fs.ModeSymlink:
		link, err := c.root.Readlink(rel)
		if err != nil {
			return err
		}
		if err := os.Symlink(link, target); err != nil {
			return err
		}
		return os.Lchown(target, c.o.uid, c.o.gid)
	default:
		return nil // sockets, FIFOs and devices are no part of a project
	}
}

func (c *copier) copyFile(rel, target string, fi fs.FileInfo) error {
	if c.o.reader != nil && !readable(fi, c.o.reader[0], c.o.reader[1]) {
		return nil
	}
	// O_NONBLOCK: if the entry became a FIFO since Lstat, opening it must
	// not hang; the Stat below then refuses it.
	in, err := c.root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: changed while it was being copied", rel)
	}
	if c.o.reader != nil && !readable(st, c.o.reader[0], c.o.reader[1]) {
		return nil // changed since Lstat: what was opened counts
	}
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Chown(c.o.uid, c.o.gid); err != nil {
		out.Close()
		return err
	}
	// Chmod after Chown: chown clears the setuid bits a mode might set.
	if err := out.Chmod(c.fileMode(st.Mode())); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chtimes(target, time.Time{}, st.ModTime())
}

// copyProtected copies from the pristine tree src into dst every path
// protected matches, with all it holds (a directory such as vendor/
// whole), and nothing else: dst is a copy of the agent's tree made with
// copyOpts.skip set to protected.Match, so every file is copied once,
// from one tree or the other, and the agent's additions at protected
// paths are absent. Directories that lead to a protected path are made
// where the agent removed them; where the agent put a file or a symlink
// instead, it is replaced, so that nothing is ever written through a
// symlink of the agent's. Only directories that can hold a match are
// read (MatchBelow): a pattern such as "**/*_test.go" reads every one,
// "tests/**" one.
func copyProtected(src, dst string, protected *contract.Globs, o copyOpts) error {
	if protected.Empty() {
		return nil
	}
	root, err := os.OpenRoot(src)
	if err != nil {
		return fmt.Errorf("copying the protected paths of %s: %w", src, err)
	}
	defer root.Close()
	o.skip = nil
	c := copier{root: root, dst: dst, o: o}
	if err := c.overlay(".", 0, protected); err != nil {
		return fmt.Errorf("copying the protected paths of %s: %w", src, err)
	}
	return nil
}

// overlay copies the protected entries below dir, a directory of the
// source that is not protected itself.
func (c *copier) overlay(dir string, depth int, protected *contract.Globs) error {
	if depth > maxCopyDepth {
		return fmt.Errorf("%s: directories nested more than %d deep", dir, maxCopyDepth)
	}
	d, err := c.root.Open(dir)
	if err != nil {
		return err
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, e := range ents {
		rel := path.Join(dir, e.Name())
		switch {
		case c.o.skipGit && e.Name() == ".git" && e.IsDir():
		// Match, not Protects: no directory above rel matched, or the
		// walk would not be here.
		case protected.Match(rel):
			if err := c.makeRoom(rel); err != nil {
				return err
			}
			if err := c.copy(rel, depth+1); err != nil {
				return err
			}
		case e.IsDir() && protected.MatchBelow(rel):
			if err := c.overlay(rel, depth+1, protected); err != nil {
				return err
			}
		}
	}
	return nil
}

// makeRoom makes every directory above rel in the copy a directory of
// its own (never a symlink), as the source has it, and removes whatever
// is at rel.
func (c *copier) makeRoom(rel string) error {
	parts := strings.Split(rel, "/")
	for i := 1; i <= len(parts); i++ {
		p := strings.Join(parts[:i], "/")
		target := filepath.Join(c.dst, filepath.FromSlash(p))
		fi, err := os.Lstat(target)
		switch {
		case err == nil && fi.IsDir() && i < len(parts):
			continue
		case err == nil:
			// The agent's file or symlink where the pristine tree has a
			// directory, or what is at rel itself: its content is not
			// what the scripts may see.
			if err := os.RemoveAll(target); err != nil {
				return err
			}
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		if i == len(parts) {
			return nil
		}
		src, err := c.root.Lstat(p)
		if err != nil {
			return err
		}
		if err := os.Mkdir(target, c.dirMode(src.Mode())); err != nil {
			return err
		}
		if err := os.Lchown(target, c.o.uid, c.o.gid); err != nil {
			return err
		}
	}
	return nil
}

func (c *copier) dirMode(m fs.FileMode) fs.FileMode {
	if c.o.readOnly {
		return 0o755
	}
	return m.Perm() | 0o700
}

func (c *copier) fileMode(m fs.FileMode) fs.FileMode {
	if c.o.readOnly {
		if m&0o100 != 0 {
			return 0o755
		}
		return 0o644
	}
	return m.Perm()
}

// mkdirOwned creates dst/rel and its missing parents, owned as o says.
func mkdirOwned(dst, rel string, o copyOpts) error {
	if rel == "." || rel == "" {
		return nil
	}
	if err := mkdirOwned(dst, path.Dir(rel), o); err != nil {
		return err
	}
	p := filepath.Join(dst, filepath.FromSlash(rel))
	if err := os.Mkdir(p, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	return os.Lchown(p, o.uid, o.gid)
}

// readable reports whether uid (with primary group gid only) may read the
// file fi describes.
func readable(fi fs.FileInfo, uid, gid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	perm := fi.Mode().Perm()
	switch {
	case int(st.Uid) == uid:
		return perm&0o400 != 0
	case int(st.Gid) == gid:
		return perm&0o040 != 0
	}
	return perm&0o004 != 0
}
