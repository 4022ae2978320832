package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing n bytes of f from off to
// disk, without waiting for them: the later sync then waits for less. A
// failure costs only that wait, so it is not reported.
func startWriteback(f *os.File, off, n int64) {
	writebacks.Add(1)
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
