package registry

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Progress receives what Push, Mirror and Load do with each blob. Its
// methods are called from several goroutines at once.
type Progress interface {
	// Start says an upload of e.Digest (e.Size bytes) begins.
	Start(e BlobEvent)
	// Advance says n more bytes of d were sent (n < 0 takes back bytes
	// of an attempt that failed and will be sent again).
	Advance(d v1.Hash, n int64)
	// Done says a blob is settled: pushed, mounted or already there.
	Done(e BlobEvent)
}

// ProgressPrinter is a Progress that writes one line per blob ("pushed
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

var _ Progress = (*ProgressPrinter)(nil)

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
func (p *ProgressPrinter) Start(e BlobEvent) {
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
func (p *ProgressPrinter) Done(e BlobEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.active, e.Digest)
	p.clearBarLocked()
	fmt.Fprintln(p.w, BlobLine(e))
	p.drawBarLocked(true)
}

// Finish clears the bar and prints the summary line of r.
func (p *ProgressPrinter) Finish(r *PushReport) {
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
	fmt.Fprintf(p.w, "\r\033[K[%s] %s / %s, %s uploading", bar, HumanBytes(done), HumanBytes(size), plural(len(p.active), "blob"))
	p.drawn = true
}

// BlobLine is the plain line for a settled blob, e.g. "mounted
// sha256:0123456789ab… 12.3 MiB from ssebench/case/x".
func BlobLine(e BlobEvent) string {
	s := fmt.Sprintf("%s %s %s", e.Action, ShortDigest(e.Digest), HumanBytes(e.Size))
	switch {
	case e.Action == BlobMounted && e.From != "":
		s += " from " + e.From
	case e.Action == BlobPushed && e.Resumed > 0:
		s += fmt.Sprintf(" (resumed after %s)", HumanBytes(e.Resumed))
	}
	return s
}

// ShortDigest is "sha256:" and the first 12 hex digits, then "…".
func ShortDigest(h v1.Hash) string {
	if len(h.Hex) <= 12 {
		return h.String()
	}
	return h.Algorithm + ":" + h.Hex[:12] + "…"
}

// HumanBytes formats n bytes with binary units: "512 B", "12.3 MiB".
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		f /= unit
		if f < unit && f > -unit {
			return fmt.Sprintf("%.1f %s", f, u)
		}
	}
	return fmt.Sprintf("%.1f PiB", f/unit)
}
