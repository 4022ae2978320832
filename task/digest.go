package task

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
// symlink, the folder it points to is walked. Unlike the original, a
// symlink that resolves outside the folder (sse/scripts/build.sh to
// /etc/shadow or /proc/kcore) is an error naming it: its target is the
// host's, never a task file, and its hash would be published.
//
// Files are streamed through the hash, never read whole into memory.
func Files(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := walkFiles(dir, func(rel, path string) error {
		sum, err := fileSHA256(path)
		if err != nil {
			return err
		}
		files[rel] = sum
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

// walkFiles calls fn with the slash-separated path relative to dir and the
// path to open of every file Files hashes, in the walk's order (not
// sorted), refusing a symlink out of the folder as Files does.
func walkFiles(dir string, fn func(rel, path string) error) error {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("reading task folder: %w", err)
	}
	if fi, err := os.Stat(root); err != nil {
		return fmt.Errorf("reading task folder: %w", err)
	} else if !fi.IsDir() {
		return fmt.Errorf("reading task folder: %s is not a directory", dir)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if err := linkInside(root, path); err != nil {
				return fmt.Errorf("%s %w", filepath.ToSlash(rel), err)
			}
			fi, err := os.Stat(path)
			if err != nil || !fi.Mode().IsRegular() {
				// Broken links and links to directories: Python's
				// is_file() is false for both.
				return nil
			}
		} else if !d.Type().IsRegular() {
			return nil
		}
		return fn(filepath.ToSlash(rel), path)
	})
	if err != nil {
		return fmt.Errorf("hashing task files: %w", err)
	}
	return nil
}

// errLinkOutside is the error of a task file that is a symlink out of the
// folder; the path is put before it.
var errLinkOutside = errors.New("is a symlink out of the task folder, so it is not read: make it a regular file of the folder")

// linkInside returns errLinkOutside when the symlink at path, under the
// folder root (symlinks resolved), may point outside root: an absolute
// target (in the case image it names the image's file, such as one under
// SOURCE_DIR, even when the host has none), a relative one that climbs out,
// or one that resolves outside through other links.
func linkInside(root, path string) error {
	target, err := os.Readlink(path)
	if err != nil {
		return err
	}
	outside := func(p string) bool {
		rel, err := filepath.Rel(root, p)
		return err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	if filepath.IsAbs(target) || outside(filepath.Join(filepath.Dir(path), target)) {
		return errLinkOutside
	}
	if resolved, err := filepath.EvalSymlinks(path); err == nil && outside(resolved) {
		return errLinkOutside
	}
	return nil
}

// outsideLinks returns a problem for each symlink of the folder dir that
// points outside it (see linkInside).
func outsideLinks(dir string) Problems {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil // load reports an unreadable folder
	}
	var ps Problems
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		if err := linkInside(root, path); err != nil {
			rel, _ := filepath.Rel(root, path)
			ps = append(ps, Problem{File: filepath.Join(dir, rel), Msg: err.Error()})
		}
		return nil
	})
	return ps
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

// SSEDigest returns the digest of the files under sse/ of a map made
// by [Files], by their paths under sse/: what the case image's /ssebench
// must hold (the Dockerfile copies sse/ there), the value of its
// ssebench.task-sse label. The tool layer computes it again over the case
// image's /ssebench, so a case that replaced or removed a task file stops
// the build.
func SSEDigest(files map[string]string) string {
	sse := map[string]string{}
	for p, sum := range files {
		if rest, ok := strings.CutPrefix(p, TaskFilesDir+"/"); ok {
			sse[rest] = sum
		}
	}
	return DigestFiles(sse)
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
