package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// errNotRegular is the error of a blob path that holds something other
// than a regular file: a FIFO would block its reader for ever, a symlink
// (to /dev/zero, say) would hash for ever. The store writes only regular
// files, so anything else was put there by hand or by an attack.
var errNotRegular = errors.New("not a regular file")

// openRegular opens the regular file at p for reading without following a
// symlink and without waiting for a FIFO's writer (O_NONBLOCK), and fails
// for anything else before a byte is read.
func openRegular(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &fs.PathError{Op: "open", Path: p, Err: fmt.Errorf("%w (a symlink)", errNotRegular)}
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: p, Err: fmt.Errorf("%w (%s)", errNotRegular, kind(fi.Mode()))}
	}
	return f, nil
}

// kind names a file mode's type for messages.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "not a file"
}
