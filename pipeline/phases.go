package pipeline

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// PhasePrinter prints the steps of a long piece of work (assembling a tool
// image from a big case image takes minutes) as lines, "tool image
// kvconf-12: indexing 12 case layers (3.1 GiB) [0s]", and off a terminal,
// where no spinner shows that the work goes on, a line every interval:
// "tool image kvconf-12: indexing …: still going after 1m20s". Its Phase
// is an Env's Phase.
type PhasePrinter struct {
	w        io.Writer
	prefix   string
	tty      bool
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	start   time.Time
	current string
	since   time.Time
	stop    chan struct{}
	closed  bool
}

// NewPhasePrinter returns a printer of the phases of prefix (e.g. "tool
// image") writing to w, which off a terminal says every interval that the
// phase goes on (never when interval is 0).
func NewPhasePrinter(w io.Writer, prefix string, interval time.Duration) *PhasePrinter {
	return &PhasePrinter{w: w, prefix: prefix, tty: remote.IsTerminal(w), interval: interval, now: time.Now}
}

// Phase says that phase starts (and the one before ended). An empty phase
// says the work ended: no line, and no "still going" until the next phase
// (a run goes on for long after its tool image is written).
func (p *PhasePrinter) Phase(phase string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if phase == "" {
		p.current = ""
		return
	}
	now := p.now()
	if p.start.IsZero() {
		p.start = now
		if !p.tty && p.interval > 0 {
			p.stop = make(chan struct{})
			go p.tick(p.stop)
		}
	}
	p.current, p.since = phase, now
	fmt.Fprintf(p.w, "%s %s [%s]\n", p.prefix, phase, now.Sub(p.start).Round(100*time.Millisecond))
}

// Close stops the periodic lines.
func (p *PhasePrinter) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stop != nil && !p.closed {
		close(p.stop)
	}
	p.closed = true
}

func (p *PhasePrinter) tick(stop <-chan struct{}) {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			if !p.closed && p.current != "" {
				fmt.Fprintf(p.w, "%s %s: still going after %s\n", p.prefix, p.current, p.now().Sub(p.since).Round(time.Second))
			}
			p.mu.Unlock()
		}
	}
}
