package safefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// WriteFile replaces the file at path with what write writes, atomically:
// write fills a temporary file in path's directory, which is then given
// mode perm, closed and renamed over path. A reader (or a command killed
// halfway) sees the old file or the whole new one, never half of one; on
// any failure the temporary file is removed and path is left as it was.
//
// write gets the temporary file itself, so that a writer may seek, truncate
// or read back what it wrote (the entrypoint hashes the patch it wrote); it
// must not close it. Errors of write are returned as they are; WriteFile's
// own name path.
func WriteFile(path string, perm os.FileMode, write func(f *os.File) error, opts ...WriteOption) (err error) {
	o, err := makeWriteOptions(path, opts...)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(o.tempDir, o.tempPattern)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := write(f); err != nil {
		return err
	}
	// CreateTemp makes the file 0600; the caller says what it should be
	// (umask does not apply to a chmod, so the mode is exactly perm).
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if o.sync {
		if err := f.Sync(); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	// Closed before the rename: the data must be whole under its name.
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if o.sync {
		if err := SyncDir(filepath.Dir(path)); err != nil {
			// The file is in place; only the rename's durability is in
			// doubt, and removing the temporary name is a no-op.
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}

// WriteBytes is WriteFile for data already in memory.
func WriteBytes(path string, data []byte, perm os.FileMode, opts ...WriteOption) error {
	return WriteFile(path, perm, func(f *os.File) error {
		if _, err := f.Write(data); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		return nil
	}, opts...)
}

// SyncDir syncs the directory dir, so that a rename into it survives a
// crash. Some file systems cannot sync a directory: there the rename is
// still atomic, only its durability is up to the file system, and SyncDir
// reports no error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

// WriteOption configures WriteFile and WriteBytes.
type WriteOption func(*writeOptions) error

type writeOptions struct {
	sync        bool
	tempDir     string
	tempPattern string
}

func makeWriteOptions(path string, opts ...WriteOption) (writeOptions, error) {
	o := writeOptions{
		tempDir:     filepath.Dir(path),
		tempPattern: "." + filepath.Base(path) + ".*",
	}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return writeOptions{}, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return o, nil
}

// Sync makes the write durable: the file is synced before the rename and
// its directory after it, so that after a crash or power loss path holds
// the old file or the whole new one. Without it the write is atomic for
// readers but a crash may leave an empty file. The default is no sync:
// most files (results, caches) are cheaper to write again than to sync.
func Sync() WriteOption {
	return func(o *writeOptions) error {
		o.sync = true
		return nil
	}
}

// TempDir puts the temporary file in dir instead of path's directory. dir
// must be on path's file system, or the rename fails; the image store uses
// it to keep its temporary files where its next command removes those a
// killed one left.
func TempDir(dir string) WriteOption {
	return func(o *writeOptions) error {
		if dir == "" {
			return errors.New("safefile.TempDir: the directory is empty")
		}
		o.tempDir = dir
		return nil
	}
}

// TempPattern names the temporary file as os.CreateTemp does (a "*" is
// replaced by a random string), for a caller that recognises its own
// leftovers by name. The default is "." + the file's name + ".*".
func TempPattern(pattern string) WriteOption {
	return func(o *writeOptions) error {
		if pattern == "" || strings.ContainsRune(pattern, os.PathSeparator) {
			return fmt.Errorf("safefile.TempPattern: %q is not a file name pattern", pattern)
		}
		o.tempPattern = pattern
		return nil
	}
}
