package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/gofrs/flock"
)

// lockFile takes an exclusive lock on path, waiting for it.
func lockFile(path string) (func(), error) {
	fl := flock.New(path)
	if err := fl.Lock(); err != nil {
		return nil, err
	}
	return func() { fl.Close() }, nil
}

// HoldGC keeps GC from running until the returned release is called: a
// writer that adds blobs before it names them in index.json (as archive.Load does)
// holds it throughout.
func (s *Store) HoldGC(ctx context.Context) (func(), error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	return s.lock(ctx, gcLock, false)
}

// lock takes the lock file name, exclusive or shared, and returns its
// release. Each call opens its own file descriptor, so flock(2) excludes
// goroutines of one process as it excludes processes.
func (s *Store) lock(ctx context.Context, file string, exclusive bool) (func(), error) {
	fl := flock.New(filepath.Join(s.dir, file))
	var ok bool
	var err error
	if exclusive {
		ok, err = fl.TryLockContext(ctx, lockRetry)
	} else {
		ok, err = fl.TryRLockContext(ctx, lockRetry)
	}
	if err == nil && !ok {
		err = errors.New("lock not acquired")
	}
	if err != nil {
		fl.Close()
		return nil, fmt.Errorf("locking the image store %s: %w", s.dir, err)
	}
	return func() { fl.Close() }, nil
}
