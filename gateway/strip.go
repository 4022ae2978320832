package gateway

import (
	"bytes"
	"encoding/json"
	"io"
)

// The gateway asks every chat stream for its usage, whether or not the
// agent did. An agent that did not ask gets the stream it asked for: the
// usage chunk (no choices, only usage) is taken out, and usage on a chunk
// with choices is removed from it, since a client that did not ask may
// not expect either. The gateway's meter reads the stream before this.

// usageStripper passes a chat stream through event by event, without
// the usage the agent did not ask for. It holds at most one event (up to
// maxLine); a longer event passes through unread.
type usageStripper struct {
	src     io.ReadCloser
	buf     []byte
	pending []byte // the current event, not yet passed on
	line    int    // the length of the current line so far, \r excluded
	pass    bool   // the current event is too long to hold: it passes as it comes
	out     []byte // what Read gives next
	err     error
}

func newUsageStripper(src io.ReadCloser) *usageStripper {
	return &usageStripper{src: src, buf: make([]byte, 32<<10)}
}

func (s *usageStripper) Read(p []byte) (int, error) {
	for len(s.out) == 0 && s.err == nil {
		n, err := s.src.Read(s.buf)
		s.feed(s.buf[:n])
		if err != nil {
			s.err = err
			// A stream that ends inside an event: what is held goes on.
			s.out = append(s.out, s.pending...)
			s.pending = s.pending[:0]
		}
	}
	if len(s.out) > 0 {
		n := copy(p, s.out)
		s.out = s.out[n:]
		return n, nil
	}
	return 0, s.err
}

func (s *usageStripper) Close() error { return s.src.Close() }

func (s *usageStripper) feed(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i+1]
		}
		p = p[len(chunk):]
		if s.pass {
			s.out = append(s.out, chunk...)
		} else {
			s.pending = append(s.pending, chunk...)
			if len(s.pending) > maxLine {
				s.pass = true
				s.out = append(s.out, s.pending...)
				s.pending = s.pending[:0]
			}
		}
		if i < 0 {
			s.line += len(bytes.TrimSuffix(chunk, []byte("\r")))
			continue
		}
		blank := s.line == 0 && len(bytes.TrimRight(chunk, "\r\n")) == 0
		s.line = 0
		if blank {
			if !s.pass {
				s.out = append(s.out, stripUsage(s.pending)...)
			}
			s.pending, s.pass = s.pending[:0], false
		}
	}
}

// stripUsage returns one event (its lines and the blank line that ends
// it) without usage: nothing for a usage chunk, the chunk without its
// usage field for another, the event as it came otherwise.
func stripUsage(ev []byte) []byte {
	var data []byte
	for _, line := range bytes.Split(ev, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
		}
	}
	var m map[string]json.RawMessage
	if len(data) == 0 || data[0] != '{' || json.Unmarshal(data, &m) != nil {
		return ev
	}
	if u, ok := m["usage"]; !ok || isNull(u) {
		return ev
	}
	var choices []json.RawMessage
	if json.Unmarshal(m["choices"], &choices) == nil && len(choices) == 0 {
		return nil
	}
	delete(m, "usage")
	b, err := json.Marshal(m)
	if err != nil {
		return ev
	}
	return append(append([]byte("data: "), b...), "\n\n"...)
}
