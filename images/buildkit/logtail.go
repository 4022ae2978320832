package buildkit

import (
	"strings"
	"unicode"
	"unicode/utf8"

	bkclient "github.com/moby/buildkit/client"
	digest "github.com/opencontainers/go-digest"
)

// maxTailLines is how many of a failed step's last output lines a
// BuildError keeps: enough for a compiler's or a package manager's
// complaint, short enough for one line of error.
const maxTailLines = 5

// maxTailLine is how many bytes of one output line a BuildError keeps.
const maxTailLine = 200

// logTail keeps the last lines of each step's output as the statuses of a
// solve go by, so that a failed build can say what its failing step
// printed even when nobody watched the progress (--quiet, or a command
// that hides builds). It is used by one goroutine.
type logTail struct {
	lines   map[digest.Digest][]string
	partial map[digest.Digest]string
	failed  []digest.Digest // the steps that reported an error, in order
}

func newLogTail() *logTail {
	return &logTail{lines: map[digest.Digest][]string{}, partial: map[digest.Digest]string{}}
}

// add records one status.
func (t *logTail) add(s *bkclient.SolveStatus) {
	for _, l := range s.Logs {
		text := t.partial[l.Vertex] + string(l.Data)
		lines := strings.Split(text, "\n")
		// A step that prints without newlines must not grow this: only
		// the end of an unfinished line can be kept.
		t.partial[l.Vertex] = lastBytes(lines[len(lines)-1], 4*maxTailLine)
		for _, line := range lines[:len(lines)-1] {
			t.push(l.Vertex, line)
		}
	}
	for _, v := range s.Vertexes {
		if v.Error != "" && !containsDigest(t.failed, v.Digest) {
			t.failed = append(t.failed, v.Digest)
		}
	}
}

func (t *logTail) push(v digest.Digest, line string) {
	// The output is the task author's: no terminal escapes or bidi
	// controls reach the error line a user reads.
	line = strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(line, "?")))
	if line == "" {
		return
	}
	if len(line) > maxTailLine {
		line = line[:maxTailLine] + "…"
	}
	ls := append(t.lines[v], line)
	if len(ls) > maxTailLines {
		ls = ls[len(ls)-maxTailLines:]
	}
	t.lines[v] = ls
}

// failedOutput returns the last lines the first failed step printed, or
// nil when no step failed or it printed nothing.
func (t *logTail) failedOutput() []string {
	for _, v := range t.failed {
		if p := t.partial[v]; p != "" {
			t.push(v, p)
			t.partial[v] = ""
		}
		if ls := t.lines[v]; len(ls) > 0 {
			return ls
		}
	}
	return nil
}

func containsDigest(ds []digest.Digest, d digest.Digest) bool {
	for _, x := range ds {
		if x == d {
			return true
		}
	}
	return false
}

// lastBytes is the end of s, at most n bytes, cut at a rune boundary.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}
