package runner

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// diskInterval is how often a run's disk use is measured, at most (a walk
// that takes long spaces the next one out, see run). A run writes at most
// a few hundred MB/s, so it overshoots its limit by a few seconds of
// writing: the limit is a guard for the host, not an exact quota.
const diskInterval = time.Second

// diskWatch measures what a running container writes: its writable layer
// (the snapshot's upper directory) and its writable bind mounts (the
// archive). Past the run's limit, or when the host's file system has less
// than contract.HostDiskFloor left, it calls stop once. overlayfs keeps no
// quota of its own and containerd 1.6 sets none, so the size is summed
// from the files' allocated blocks.
type diskWatch struct {
	dirs  []string
	limit int64
	floor uint64
	hit   atomic.Bool
}

// newDiskWatch returns the watch of container c, nil when there is nothing
// to watch (no limit and no writable layer found).
func (r *Runner) newDiskWatch(ctx context.Context, c client.Container, spec RunSpec) *diskWatch {
	w := &diskWatch{limit: spec.Limits.DiskBytes, floor: contract.HostDiskFloor}
	if upper := r.upperDir(ctx, c); upper != "" {
		w.dirs = append(w.dirs, upper)
	}
	for _, m := range spec.Mounts {
		if !m.ReadOnly {
			w.dirs = append(w.dirs, m.Source)
		}
	}
	if len(w.dirs) == 0 {
		return nil
	}
	return w
}

// upperDir is the directory that holds what c writes: overlay's upperdir,
// or the directory a bind-mounting snapshotter (native) gives; "" when it
// cannot be told.
func (r *Runner) upperDir(ctx context.Context, c client.Container) string {
	info, err := c.Info(ctx)
	if err != nil {
		return ""
	}
	sn, key := rootSnapshot(info)
	ms, err := r.client.SnapshotService(sn).Mounts(ctx, key)
	if err != nil {
		return ""
	}
	for _, m := range ms {
		switch m.Type {
		case "overlay":
			for _, o := range m.Options {
				if d, ok := strings.CutPrefix(o, "upperdir="); ok {
					return d
				}
			}
		case "bind":
			return m.Source
		}
	}
	return ""
}

// run measures every diskInterval until ctx ends. Over the run's limit it
// calls unprivileged, every time: the agent's processes and the scripts
// running the agent's code are what writes, and the entrypoint, still
// running, then grades what is there and reports it. Under the host's
// floor it calls all, once, and returns: the run ends there.
func (w *diskWatch) run(ctx context.Context, unprivileged, all func()) {
	wait := diskInterval
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		start := time.Now()
		over := w.over(ctx)
		// A writable layer of hundreds of thousands of files (a build
		// cache) takes a while to sum: the walk may use a tenth of a
		// core at most, never a second of every second.
		wait = max(diskInterval, 10*time.Since(start))
		switch over {
		case overFloor:
			w.hit.Store(true)
			all()
			return
		case overLimit:
			w.hit.Store(true)
			unprivileged()
		}
	}
}

type overage int

const (
	underLimit overage = iota
	overLimit
	overFloor
)

// over says whether the run has written more than its limit, or the
// host's disk is under the floor.
func (w *diskWatch) over(ctx context.Context) overage {
	var st syscall.Statfs_t
	if err := syscall.Statfs(w.dirs[0], &st); err == nil && st.Bavail*uint64(st.Bsize) < w.floor {
		return overFloor
	}
	if w.limit <= 0 {
		return underLimit
	}
	var used int64
	for _, d := range w.dirs {
		used += allocated(ctx, d, w.limit-used)
		if used > w.limit {
			return overLimit
		}
	}
	return underLimit
}

// killUnprivileged kills every process of task that runs as another user
// than root: the agent's (model) and the scripts' (sse-runner). The
// container shares the host's user ids (no user namespace), so /proc
// tells them apart.
func killUnprivileged(ctx context.Context, task client.Task) {
	ps, err := task.Pids(ctx)
	if err != nil {
		return
	}
	for _, p := range ps {
		if uid, ok := procUID(int(p.Pid)); ok && uid != 0 {
			_ = syscall.Kill(int(p.Pid), syscall.SIGKILL)
		}
	}
}

// procUID is the real user id of process pid, from /proc.
func procUID(pid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0, false
			}
			uid, err := strconv.Atoi(f[0])
			return uid, err == nil
		}
	}
	return 0, false
}

// minEntryBytes is what the disk limit charges a file or directory at the
// least.
const minEntryBytes = 4096

// allocated sums the disk blocks of the files under dir, stopping once the
// sum passes budget (the rest would not change the answer) or ctx ends.
// Hard links are counted once per name: an agent gains nothing by them,
// since the limit is only reached sooner.
func allocated(ctx context.Context, dir string, budget int64) int64 {
	var n int64
	stop := errors.New("stop")
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if ctx.Err() != nil || n > budget {
			return stop
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		// Every entry costs an inode and a directory entry whatever its
		// size: a million empty files is charged 4 GiB, so that an inode
		// bomb hits the limit as a byte bomb does.
		if s, ok := fi.Sys().(*syscall.Stat_t); ok {
			n += max(s.Blocks*512, minEntryBytes)
		} else {
			n += max(fi.Size(), minEntryBytes)
		}
		return nil
	})
	return n
}
