package release

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// LockUpdate is `dataset lock` of a dataset folder: the images lock that
// what verified gives (see Lock), beside the one on disk.
type LockUpdate struct {
	// Dir is the dataset folder; File its images.lock.json.
	Dir, File string
	// Lock is the lock from the record; Unverified the tasks it leaves
	// out, each with why (a task folder with problems included).
	Lock       *task.Lock
	Unverified []string
	// Tasks counts the dataset's task folders, with problems or not.
	Tasks int

	ds  *task.Dataset
	rec *Record
	// old is the lock on disk (nil: none), oldErr why it did not read.
	old    *task.Lock
	oldErr error
}

// NewLockUpdate makes the lock of the dataset ds in dir from the record
// of what verified, kept beside the local store in storeDir; broken are
// its task folders with problems (task.LoadDatasetTolerant). The revision
// of new entries is rev, else the commit of the git checkout holding dir.
// A lock on disk that does not read is an error unless check: then
// WriteCheck reports it.
func NewLockUpdate(ctx context.Context, dir string, ds *task.Dataset, broken map[string]task.Problems, storeDir, rev string, check bool) (*LockUpdate, error) {
	rec, err := StoredRecord(storeDir, ds)
	if err != nil {
		return nil, err
	}
	u := &LockUpdate{Dir: dir, File: filepath.Join(dir, task.LockFile), Tasks: len(ds.Tasks) + len(broken), ds: ds, rec: rec}
	u.old, u.oldErr = ReadOldLock(dir)
	if u.oldErr != nil && !check {
		return nil, fmt.Errorf("%w (delete it to write it again)", u.oldErr)
	}
	if rev == "" {
		rev = Revision(ctx, dir)
	} else if err := CheckRevision(rev); err != nil {
		return nil, err
	}
	if u.Lock, u.Unverified, err = Lock(ds, rec, u.old, rev); err != nil {
		return nil, err
	}
	for _, id := range slices.Sorted(maps.Keys(broken)) {
		u.Unverified = append(u.Unverified, fmt.Sprintf("%s: the task folder has problems (see `ssebench dataset validate`)", id))
	}
	return u, nil
}

// Write writes the lock to File.
func (u *LockUpdate) Write() error { return task.WriteLock(u.Dir, u.Lock) }

// WriteCheck is `dataset lock --check`: it writes to w each difference
// of the lock on disk from u's, or that it is up to date ("ok"). When it
// is not, it returns the line that says so: how many problems, and the
// commands that bring it up to date (verify the tasks whose folder
// changed since they verified, or only lock again).
func (u *LockUpdate) WriteCheck(w io.Writer) (outOfDate string) {
	if u.oldErr != nil {
		fmt.Fprintf(w, "%v\n", u.oldErr)
		return u.outOfDate(1, nil, nil)
	}
	diffs := CheckLock(u.old, u.Lock, u.Unverified)
	for _, d := range diffs {
		fmt.Fprintf(w, "%s: %s\n", u.File, d)
	}
	if len(diffs) == 0 {
		fmt.Fprintf(w, "ok %s\n", u.File)
		return ""
	}
	changed, relock := LockChanges(u.ds, u.rec, u.Lock, u.old)
	return u.outOfDate(len(diffs), changed, relock)
}

// outOfDate is the line of a lock with n problems: the tasks whose folder
// changed since they verified (changed) are verified again, else those
// only the lock is behind on (relock) are locked again.
func (u *LockUpdate) outOfDate(n int, changed, relock []string) string {
	fix := fmt.Sprintf("refresh it with `ssebench dataset lock %s`", u.Dir)
	switch {
	case len(changed) > 0:
		fix = fmt.Sprintf("%s changed since verified: run `ssebench dataset verify %s --tasks %s`, then `ssebench dataset lock %s`",
			strings.Join(changed, ", "), u.Dir, strings.Join(changed, ","), u.Dir)
	case len(relock) > 0:
		fix = fmt.Sprintf("its entries of %s are behind what verified: %s", strings.Join(relock, ", "), fix)
	}
	return fmt.Sprintf("%s is out of date (%s): %s", u.File, units.Plural(n, "problem"), fix)
}

// String says what Write wrote: the lock file and how many of the
// dataset's tasks it pins.
func (u *LockUpdate) String() string {
	return fmt.Sprintf("wrote %s (%d of %s pinned)", u.File, len(u.Lock.Images), units.Plural(u.Tasks, "task"))
}
