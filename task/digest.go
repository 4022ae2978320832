package task

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Files returns the SHA-256 of every regular file under the task folder
// dir, by its slash-separated path relative to dir, in lowercase hex. It
// is the "files" map of a manifest entry and the input of the files digest.
//
// The walk matches Python's Path.rglob("*") filtered by is_file(), which
// the original implementation uses: dotfiles and dot-directories are
// included; a symlink to a regular file counts with its target's bytes; a
// symlink to a directory is not descended into (and is not a file); broken
// symlinks, sockets, FIFOs and devices are skipped. When dir itself is a
// symlink, the folder it points to is walked.
//
// Files are streamed through the hash, never read whole into memory.
func Files(dir string) (map[string]string, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("reading task folder: %w", err)
	}
	if fi, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("reading task folder: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("reading task folder: %s is not a directory", dir)
	}
	files := map[string]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			fi, err := os.Stat(path)
			if err != nil || !fi.Mode().IsRegular() {
				// Broken links and links to directories: Python's
				// is_file() is false for both.
				return nil
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		sum, err := fileSHA256(path)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = sum
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hashing task files: %w", err)
	}
	return files, nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// DigestFiles returns the files digest of a map made by [Files] (or the
// "files" of a manifest entry): the lowercase hex SHA-256 of the map as
// compact JSON with sorted keys and every character outside 0x20–0x7E
// escaped, exactly as Python's json.dumps(files, sort_keys=True,
// separators=(",", ":")) writes it (SPEC.md section 3).
func DigestFiles(files map[string]string) string {
	sum := sha256.Sum256(pyJSONStringMap(files))
	return hex.EncodeToString(sum[:])
}

// FilesDigest returns the files digest of the task folder dir: the value
// of the ssebench.task-files label of its case image.
func FilesDigest(dir string) (string, error) {
	files, err := Files(dir)
	if err != nil {
		return "", err
	}
	return DigestFiles(files), nil
}
