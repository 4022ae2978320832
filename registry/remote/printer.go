package remote

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/internal/term"
	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/oci"
)

// ProgressInterval is how often a printer writing to something that is not
// a terminal (a CI log, a file) prints where the work stands, unless
// ProgressEvery says otherwise.
const ProgressInterval = 10 * time.Second

// ProgressPrinter is a Progress that writes one line per blob
// ("pushed sha256:0123456789ab… 12.3 MiB") and keeps track of the whole
// work: the bytes settled (uploaded, mounted or already there) out of the
// bytes of every blob of the images (see Expect). On a terminal it keeps a
// bar of that below the lines; elsewhere, where a carriage return only
// garbles the log, it prints a line every ProgressInterval.
type ProgressPrinter struct {
	w        io.Writer
	tty      bool
	quiet    bool
	interval time.Duration

	mu       sync.Mutex
	active   map[v1.Hash]*transfer
	expected int64 // bytes of the blobs Expect announced
	blobs    int   // blobs Expect announced
	seen     int64 // bytes of the blobs started or settled
	settled  int64 // bytes of the blobs settled
	nSettled int
	drawn    bool
	lastBar  time.Time
	started  bool
	stop     chan struct{}
	finished bool
}

type transfer struct{ size, done int64 }

var _ Progress = (*ProgressPrinter)(nil)

// ProgressOption configures a ProgressPrinter.
type ProgressOption func(*ProgressPrinter)

// ProgressEvery sets the period of the plain progress lines (default
// ProgressInterval).
func ProgressEvery(d time.Duration) ProgressOption {
	return func(p *ProgressPrinter) { p.interval = d }
}

// ProgressQuiet leaves out everything but the summary of Finish (-q).
func ProgressQuiet(quiet bool) ProgressOption {
	return func(p *ProgressPrinter) { p.quiet = quiet }
}

// NewProgressPrinter returns a printer writing to w; it draws a bar only
// when w is a terminal.
func NewProgressPrinter(w io.Writer, opts ...ProgressOption) *ProgressPrinter {
	p := &ProgressPrinter{w: w, tty: IsTerminal(w), active: map[v1.Hash]*transfer{}, interval: ProgressInterval}
	for _, o := range opts {
		o(p)
	}
	return p
}

// IsTerminal says whether w is a terminal that draws a redrawn line.
func IsTerminal(w io.Writer) bool { return term.IsTerminal(w) }

// Expect announces the blobs of content (an image or index about to be
// pushed): the totals then cover the whole of it, not only the blobs in
// flight.
func (p *ProgressPrinter) Expect(content ggremote.Taggable) {
	size, n := blobTotal(content)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.expected += size
	p.blobs += n
	p.startLocked()
}

// Start implements Progress.
func (p *ProgressPrinter) Start(e BlobEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active[e.Digest] = &transfer{size: e.Size}
	p.seen += e.Size
	p.startLocked()
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
	if _, ok := p.active[e.Digest]; ok {
		delete(p.active, e.Digest)
	} else {
		p.seen += e.Size
	}
	p.settled += e.Size
	p.nSettled++
	p.startLocked()
	if p.quiet {
		return
	}
	p.clearBarLocked()
	fmt.Fprintln(p.w, BlobLine(e))
	p.drawBarLocked(true)
}

// Finish stops the periodic lines, clears the bar and prints the summary
// line of r.
func (p *ProgressPrinter) Finish(r *PushReport) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil && !p.finished {
		close(p.stop)
	}
	p.finished = true
	p.clearBarLocked()
	if r != nil {
		fmt.Fprintln(p.w, r.String())
	}
}

// startLocked starts the periodic lines on a non-terminal, once.
func (p *ProgressPrinter) startLocked() {
	if p.started || p.finished || p.tty || p.quiet || p.interval <= 0 {
		return
	}
	p.started = true
	p.stop = make(chan struct{})
	go p.tick(p.stop)
}

func (p *ProgressPrinter) tick(stop <-chan struct{}) {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			if !p.finished {
				fmt.Fprintln(p.w, p.statusLocked())
			}
			p.mu.Unlock()
		}
	}
}

// statusLocked says where the whole work stands, e.g. "progress: 1.2 GiB
// of 3.4 GiB (35%), 4 of 9 blobs settled, 2 uploading".
func (p *ProgressPrinter) statusLocked() string {
	done := p.doneLocked()
	// A blob sent twice (a retried manifest) may take done past what was
	// announced.
	total := max(p.expected, p.seen, done)
	s := "progress: " + units.Bytes(done) + " of " + units.Bytes(total)
	if total > 0 {
		s += fmt.Sprintf(" (%d%%)", done*100/total)
	}
	s += fmt.Sprintf(", %d of %s settled", p.nSettled, units.Plural(max(p.blobs, p.nSettled+len(p.active)), "blob"))
	if len(p.active) > 0 {
		s += fmt.Sprintf(", %d uploading", len(p.active))
	}
	return s
}

// doneLocked is the bytes settled plus those sent of the blobs in flight.
func (p *ProgressPrinter) doneLocked() int64 {
	done := p.settled
	for _, t := range p.active {
		done += min(max(t.done, 0), t.size)
	}
	return done
}

func (p *ProgressPrinter) clearBarLocked() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

// drawBarLocked redraws the bar at most ten times a second unless force.
func (p *ProgressPrinter) drawBarLocked(force bool) {
	if !p.tty || p.quiet || p.finished || len(p.active) == 0 {
		return
	}
	if !force && time.Since(p.lastBar) < 100*time.Millisecond {
		return
	}
	p.lastBar = time.Now()
	done := p.doneLocked()
	total := max(p.expected, p.seen, done)
	const width = 30
	fill := 0
	if total > 0 {
		fill = int(min(done, total) * width / total)
	}
	bar := strings.Repeat("=", fill) + strings.Repeat(" ", width-fill)
	fmt.Fprintf(p.w, "\r\033[K[%s] %s", bar, strings.TrimPrefix(p.statusLocked(), "progress: "))
	p.drawn = true
}

// blobTotal is the size and count of the unique blobs (configs and layers)
// of an image or of every image of an index; what cannot be read counts
// nothing (the push itself then says what is wrong).
func blobTotal(content ggremote.Taggable) (int64, int) {
	seen := map[v1.Hash]bool{}
	var size int64
	add := func(d v1.Descriptor) {
		if !seen[d.Digest] {
			seen[d.Digest] = true
			size += d.Size
		}
	}
	// The one manifest walk: each image once, under its caps, however
	// many indexes list it (a hostile index would otherwise take minutes
	// before the push starts).
	_ = oci.WalkContent(context.Background(), content, func(c oci.Content) error {
		img, ok := c.(v1.Image)
		if !ok {
			return nil
		}
		m, err := img.Manifest()
		if err != nil {
			return nil
		}
		add(m.Config)
		for _, l := range m.Layers {
			add(l)
		}
		return nil
	})
	return size, len(seen)
}

// BlobLine is the plain line for a settled blob, e.g. "mounted
// sha256:0123456789ab… 12.3 MiB from ssebench/case/x".
func BlobLine(e BlobEvent) string {
	s := fmt.Sprintf("%s %s %s", e.Action, units.Digest(e.Digest), units.Bytes(e.Size))
	switch {
	case e.Action == BlobMounted && e.From != "":
		s += " from " + e.From
	case e.Action == BlobPushed && e.Resumed > 0:
		s += fmt.Sprintf(" (resumed after %s)", units.Bytes(e.Resumed))
	}
	return s
}
