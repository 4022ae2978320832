package oci

import (
	"bufio"
	"io"
	"sync"
)

// asyncChunk is the size of the pieces the tar stream is handed over in;
// asyncDepth how many may wait. Together they bound the memory a layer
// writer holds: about 1 MiB.
const (
	asyncChunk = 64 << 10
	asyncDepth = 4
)

// asyncSink hands the tar stream to a goroutine that hashes and compresses
// it, so that compressing a layer overlaps with producing it (reading and
// decompressing the lower layers, or writing another layer): on two cores
// the assembler's passes are bound by compression otherwise. The bytes that
// reach dst are the same, in the same order, so the output is unchanged.
type asyncSink struct {
	buf  *bufio.Writer
	ch   chan []byte
	done chan struct{}
	pool sync.Pool

	mu  sync.Mutex
	err error // the first error of dst
}

func newAsyncSink(dst io.Writer) *asyncSink {
	s := &asyncSink{ch: make(chan []byte, asyncDepth), done: make(chan struct{})}
	s.pool.New = func() any { b := make([]byte, asyncChunk); return &b }
	s.buf = bufio.NewWriterSize(sinkFunc(s.send), asyncChunk)
	go s.run(dst)
	return s
}

// sinkFunc adapts a function to io.Writer.
type sinkFunc func([]byte) (int, error)

func (f sinkFunc) Write(p []byte) (int, error) { return f(p) }

func (s *asyncSink) run(dst io.Writer) {
	defer close(s.done)
	for b := range s.ch {
		if s.failed() == nil {
			if _, err := dst.Write(b); err != nil {
				s.mu.Lock()
				s.err = err
				s.mu.Unlock()
			}
		}
		b = b[:cap(b)]
		s.pool.Put(&b)
	}
}

func (s *asyncSink) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// send copies p (bufio hands over its own buffer) and queues it.
func (s *asyncSink) send(p []byte) (int, error) {
	if err := s.failed(); err != nil {
		return 0, err
	}
	n := 0
	for len(p) > 0 {
		bp := s.pool.Get().(*[]byte)
		c := copy(*bp, p)
		s.ch <- (*bp)[:c]
		p = p[c:]
		n += c
	}
	return n, nil
}

// Write implements io.Writer.
func (s *asyncSink) Write(p []byte) (int, error) { return s.buf.Write(p) }

// Close hands over what is buffered and waits until the goroutine has
// written everything; it returns the first error of dst.
func (s *asyncSink) Close() error {
	err := s.buf.Flush()
	close(s.ch)
	<-s.done
	if ferr := s.failed(); ferr != nil {
		return ferr
	}
	return err
}
