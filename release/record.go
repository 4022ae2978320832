package release

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// Record is what verified on this machine for one dataset version: the
// case image each task passed on. It lives with the local store (the
// digests name images there), in RecordFile, and `dataset lock` and
// `dataset publish` read it.
type Record struct {
	Dataset string                  `json:"dataset"`
	Version string                  `json:"version"`
	Tasks   map[string]VerifiedTask `json:"tasks"`
}

// VerifiedTask is one task's verified case image.
type VerifiedTask struct {
	// Image is the case image's name, Digest its manifest digest.
	Image  string `json:"image"`
	Digest string `json:"digest"`
	// FilesSHA256 is the task folder's files digest when it verified.
	FilesSHA256 string    `json:"files_sha256"`
	Verified    time.Time `json:"verified"`
	// Runs is the evaluation folder of the runs that verified it.
	Runs string `json:"runs,omitempty"`
}

// RecordFile is where the record of dataset at version lives under dir
// (the local store's folder).
func RecordFile(dir, dataset, version string) string {
	return filepath.Join(dir, ".verified", dataset+"@"+version+".json")
}

// ReadRecord reads the record at path; a missing file is an empty record.
func ReadRecord(path, dataset, version string) (*Record, error) {
	r := &Record{Dataset: dataset, Version: version, Tasks: map[string]VerifiedTask{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading what verified: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(r); err != nil {
		return nil, fmt.Errorf("%s: not a record of verified images (delete it and verify again): %w", path, err)
	}
	if r.Tasks == nil {
		r.Tasks = map[string]VerifiedTask{}
	}
	// Ids come back into image names and lines on a terminal: the task
	// folder's grammar, as everywhere else.
	ids := make([]string, 0, len(r.Tasks))
	for id := range r.Tasks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if err := task.CheckID("task", id); err != nil {
			return nil, fmt.Errorf("%s: %w (delete it and verify again)", path, err)
		}
	}
	return r, nil
}

// Merge records the tasks of rep that verified, replacing what the record
// said of them, and forgets the tasks rep found failing.
func (r *Record) Merge(rep *Report) {
	for id, v := range rep.Verified {
		r.Tasks[id] = v
	}
	for _, f := range rep.Failed() {
		delete(r.Tasks, f.Task)
	}
}

// Write writes the record to path atomically, creating its folder.
func (r *Record) Write(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("recording what verified: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return safefile.WriteBytes(path, append(b, '\n'), 0o644)
}

// Remember merges rep into the record of dataset at version kept in the
// store folder storeDir (see RecordFile), which "dataset lock" and
// "dataset publish" read.
func Remember(storeDir, dataset, version string, rep *Report) error {
	path := RecordFile(storeDir, dataset, version)
	rec, err := ReadRecord(path, dataset, version)
	if err != nil {
		return err
	}
	rec.Merge(rep)
	return rec.Write(path)
}
