package commands_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands"
)

func TestMainInterruptedExits130(t *testing.T) {
	c := newCLI(t)
	// A store to verify: without one there is nothing to interrupt.
	c.storeImage(t, "localhost:5000/ssebench/case/pilot/proj-1", caseImage(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // as Ctrl-C does
	var out, errb bytes.Buffer
	if code := commands.Main(ctx, []string{"store", "verify"}, &out, &errb); code != commands.ExitInterrupted {
		t.Errorf("interrupted store verify exited %d (%q), want %d", code, errb.String(), commands.ExitInterrupted)
	}
	if strings.Contains(errb.String(), "context canceled") {
		t.Errorf("stderr %q shows the library's context error", errb.String())
	}
}

func TestMainErrorsAreOneRedactedLine(t *testing.T) {
	newCLI(t)
	var out, errb bytes.Buffer
	if code := commands.Main(context.Background(), []string{"store", "rm", "Not A Reference"}, &out, &errb); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.HasPrefix(errb.String(), "Error: ") || strings.Count(errb.String(), "\n") != 1 {
		t.Errorf("stderr %q, want one Error: line", errb.String())
	}
	got := commands.Redact(`PATCH http://127.0.0.1:5000/v2/x/blobs/uploads/3f2?_state=c2VjcmV0&digest=sha256:ab: unexpected EOF`)
	if strings.Contains(got, "_state") || strings.Contains(got, "c2VjcmV0") || !strings.Contains(got, "http://127.0.0.1:5000/v2/x/blobs/uploads/3f2?…") {
		t.Errorf("Redact = %q, want the query gone and the URL kept", got)
	}
}
