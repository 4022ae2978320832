package commands_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
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
	p := commands.NewProgressPrinter(&out, commands.ProgressEvery(time.Millisecond))
	img := toolImage(t)
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
	p := commands.NewProgressPrinter(&out, commands.ProgressEvery(time.Millisecond), commands.ProgressQuiet(true))
	d := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("a", 64)}
	p.Start(remote.BlobEvent{Digest: d, Size: 10})
	p.Done(remote.BlobEvent{Digest: d, Size: 10, Action: remote.BlobPushed})
	time.Sleep(5 * time.Millisecond) // ticks that must print nothing
	p.Finish(&remote.PushReport{Uploaded: 10, UploadedBlobs: 1})
	if got := out.String(); strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "uploaded") {
		t.Errorf("a quiet printer printed %q, want only the summary", got)
	}
}

// TestPushProgressCoversTheImage pushes through the command with a short
// interval: the periodic lines count the bytes of every blob of the image.
func TestPushProgressCoversTheImage(t *testing.T) {
	c := newCLI(t)
	host := testenv.StartRegistry(t)
	ref := host + "/progress/tool/proj-1:1.0.0"
	img := toolImage(t)
	c.storeImage(t, ref, img)
	m, _ := img.Manifest()
	total := m.Config.Size
	for _, l := range m.Layers {
		total += l.Size
	}
	old := commands.ProgressInterval
	commands.ProgressInterval = time.Millisecond
	t.Cleanup(func() { commands.ProgressInterval = old })
	_, stderr := c.mustRun(t, "push", ref)
	_, first, ok := strings.Cut(stderr, "progress: ")
	first, _, _ = strings.Cut(first, "\n")
	if want := " of " + units.Bytes(total) + " ("; !ok || !strings.Contains(first, want) {
		t.Errorf("push's first progress line %q lacks %q (the whole image):\n%s", first, want, stderr)
	}
	_, stderr = c.mustRun(t, "push", "-q", ref)
	if strings.Contains(stderr, "progress:") || strings.Contains(stderr, "exists sha256") {
		t.Errorf("push -q printed progress:\n%s", stderr)
	}
}

func TestPhaseLinesOffTerminal(t *testing.T) {
	var out syncBuffer
	p := commands.NewPhasePrinter(&out, "tool image", commands.ProgressEvery(time.Millisecond))
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

// TestAssembleToolPhases: assemble tool says which step it is in.
func TestAssembleToolPhases(t *testing.T) {
	const (
		rt   = "localhost:5000/ssebench/runtime:1.0.0"
		cref = "localhost:5000/ssebench/case/ds/proj-1"
	)
	c := newCLI(t)
	c.storeImage(t, cref, caseImage(t))
	c.storeImage(t, rt, runtimeImage(t))
	args := []string{"assemble", "tool", "--case", cref, "--source", "/src/proj", "--runtime", rt, "--pull=never", "--registry", "localhost:5000/ssebench"}
	_, stderr := c.mustRun(t, args...)
	for _, want := range []string{
		"tool image proj-1: indexing 1 case layer (",
		"tool image proj-1: writing the system, repository and source layers from /src/proj [",
		"tool image proj-1: committing /src/proj [",
		"tool image proj-1: sealing the runtime layers [",
		"tool image proj-1: writing localhost:5000/ssebench/tool/proj-1:",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("assemble tool's stderr lacks %q:\n%s", want, stderr)
		}
	}
	_, stderr = c.mustRun(t, append(args, "-q")...)
	if strings.Contains(stderr, "tool image ") {
		t.Errorf("assemble tool -q printed its phases:\n%s", stderr)
	}
}
