package pipeline_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/pipeline"
)

// syncBuffer is a bytes.Buffer the printer's ticker and the test share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls until out holds want, failing after a few seconds: the
// lines come from a ticker of a millisecond.
func waitFor(t *testing.T, out *syncBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in:\n%s", want, out.String())
		}
		time.Sleep(time.Millisecond)
	}
}

func TestPhaseLinesOffTerminal(t *testing.T) {
	var out syncBuffer
	p := pipeline.NewPhasePrinter(&out, "tool image", time.Millisecond)
	p.Phase("t1: indexing 3 case layers")
	waitFor(t, &out, "tool image t1: indexing 3 case layers [0s]\n")
	waitFor(t, &out, "tool image t1: indexing 3 case layers: still going after ")
	p.Phase("t1: sealing the runtime layers")
	waitFor(t, &out, "tool image t1: sealing the runtime layers: still going after ")
	// The tool image is written: a run goes on for minutes with no
	// line about it.
	p.Phase("")
	time.Sleep(20 * time.Millisecond)
	before := out.String()
	time.Sleep(50 * time.Millisecond)
	if after := out.String(); after != before {
		t.Errorf("still printing after the work ended: %q", strings.TrimPrefix(after, before))
	}
	p.Close()
	if got := out.String(); strings.Contains(got, "\r") {
		t.Errorf("a pipe got a carriage return: %q", got)
	}
}
