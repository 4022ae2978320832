package sserun

import (
	"errors"
	"io/fs"
	"os"
	"path"
)

// Disown makes the tree at dir root's once the agent is gone: every entry
// owned by root, no setuid, setgid or sticky bit and no other-write bit
// left, and anything but directories and regular files (symlinks, FIFOs,
// sockets) removed. It is for what the agent leaves in a folder of the
// run that the host keeps (the archive): a setuid file or a symlink of
// the agent's making must not reach the host. dir itself must not be a
// symlink; nothing is followed out of it.
func Disown(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return errors.New(dir + " is not a directory")
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	// Root reads every directory whatever its mode, so the order of the
	// changes does not matter.
	var walk func(rel string, depth int)
	walk = func(rel string, depth int) {
		if depth > maxCopyDepth {
			keep(errors.New(path.Join(dir, rel) + ": directories nested too deep"))
			return
		}
		fi, err := root.Lstat(rel)
		if err != nil {
			keep(err)
			return
		}
		switch fi.Mode().Type() {
		case fs.ModeDir:
			keep(root.Lchown(rel, 0, 0))
			keep(root.Chmod(rel, 0o755))
			d, err := root.Open(rel)
			if err != nil {
				keep(err)
				return
			}
			ents, err := d.ReadDir(-1)
			d.Close()
			keep(err)
			for _, e := range ents {
				walk(path.Join(rel, e.Name()), depth+1)
			}
		case 0:
			keep(root.Lchown(rel, 0, 0))
			// After the chown, which clears set-id bits anyway.
			keep(root.Chmod(rel, fi.Mode().Perm()&^0o022|0o600))
		default:
			keep(root.Remove(rel))
		}
	}
	walk(".", 0)
	return firstErr
}
