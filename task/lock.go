package task

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
)

// Lock is a dataset's images.lock.json: the published case image of each
// task, pinned by digest, with the files digest it was built from.
type Lock struct {
	Dataset string                 `json:"dataset"`
	Version string                 `json:"version"`
	Images  map[string]LockedImage `json:"images"`
}

// LockedImage is one task's published case image.
type LockedImage struct {
	// Digest is the manifest digest the registry reported, "sha256:…".
	Digest string `json:"digest"`
	// FilesSHA256 is the files digest of the task folder the image was
	// built from; see DigestFiles.
	FilesSHA256 string `json:"files_sha256"`
	// Revision is the repository commit the image was published from.
	Revision string `json:"revision"`
}

// ReadLock reads and checks a lock file. A missing file gives an error that
// matches fs.ErrNotExist. Unknown fields are errors, as are digests that are
// not sha256:<64 hex> and files digests that are not 64 hex digits.
func ReadLock(path string) (*Lock, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseLock(path, data)
}

// ParseLock parses and checks a lock's bytes, as ReadLock does; errors
// start with path (where the bytes came from).
func ParseLock(path string, data []byte) (*Lock, error) {
	var l Lock
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("%s: not a valid images lock: %w", path, err)
	}
	var bad []string
	lower := map[string]string{}
	if l.Dataset != "" && !ValidID(l.Dataset) {
		bad = append(bad, CheckID("dataset:", l.Dataset).Error())
	}
	for _, id := range sortedKeys(l.Images) {
		img := l.Images[id]
		if err := CheckID("images: task id", id); err != nil {
			// The same grammar as a task folder's name: a lock names
			// the images of tasks.
			bad = append(bad, err.Error())
			continue
		}
		if other, ok := lower[strings.ToLower(id)]; ok {
			bad = append(bad, fmt.Sprintf("images: %s and %s differ only in case: they name one case image", other, id))
		}
		lower[strings.ToLower(id)] = id
		if !sha256Digest.MatchString(img.Digest) {
			bad = append(bad, fmt.Sprintf("images[%s].digest: %q is not a sha256 digest", id, img.Digest))
		}
		if !hexSHA256.MatchString(img.FilesSHA256) {
			bad = append(bad, fmt.Sprintf("images[%s].files_sha256: %q is not a SHA-256", id, img.FilesSHA256))
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s: %s", path, strings.Join(bad, "; "))
	}
	return &l, nil
}

// Marshal renders the lock as JSON with a 2-space indent and a final
// newline, images sorted by task id.
func (l *Lock) Marshal() ([]byte, error) { return marshalIndent(l) }

// WriteLock writes l to dir/images.lock.json, replacing it atomically.
func WriteLock(dir string, l *Lock) error {
	data, err := l.Marshal()
	if err != nil {
		return fmt.Errorf("rendering images lock: %w", err)
	}
	return safefile.WriteBytes(filepath.Join(dir, LockFile), data, 0o644)
}

// CaseImageRef returns the reference to pull the case image of task id of
// a catalog manifest from, under registry (REGISTRY, without a trailing
// slash). It is the image pinned by digest, "<registry>/<image>@sha256:…",
// when lock is for the manifest's dataset and version and pins the task
// with the files digest of the manifest entry (byDigest is true); else the
// image tagged with the dataset version, "<registry>/<image>:<version>".
// A nil lock is allowed. It fails when the manifest has no task id.
func CaseImageRef(registry string, m *Manifest, id string, lock *Lock) (ref string, byDigest bool, err error) {
	e := m.Task(id)
	if e == nil {
		return "", false, fmt.Errorf("task %q is not in dataset %s %s", id, m.Dataset, m.Version)
	}
	name := strings.TrimSuffix(registry, "/") + "/" + e.Image
	if lock != nil && lock.Dataset == m.Dataset && lock.Version == m.Version && e.Files != nil {
		if img, ok := lock.Images[id]; ok && img.FilesSHA256 == DigestFiles(e.Files) && sha256Digest.MatchString(img.Digest) {
			return name + "@" + img.Digest, true, nil
		}
	}
	return name + ":" + m.Version, false, nil
}
