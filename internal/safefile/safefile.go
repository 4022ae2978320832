// Package safefile provides the module's careful file access: reading a
// file of a folder (a task folder, an agent folder) without leaving the
// folder, so that a config.yaml, agent.yaml or Dockerfile that is a symlink
// to a host file out of its folder is refused and its content never read,
// parsed or echoed in an error (Read); and replacing a file atomically,
// through a temporary file renamed into place, so that no reader ever sees
// half a file (WriteFile, WriteBytes).
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrOutside marks a file that is, or goes through, a symlink leading out
// of its folder. Match it with errors.Is.
var ErrOutside = errors.New("a symlink out of its folder")

// Read returns the content of rel (a slash-separated path relative to dir)
// read through an os.Root, which follows symlinks only while they stay inside
// dir. A missing file is an error matching fs.ErrNotExist; one that leaves
// dir matches ErrOutside; one that is not a regular file, or is larger than
// max bytes, is refused too. Errors name the file as dir/rel.
func Read(dir, rel string, max int64) ([]byte, error) {
	name := filepath.Join(dir, filepath.FromSlash(rel))
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	// O_NONBLOCK: opening a FIFO planted in the folder must not hang; it
	// is refused below as not a regular file.
	f, err := root.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if isEscape(err) {
			return nil, fmt.Errorf("%s is %w: make it a regular file of %s", name, ErrOutside, dir)
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", name, fi.Mode().Type())
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d bytes such a file may have", name, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is more than the %d bytes such a file may have", name, max)
	}
	return b, nil
}

// isEscape reports whether err is os.Root's refusal of a path that leaves
// the root (the standard library does not export it).
func isEscape(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent"
}
