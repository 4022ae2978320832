package commands_test

import (
	"strings"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/internal/units"
)

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
