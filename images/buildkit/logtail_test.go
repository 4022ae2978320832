package buildkit

import (
	"strings"
	"testing"

	bkclient "github.com/moby/buildkit/client"
	digest "github.com/opencontainers/go-digest"
)

// A failing step's output is the task author's: its escapes and bidi
// controls never reach the error line, and output without newlines does
// not grow the tail.
func TestLogTailHostileOutput(t *testing.T) {
	v := digest.FromString("step")
	tail := newLogTail()
	tail.add(&bkclient.SolveStatus{Logs: []*bkclient.VertexLog{{Vertex: v, Data: []byte("\x1b[2J\x1b]0;pwned\x07ok \u202egnp.exe\n")}}})
	chunk := []byte(strings.Repeat("x", 1<<16))
	for range 64 {
		tail.add(&bkclient.SolveStatus{Logs: []*bkclient.VertexLog{{Vertex: v, Data: chunk}}})
	}
	if n := len(tail.partial[v]); n > 4*maxTailLine {
		t.Errorf("4 MiB without a newline kept %d bytes of partial line", n)
	}
	tail.add(&bkclient.SolveStatus{Vertexes: []*bkclient.Vertex{{Digest: v, Error: "exit code: 1"}}})
	out := strings.Join(tail.failedOutput(), " | ")
	for _, bad := range []string{"\x1b", "\x07", "\u202e"} {
		if strings.Contains(out, bad) {
			t.Errorf("the failed output %q holds %q", out, bad)
		}
	}
	if !strings.Contains(out, "pwned") || !strings.Contains(out, "gnp.exe") {
		t.Errorf("the failed output %q lost the printable text", out)
	}
}
