package remote

// Progress of a push: the Progress interface WithBlobProgress reports blobs
// to, and the pusher's byte counts behind it and behind withProgress's
// v1.Update channel.

import (
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Progress receives what Push, PushAll and Mirror (and so package
// archive's PushLoaded) do with each blob. Its
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

// close closes the withProgress channel once.
func (p *pusher) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed && p.o.progress != nil {
		close(p.o.progress)
	}
	p.closed = true
}

func (p *pusher) settle(e BlobEvent) {
	p.mu.Lock()
	p.rep.add(e)
	if e.Action != BlobPushed {
		p.sent += e.Size
	}
	p.sendUpdateLocked()
	p.mu.Unlock()
	if r := p.o.move.reporter; r != nil {
		r.Done(e)
	}
}

func (p *pusher) advance(d v1.Hash, n int64) {
	p.mu.Lock()
	p.sent += n
	p.sendUpdateLocked()
	p.mu.Unlock()
	if r := p.o.move.reporter; r != nil {
		r.Advance(d, n)
	}
}

func (p *pusher) sendUpdateLocked() {
	if p.o.progress == nil || p.closed {
		return
	}
	u := v1.Update{Total: p.total, Complete: min(p.sent, p.total)}
	select {
	case p.o.progress <- u:
	default:
		// A slow reader loses intermediate updates, never the push.
	}
}

// countingReader reports the bytes read through it.
type countingReader struct {
	r   io.Reader
	n   int64
	add func(int64)
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if n > 0 {
		c.n += int64(n)
		c.add(int64(n))
	}
	return n, err
}
