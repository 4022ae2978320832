package runner

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/pkg/cio"
	"golang.org/x/sys/unix"
)

// output carries a task's stdout and stderr to one writer through two
// FIFOs that this process creates and holds open itself.
//
// Neither of containerd's ready-made ways is safe against a 1.6 shim:
//   - cio.LogFile: the shim gives both streams one file, and the stdout
//     copy closes that file when stdout ends, even while the stderr copy
//     still has the last lines to write; about one short task in thirty
//     lost its stderr.
//   - cio.NewCreator: the client opens its FIFO ends asynchronously, and
//     task.Delete cancels that open before it waits for the copy
//     (containerd PR 13931); short tasks lost their whole output.
//
// Here the read ends are open before the task exists, and a write end of
// our own keeps them from seeing EOF before the shim has even opened its
// own. After the task is deleted (the shim has then finished copying and
// closed its write ends), finish closes ours and reads to EOF.
type output struct {
	dir     string
	paths   [2]string
	readers [2]*os.File
	writers [2]*os.File
	copied  sync.WaitGroup
}

// newOutput creates the FIFOs and starts copying them to w.
func newOutput(w io.Writer) (_ *output, retErr error) {
	dir, err := os.MkdirTemp("", "ssebench-output-")
	if err != nil {
		return nil, fmt.Errorf("creating the output FIFOs: %w", err)
	}
	o := &output{dir: dir}
	defer func() {
		if retErr != nil {
			o.close()
		}
	}()
	lw := &lockedWriter{w: w}
	for i, n := range []string{"stdout", "stderr"} {
		p := filepath.Join(dir, n)
		if err := unix.Mkfifo(p, 0o600); err != nil {
			return nil, fmt.Errorf("creating the output FIFO %s: %w", p, err)
		}
		// O_NONBLOCK: opening a FIFO's read end blocks until a writer
		// exists; the writer opened next is ours.
		r, err := os.OpenFile(p, os.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			return nil, fmt.Errorf("opening the output FIFO %s: %w", p, err)
		}
		o.readers[i] = r
		wr, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("opening the output FIFO %s: %w", p, err)
		}
		o.writers[i] = wr
		o.paths[i] = p
	}
	for _, r := range o.readers {
		o.copied.Add(1)
		go func() {
			defer o.copied.Done()
			io.Copy(lw, r)
		}()
	}
	return o, nil
}

// creator gives the FIFOs to containerd.
func (o *output) creator() cio.Creator {
	return func(string) (cio.IO, error) {
		return fifoIO{cio.Config{Stdout: o.paths[0], Stderr: o.paths[1]}}, nil
	}
}

// finish waits, at most timeout, for the output that is left; the task
// must be deleted first. It may be called more than once.
func (o *output) finish(timeout time.Duration) error {
	for i, w := range o.writers {
		if w != nil {
			w.Close()
			o.writers[i] = nil
		}
	}
	done := make(chan struct{})
	go func() {
		o.copied.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
		// Something still holds a write end (a shim that did not close
		// its streams); closing the read ends ends the copies.
		o.close()
		<-done
		return errors.New("the container's output did not end within " + timeout.String() + " of its exit; the end of it may be missing")
	}
}

// close releases the FIFOs, ending the copies.
func (o *output) close() {
	for i := range o.writers {
		if o.writers[i] != nil {
			o.writers[i].Close()
			o.writers[i] = nil
		}
		if o.readers[i] != nil {
			o.readers[i].Close()
			o.readers[i] = nil
		}
	}
	os.RemoveAll(o.dir)
}

// fifoIO is a cio.IO whose FIFOs the output type owns and drains.
type fifoIO struct{ cfg cio.Config }

func (f fifoIO) Config() cio.Config { return f.cfg }
func (fifoIO) Cancel()              {}
func (fifoIO) Wait()                {}
func (fifoIO) Close() error         { return nil }

// lockedWriter serializes the two copies' writes. After the writer fails
// it discards the rest rather than stop the copy: a FIFO nobody reads
// would block the container once full.
type lockedWriter struct {
	mu     sync.Mutex
	w      io.Writer
	failed bool
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.failed {
		if _, err := l.w.Write(p); err != nil {
			l.failed = true
		}
	}
	return len(p), nil
}
