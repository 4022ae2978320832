package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofrs/flock"
)

// tempClaim is this Store's own directory under .tmp, locked for as long
// as the process lives. Every temporary file of a command (blobs being
// written, layer spools, BuildKit's output, an adopted spool's link) goes
// there, so that what a killed command left behind is found and removed by
// the next one: a directory whose lock can be taken belongs to a process
// that is gone.
type tempClaim struct {
	dir  string
	lock *flock.Flock
}

// claimSeq numbers the claims of this process (one per Open).
var claimSeq atomic.Int64

// claimTemp makes and locks this Store's temporary directory, after
// removing those of dead processes.
func (s *Store) claimTemp() error {
	s.sweepTemp()
	var err error
	// A sweep of another command may catch a lock file between its
	// creation and its locking: then take the next name.
	for range 5 {
		dir := filepath.Join(s.tmpRoot(), fmt.Sprintf("p%d-%d", os.Getpid(), claimSeq.Add(1)))
		l := flock.New(dir + ".lock")
		var ok bool
		if ok, err = l.TryLock(); err != nil || !ok {
			l.Close()
			continue
		}
		if !lockedAt(l) {
			// A sweep took the lock file between its creation and
			// our lock, and removed it: our lock is on a file no
			// other command can see, so take the next name.
			l.Close()
			err = fmt.Errorf("the lock file %s was removed while it was taken", l.Path())
			continue
		}
		if err = os.MkdirAll(dir, 0o755); err != nil {
			l.Close()
			return err
		}
		s.temp = &tempClaim{dir: dir, lock: l}
		return nil
	}
	return fmt.Errorf("claiming a temporary directory in the store: %v", err)
}

// staleLoose is how old a loose temporary file (not in a claimed
// directory: index.json being replaced, or one of an older ssebench) must
// be before a sweep removes it.
const staleLoose = 10 * time.Minute

// sweepTemp removes the temporary directories of processes that are gone
// and loose temporary files that are stale. It never touches a live
// command's files: their directory's lock is held.
func (s *Store) sweepTemp() {
	ents, err := os.ReadDir(s.tmpRoot())
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		p := filepath.Join(s.tmpRoot(), n)
		switch {
		case strings.HasSuffix(n, ".lock"):
			s.sweepLock(p)
		case e.IsDir() && strings.HasPrefix(n, "p"):
			// Removed with its lock above; a directory whose lock file
			// is gone was half made or half removed.
			if _, err := os.Stat(p + ".lock"); os.IsNotExist(err) {
				if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleLoose {
					os.RemoveAll(p)
				}
			}
		default:
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleLoose {
				os.RemoveAll(p)
			}
		}
	}
}

// sweepLock removes the lock file p and its directory when no live
// command holds p. p was listed a moment ago: another sweep may have
// removed it since.
func (s *Store) sweepLock(p string) {
	dir := strings.TrimSuffix(p, ".lock")
	if s.temp != nil && dir == s.temp.dir {
		return
	}
	// Opened without O_CREATE, and checked to be still the file at p
	// once locked: a sweep must not make a new lock file and take a
	// directory a live command claimed meanwhile.
	l := flock.New(p, flock.SetFlag(os.O_RDONLY))
	if ok, err := l.TryLock(); err == nil && ok && lockedAt(l) {
		os.RemoveAll(dir)
		os.Remove(p)
	}
	l.Close()
}

// lockedAt reports whether the file l holds is still the one at its path.
func lockedAt(l *flock.Flock) bool {
	held, err := l.Stat()
	if err != nil {
		return false
	}
	now, err := os.Stat(l.Path())
	return err == nil && os.SameFile(held, now)
}
