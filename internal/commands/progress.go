package commands

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/remote"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ProgressPrinter is a remote.Progress that writes one line per blob ("pushed
// sha256:0123456789ab… 12.3 MiB"), and on a terminal keeps a progress bar
// of the bytes in flight below them.
type ProgressPrinter struct {
	w   io.Writer
	tty bool

	mu      sync.Mutex
	active  map[v1.Hash]*transfer
	drawn   bool
	lastBar time.Time
}

type transfer struct{ size, done int64 }

var _ remote.Progress = (*ProgressPrinter)(nil)

// NewProgressPrinter returns a printer writing to w; it draws a bar only
// when w is a terminal.
func NewProgressPrinter(w io.Writer) *ProgressPrinter {
	return &ProgressPrinter{w: w, tty: isTerminal(w), active: map[v1.Hash]*transfer{}}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

// Start implements Progress.
func (p *ProgressPrinter) Start(e remote.BlobEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active[e.Digest] = &transfer{size: e.Size}
	p.drawBarLocked(true)
}

// Advance implements Progress.
func (p *ProgressPrinter) Advance(d v1.Hash, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t := p.active[d]; t != nil {
		t.done += n
	}
	p.drawBarLocked(false)
}

// Done implements Progress.
func (p *ProgressPrinter) Done(e remote.BlobEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.active, e.Digest)
	p.clearBarLocked()
	fmt.Fprintln(p.w, BlobLine(e))
	p.drawBarLocked(true)
}

// Finish clears the bar and prints the summary line of r.
func (p *ProgressPrinter) Finish(r *remote.PushReport) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearBarLocked()
	if r != nil {
		fmt.Fprintln(p.w, r.String())
	}
}

func (p *ProgressPrinter) clearBarLocked() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

// drawBarLocked redraws the bar at most ten times a second unless force.
func (p *ProgressPrinter) drawBarLocked(force bool) {
	if !p.tty || len(p.active) == 0 {
		return
	}
	if !force && time.Since(p.lastBar) < 100*time.Millisecond {
		return
	}
	p.lastBar = time.Now()
	var size, done int64
	for _, t := range p.active {
		size += t.size
		done += min(max(t.done, 0), t.size)
	}
	const width = 30
	fill := 0
	if size > 0 {
		fill = int(done * width / size)
	}
	bar := strings.Repeat("=", fill) + strings.Repeat(" ", width-fill)
	fmt.Fprintf(p.w, "\r\033[K[%s] %s / %s, %s uploading", bar, units.Bytes(done), units.Bytes(size), units.Plural(len(p.active), "blob"))
	p.drawn = true
}

// BlobLine is the plain line for a settled blob, e.g. "mounted
// sha256:0123456789ab… 12.3 MiB from ssebench/case/x".
func BlobLine(e remote.BlobEvent) string {
	s := fmt.Sprintf("%s %s %s", e.Action, units.Digest(e.Digest), units.Bytes(e.Size))
	switch {
	case e.Action == remote.BlobMounted && e.From != "":
		s += " from " + e.From
	case e.Action == remote.BlobPushed && e.Resumed > 0:
		s += fmt.Sprintf(" (resumed after %s)", units.Bytes(e.Resumed))
	}
	return s
}
