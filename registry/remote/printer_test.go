package remote_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
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

// TestProgressLinesOffTerminal: a printer on a pipe prints where the whole
// push stands, periodically, as plain lines (no carriage return), and
// nothing more once finished.
func TestProgressLinesOffTerminal(t *testing.T) {
	var out syncBuffer
	p := remote.NewProgressPrinter(&out, remote.ProgressEvery(time.Millisecond))
	img, err := random.Image(1000, 3)
	if err != nil {
		t.Fatal(err)
	}
	p.Expect(img)
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	var total int64 = m.Config.Size
	for _, l := range m.Layers {
		total += l.Size
	}
	first := m.Layers[0]
	p.Start(remote.BlobEvent{Digest: first.Digest, Size: first.Size})
	p.Advance(first.Digest, first.Size/2)
	waitFor(t, &out, "progress: "+units.Bytes(first.Size/2)+" of "+units.Bytes(total))
	waitFor(t, &out, ", 1 uploading")
	p.Done(remote.BlobEvent{Digest: first.Digest, Size: first.Size, Action: remote.BlobPushed})
	waitFor(t, &out, "progress: "+units.Bytes(first.Size)+" of "+units.Bytes(total))
	p.Finish(&remote.PushReport{})
	got := out.String()
	if strings.Contains(got, "\r") || strings.Contains(got, "\033") {
		t.Errorf("a pipe got terminal control characters: %q", got)
	}
	if !strings.Contains(got, "pushed "+units.Digest(first.Digest)) {
		t.Errorf("no line for the settled blob in:\n%s", got)
	}
	if want := units.Plural(len(m.Layers)+1, "blob"); !strings.Contains(got, want) {
		t.Errorf("the lines do not count the image's %s:\n%s", want, got)
	}
}

func TestProgressQuiet(t *testing.T) {
	var out syncBuffer
	p := remote.NewProgressPrinter(&out, remote.ProgressEvery(time.Millisecond), remote.ProgressQuiet(true))
	d := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("a", 64)}
	p.Start(remote.BlobEvent{Digest: d, Size: 10})
	p.Done(remote.BlobEvent{Digest: d, Size: 10, Action: remote.BlobPushed})
	time.Sleep(5 * time.Millisecond) // ticks that must print nothing
	p.Finish(&remote.PushReport{Uploaded: 10, UploadedBlobs: 1})
	if got := out.String(); strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "uploaded") {
		t.Errorf("a quiet printer printed %q, want only the summary", got)
	}
}
