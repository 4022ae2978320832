package evaluate

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/42-b3yond-6ug/ssebench/internal/term"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// Progress hears what an evaluation does. Its methods are called from many
// goroutines.
type Progress interface {
	// Begin: total runs in the plan, kept of them already done, jobs at
	// once.
	Begin(total, kept, jobs int)
	Start(j Job)
	// Retry: j failed for an infrastructure reason; again says it will be
	// tried again.
	Retry(j Job, err error, again bool, took time.Duration)
	Finish(j Job, r *results.Run)
	End()
}

type nopProgress struct{}

func (nopProgress) Begin(int, int, int)                   {}
func (nopProgress) Start(Job)                             {}
func (nopProgress) Retry(Job, error, bool, time.Duration) {}
func (nopProgress) Finish(Job, *results.Run)              {}
func (nopProgress) End()                                  {}

// Printer prints one line per finished run and, on a terminal, a status
// line below them (running, done, left, and an estimate of the time left).
type Printer struct {
	mu                         sync.Mutex
	w                          io.Writer
	tty                        bool
	total, done, running, jobs int
	ranNow                     int
	started                    time.Time
	status                     bool
	now                        func() time.Time
	// failing are the agents whose runs are meant to fail.
	failing map[string]bool
}

// PrinterOption sets up a Printer.
type PrinterOption func(*Printer)

// ExpectFailing says that the runs of these agents are meant to fail (the
// dummy of a verification, whose unchanged tree must keep its bug): a
// failed run of theirs is marked ✓ and said to fail as it should, a passed
// one ✗.
func ExpectFailing(agents ...string) PrinterOption {
	return func(p *Printer) {
		if p.failing == nil {
			p.failing = map[string]bool{}
		}
		for _, a := range agents {
			p.failing[a] = true
		}
	}
}

// NewPrinter prints to w; the status line is drawn only when w is a
// terminal.
func NewPrinter(w io.Writer, opts ...PrinterOption) *Printer {
	p := &Printer{w: w, tty: term.IsTerminal(w), now: time.Now}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Begin implements Progress.
func (p *Printer) Begin(total, kept, jobs int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.done, p.jobs, p.started = total, kept, jobs, p.now()
	if kept > 0 {
		fmt.Fprintf(p.w, "%d of %s already done\n", kept, results.Plural(total, "run", "runs"))
	}
	p.drawStatus()
}

// Start implements Progress.
func (p *Printer) Start(Job) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running++
	p.drawStatus()
}

// Retry implements Progress.
func (p *Printer) Retry(j Job, err error, again bool, took time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running--
	p.clearStatus()
	what := "giving up (resume the evaluation to try again)"
	if again {
		what = "trying again"
	}
	fmt.Fprintf(p.w, "! %s %s #%d: %v after %s; %s\n", j.Task, j.Agent, j.Attempt, err, took.Round(100*time.Millisecond), what)
	p.drawStatus()
}

// Finish implements Progress.
func (p *Printer) Finish(j Job, r *results.Run) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.running--
	p.done++
	p.ranNow++
	p.clearStatus()
	tok := "-"
	if r.Tokens >= 0 {
		tok = fmt.Sprint(r.Tokens)
		if r.Priced {
			tok += fmt.Sprintf(" ($%.4f)", r.CostUSD)
		}
	}
	m, notes := mark(r), verdictNotes(r)
	if p.failing[j.Agent] {
		m, notes = expectedMark(j.Agent, r)
	}
	fmt.Fprintf(p.w, "%s %s %s #%d  %s  %s  tokens %s%s\n", m, j.Task, j.Agent, j.Attempt, r.Marks(), r.Duration().Round(100*time.Millisecond), tok, notes)
	p.drawStatus()
}

// End implements Progress.
func (p *Printer) End() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearStatus()
}

// StatusLine is the status: "running 3, done 5, left 4, about 40s left".
func (p *Printer) StatusLine() string {
	left := p.total - p.done
	s := fmt.Sprintf("running %d, done %d, left %d", p.running, p.done, left)
	if p.ranNow > 0 && left > 0 {
		// The runs go p.jobs at once at the pace seen so far.
		per := p.now().Sub(p.started) / time.Duration(p.ranNow)
		s += fmt.Sprintf(", about %s left", (per * time.Duration(left)).Round(time.Second))
	}
	return s
}

func (p *Printer) drawStatus() {
	if !p.tty {
		return
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s", p.StatusLine())
	p.status = true
}

func (p *Printer) clearStatus() {
	if p.status {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.status = false
	}
}

var _ Progress = (*Printer)(nil)

// mark is a run's mark at the head of its line: ✓ passed, ✗ failed or
// not graded, ‼ forged (an integrity verdict, neither).
func mark(r *results.Run) string {
	switch r.Verdict() {
	case results.VerdictPassed:
		return "✓"
	case results.VerdictForged:
		return "‼"
	}
	return "✗"
}

// expectedMark is the mark and notes of a run meant to fail: only a
// failed grade is what it should be; a pass, a run not graded or forged is
// not.
func expectedMark(agent string, r *results.Run) (string, string) {
	switch v := r.Verdict(); v {
	case results.VerdictFailed:
		return "✓", "  " + agent + " failed, as it should"
	case results.VerdictPassed:
		return "✗", "  " + agent + " passed: the bug does not show without a fix"
	default:
		return mark(r), "  " + agent + " was not graded: " + r.Grade()
	}
}

// verdictNotes ends a run's line with what its verdict holds beyond the
// checks: "  FORGED: report forged; flagged by the audit (2 findings)",
// "  FAILED: audit (...)" when a flagged run counts as failed, "" when
// there is nothing to say.
func verdictNotes(r *results.Run) string {
	e := r.Entry()
	var parts []string
	if r.Forged() || r.FailedByAudit() {
		parts = append(parts, e.Grade)
	}
	parts = append(parts, e.Flags()...)
	if len(parts) == 0 {
		return ""
	}
	return "  " + strings.Join(parts, "; ")
}
