package archive

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// SaveFile saves refs (see Save) into the archive file path. The archive
// is written beside it and renamed at the end, so that path is either the
// old file or a complete archive, of mode 0644 (an archive is for others
// to read). The partial archives that killed saves of path left are
// removed first.
func SaveFile(ctx context.Context, path string, refs []string, opts ...Option) (*Report, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	// Ours are named with our pid, so that a later save knows them
	// from those of a save that still runs.
	removeDeadPartials(abs)
	var rep *Report
	err = safefile.WriteFile(abs, 0o644, func(f *os.File) error {
		var err error
		rep, err = Save(ctx, f, refs, opts...)
		return err
	}, safefile.TempPattern(fmt.Sprintf(".%s-%d-*", filepath.Base(abs), os.Getpid())))
	return rep, err
}

// removeDeadPartials removes the partial archives (".FILE-<pid>-*") that
// killed saves of target left, where that pid is no longer running.
func removeDeadPartials(target string) {
	prefix := "." + filepath.Base(target) + "-"
	ents, err := os.ReadDir(filepath.Dir(target))
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			os.Remove(filepath.Join(filepath.Dir(target), e.Name()))
		}
	}
}

// LoadSummary is what a load did, as `load --json` prints it.
type LoadSummary struct {
	Images   []remote.ImageDigest `json:"images"`
	Blobs    int                  `json:"blobs"`
	Bytes    int64                `json:"bytes"`
	Stored   int                  `json:"stored_blobs"`
	Registry string               `json:"registry,omitempty"`
	Replaced []ReplacementJSON    `json:"replaced"`
	Push     *remote.PushSummary  `json:"push,omitempty"`
}

// ReplacementJSON is a Replacement of a LoadSummary.
type ReplacementJSON struct {
	Name string `json:"name"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

// Summary is r's summary.
func (r *Report) Summary() *LoadSummary {
	out := &LoadSummary{Images: []remote.ImageDigest{}, Blobs: r.Blobs, Bytes: r.Bytes, Stored: r.Stored, Registry: r.Registry, Replaced: []ReplacementJSON{}}
	for _, im := range r.Images {
		out.Images = append(out.Images, remote.ImageDigest{Name: im.Name, Digest: im.Descriptor.Digest.String()})
	}
	for _, rp := range r.Replaced {
		out.Replaced = append(out.Replaced, ReplacementJSON{Name: rp.Name, Old: rp.Old.String(), New: rp.New.String()})
	}
	return out
}

// Retargeted names r's images as PushLoaded pushes them under prefix.
func (r *Report) Retargeted(prefix string) ([]remote.ImageDigest, error) {
	out := []remote.ImageDigest{}
	for _, im := range r.Images {
		t, err := remote.Retarget(im.Name, r.Registry, prefix)
		if err != nil {
			return nil, err
		}
		out = append(out, remote.ImageDigest{Name: t, Digest: im.Descriptor.Digest.String()})
	}
	return out, nil
}
