package release

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/task"
)

// revisionPattern is a commit id, whole or abbreviated to at least the 7
// characters the published tag carries.
var revisionPattern = regexp.MustCompile(`^[0-9a-f]{7,64}$`)

// CheckRevision refuses a revision that is not a commit id of 7 to 64
// lower-case hex digits.
func CheckRevision(rev string) error {
	if !revisionPattern.MatchString(rev) {
		return fmt.Errorf("revision %q is not a commit id (7 to 64 lower-case hex digits): pass --revision $(git rev-parse HEAD)", rev)
	}
	return nil
}

// Revision returns the commit of the git checkout holding dir, or "" when
// dir is not in one (or git is missing).
func Revision(ctx context.Context, dir string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	rev := strings.TrimSpace(string(out))
	if CheckRevision(rev) != nil {
		return ""
	}
	return rev
}

// Lock returns dataset ds's images lock from what verified (rec): each
// task whose recorded files digest is its folder's now, with revision (an
// entry of old whose digest and files digest are unchanged keeps its
// revision: the commit it was published from). unverified lists the tasks
// left out, each with why.
func Lock(ds *task.Dataset, rec *Record, old *task.Lock, revision string) (l *task.Lock, unverified []string, err error) {
	l = &task.Lock{Dataset: ds.Name, Version: ds.Version, Images: map[string]task.LockedImage{}}
	for _, t := range ds.Tasks {
		v, ok := rec.Tasks[t.ID]
		if !ok {
			unverified = append(unverified, t.ID+": not verified (run `ssebench dataset verify`)")
			continue
		}
		files, err := t.FilesDigest()
		if err != nil {
			return nil, nil, err
		}
		if files != v.FilesSHA256 {
			unverified = append(unverified, fmt.Sprintf("%s: its folder changed since it verified (files digest %.12s, verified %.12s): verify it again", t.ID, files, v.FilesSHA256))
			continue
		}
		img := task.LockedImage{Digest: v.Digest, FilesSHA256: files, Revision: revision}
		if old != nil && old.Dataset == ds.Name && old.Version == ds.Version {
			if o, ok := old.Images[t.ID]; ok && o.Digest == img.Digest && o.FilesSHA256 == img.FilesSHA256 && o.Revision != "" {
				img.Revision = o.Revision
			}
		}
		l.Images[t.ID] = img
	}
	return l, unverified, nil
}

// ReadOldLock reads dir's images.lock.json for merging: nil when there is
// none.
func ReadOldLock(dir string) (*task.Lock, error) {
	l, err := task.ReadLock(filepath.Join(dir, task.LockFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return l, err
}

// CheckLock compares the lock on disk (nil: none) with want and returns
// one line per difference; none means it is up to date.
func CheckLock(got, want *task.Lock, unverified []string) []string {
	var out []string
	if got == nil {
		return append([]string{"missing: write it with `ssebench dataset lock`"}, unverified...)
	}
	if got.Dataset != want.Dataset || got.Version != want.Version {
		out = append(out, fmt.Sprintf("is for %s %s, the dataset is %s %s (stale)", got.Dataset, got.Version, want.Dataset, want.Version))
	}
	for _, id := range sortedIDs(want.Images) {
		w := want.Images[id]
		g, ok := got.Images[id]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("images[%s]: missing (verified as %s)", id, w.Digest))
		case g.FilesSHA256 != w.FilesSHA256:
			out = append(out, fmt.Sprintf("images[%s]: pins files %.12s, the task folder is %.12s (stale)", id, g.FilesSHA256, w.FilesSHA256))
		case g.Digest != w.Digest:
			out = append(out, fmt.Sprintf("images[%s]: pins %s, %s verified", id, g.Digest, w.Digest))
		}
	}
	for _, id := range sortedIDs(got.Images) {
		if _, ok := want.Images[id]; !ok {
			out = append(out, fmt.Sprintf("images[%s]: pinned, but not verified with the task folder as it is", id))
		}
	}
	return append(out, unverified...)
}

// LockChanges says, of the tasks of ds that a CheckLock found different,
// which changed since they verified (verified, but left out of lock: run
// verify again) and which the old lock pins otherwise than they verified
// (only the lock needs writing again).
func LockChanges(ds *task.Dataset, rec *Record, lock, old *task.Lock) (changed, relock []string) {
	for _, t := range ds.Tasks {
		_, verified := rec.Tasks[t.ID]
		want, locked := lock.Images[t.ID]
		switch {
		case verified && !locked:
			changed = append(changed, t.ID)
		case locked && old != nil && old.Images[t.ID] != want:
			relock = append(relock, t.ID)
		}
	}
	return changed, relock
}

func sortedIDs[V any](m map[string]V) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
