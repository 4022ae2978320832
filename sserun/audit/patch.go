package audit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// overlap is how much of a long line's previous piece is looked at again
// with the next one, so that a match cut by the piece boundary is still
// found: longer than any text a rule looks for.
const overlap = 256

// maxHeaderLine bounds the part of a header line (diff --git, ---, +++,
// @@) that is kept: a path is at most PATH_MAX (4096) bytes, four times
// that when git quotes every byte.
const maxHeaderLine = 20 << 10

// Patch reads a patch, as `git diff --binary --no-renames` writes it
// (final.patch), and returns what its added lines hold that a fix never
// needs, in the order of the patch: each finding with the file's path
// (its new path, or its old one when deleted; git's quoting undone), the
// line in the new file, and the rule (the package doc lists them). A
// changed protected path (WithProtected, WithDropped) is one finding with
// line 0. The patch is read as a stream: memory stays bounded whatever
// its size or its longest line, and binary sections are skipped.
//
// At most WithMaxFindings findings are listed; when there are more, one
// more finding with no path says how many were left out ("37 more
// findings not listed"). An error reading r is returned with the
// findings up to it.
func Patch(r io.Reader, opts ...Option) ([]contract.AuditFinding, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	a := newAuditor(o)
	br := bufio.NewReaderSize(r, o.bufferSize)
	var readErr error
	for {
		piece, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			a.piece(piece, true)
			continue
		case errors.Is(err, bufio.ErrBufferFull):
			a.piece(piece, false)
			continue
		case err == io.EOF:
			if len(piece) > 0 {
				a.piece(piece, true)
			}
		default:
			readErr = fmt.Errorf("reading the patch: %w", err)
		}
		break
	}
	a.endFile()
	return a.result(), readErr
}

// A finding, with its place in the patch (findings of os.Args[0] wait
// apart from the others until the end of the patch).
type finding struct {
	seq int
	f   contract.AuditFinding
}

// auditor is the state of one reading: which file, which hunk, which line.
type auditor struct {
	o       *options
	dropped map[string]bool // WithDropped's paths; true once reported

	seq             int
	found, pending  []finding // pending: rules that need a process start
	moreFound       int       // findings past the cap, not kept
	morePending     int
	sawProcessStart bool

	// The current file.
	inFile           bool
	oldPath, newPath string
	gitPath          string // from the diff --git line, when its two names are one
	headerDone       bool
	binary           bool // in a GIT binary patch section: skip to the next file
	kind             kind
	lastProtected    string // the path of the last protected finding

	// The current hunk: the lines still to come on each side, and the
	// new file's number of the next line.
	oldLeft, newLeft int
	newLine          int

	// The current line.
	midLine  bool   // a piece of it has been seen
	inHeader bool   // a line outside a hunk: kept whole in header
	header   []byte // (up to maxHeaderLine)
	added    bool   // an added line of a hunk (its rules are running)
	lineNo   int
	comment  bool
	window   []byte // the piece looked at: the tail of the previous one + this one
	hits     uint64 // rules already reported on this line (bit i: rules[i])
	exec     bool
}

func newAuditor(o *options) *auditor {
	a := &auditor{o: o, dropped: map[string]bool{}}
	for _, p := range o.dropped {
		a.dropped[p] = false
	}
	return a
}

// piece handles a piece of a line: the whole line (end true, its newline
// included) or, for a line longer than the buffer, each part of it in
// turn (end true on the last).
func (a *auditor) piece(p []byte, end bool) {
	if !a.midLine {
		a.startLine(p)
	}
	switch {
	case a.added:
		body := p
		if !a.midLine {
			body = p[1:] // the '+'
		}
		a.scan(body)
	case a.inHeader:
		if room := maxHeaderLine - len(a.header); room > 0 {
			a.header = append(a.header, p[:min(room, len(p))]...)
		}
	}
	a.midLine = !end
	if end {
		if a.inHeader {
			a.headerLine(a.header)
			a.inHeader = false
		}
		a.added = false
	}
}

// startLine sorts a line by its first piece: a line of the current hunk
// (counted, so that an added line reading "++ b/x" is never taken for a
// header), or a header line, kept whole.
func (a *auditor) startLine(p []byte) {
	if a.oldLeft > 0 || a.newLeft > 0 {
		switch c := p[0]; {
		case c == '+' && a.newLeft > 0:
			a.newLeft--
			a.lineNo = a.newLine
			a.newLine++
			a.added = true
			a.startScan(p[1:])
			return
		case c == '-' && a.oldLeft > 0:
			a.oldLeft--
			return
		case (c == ' ' || c == '\n' || c == '\r') && a.oldLeft > 0 && a.newLeft > 0:
			// Context; some tools drop the space of an empty one.
			a.oldLeft--
			a.newLeft--
			a.newLine++
			return
		case c == '\\': // "\ No newline at end of file"
			return
		}
		// Not a line the hunk's counts allow: the hunk ended early (a
		// patch cut short, or not git's); read on from here as headers.
		a.oldLeft, a.newLeft = 0, 0
	}
	if a.binary && !bytes.HasPrefix(p, []byte("diff --git ")) {
		// The base85 lines of a binary patch; none begins so, as base85
		// has no space.
		return
	}
	if len(p) > 0 && p[0] == '\\' {
		return
	}
	a.inHeader = true
	a.header = a.header[:0]
}

// headerLine handles a line outside the hunks.
func (a *auditor) headerLine(line []byte) {
	line = bytes.TrimRight(line, "\r\n")
	switch {
	case bytes.HasPrefix(line, []byte("diff --git ")):
		a.endFile()
		a.inFile = true
		a.gitPath = gitHeaderPath(string(line[len("diff --git "):]))
	case !a.inFile:
		// Text before the first file (a commit message, say).
	case bytes.HasPrefix(line, []byte("@@ ")):
		a.finishHeader()
		if err := a.hunkHeader(string(line)); err != nil {
			// git writes no such header; skip the hunk's lines as
			// headers rather than guess the line numbers.
			a.oldLeft, a.newLeft = 0, 0
		}
	case bytes.HasPrefix(line, []byte("--- ")):
		a.oldPath = headerPath(string(line[4:]), "a/")
	case bytes.HasPrefix(line, []byte("+++ ")):
		a.newPath = headerPath(string(line[4:]), "b/")
	case bytes.HasPrefix(line, []byte("rename from ")):
		a.oldPath = unquote(string(line[len("rename from "):]))
	case bytes.HasPrefix(line, []byte("rename to ")):
		a.newPath = unquote(string(line[len("rename to "):]))
	case bytes.Equal(line, []byte("GIT binary patch")):
		a.finishHeader()
		a.binary = true
	}
}

// hunkHeader reads "@@ -l[,s] +l[,s] @@ ...": a count left out is 1.
func (a *auditor) hunkHeader(line string) error {
	ranges, _, ok := strings.Cut(line[len("@@ "):], " @@")
	if !ok {
		return errors.New("no closing @@")
	}
	f := strings.Fields(ranges)
	if len(f) != 2 || !strings.HasPrefix(f[0], "-") || !strings.HasPrefix(f[1], "+") {
		return fmt.Errorf("bad ranges %q", ranges)
	}
	_, oldN, err := hunkRange(f[0][1:])
	if err != nil {
		return err
	}
	newStart, newN, err := hunkRange(f[1][1:])
	if err != nil {
		return err
	}
	a.oldLeft, a.newLeft, a.newLine = oldN, newN, newStart
	return nil
}

func hunkRange(s string) (start, n int, err error) {
	first, count, ok := strings.Cut(s, ",")
	if start, err = strconv.Atoi(first); err != nil || start < 0 {
		return 0, 0, fmt.Errorf("bad range %q", s)
	}
	n = 1
	if ok {
		if n, err = strconv.Atoi(count); err != nil || n < 0 {
			return 0, 0, fmt.Errorf("bad range %q", s)
		}
	}
	return start, n, nil
}

// finishHeader is called when the file's headers are all read (at its
// first hunk, its binary section, or the next file): its path is known.
func (a *auditor) finishHeader() {
	if !a.inFile || a.headerDone {
		return
	}
	a.headerDone = true
	if a.newPath == "" {
		a.newPath = a.gitPath
	}
	if a.oldPath == "" {
		a.oldPath = a.gitPath
	}
	a.kind = kindOf(a.path())
	// With --no-renames both paths are one; a type change (a file
	// become a symlink) is two diffs of one path, one after the other:
	// either way, one finding.
	for _, p := range []string{a.oldPath, a.newPath} {
		if p == "" || p == a.lastProtected {
			continue
		}
		reported, isDropped := a.dropped[p]
		if isDropped && reported {
			continue
		}
		if isDropped || (a.o.protected != nil && a.o.protected(p)) {
			if isDropped {
				a.dropped[p] = true
			}
			a.lastProtected = p
			a.add(contract.AuditFinding{Path: p, Rule: RuleProtected}, false)
		}
	}
}

// path is the file's path in findings: the new one, or the old one of a
// deleted file.
func (a *auditor) path() string {
	if a.newPath != "" {
		return a.newPath
	}
	return a.oldPath
}

func (a *auditor) endFile() {
	a.finishHeader()
	a.inFile, a.headerDone, a.binary = false, false, false
	a.oldPath, a.newPath, a.gitPath = "", "", ""
	a.oldLeft, a.newLeft = 0, 0
}

// startScan begins the rules on an added line, given its first piece.
func (a *auditor) startScan(first []byte) {
	a.hits, a.exec = 0, false
	a.window = a.window[:0]
	trimmed := bytes.TrimLeft(first, " \t")
	a.comment = a.kind.goFile && bytes.HasPrefix(trimmed, []byte("//"))
}

// scan runs the rules on a piece of an added line. The rules see the
// piece with the end of the previous one before it (overlap), so a match
// across the boundary is found; a rule reports once per line.
func (a *auditor) scan(body []byte) {
	keep := len(a.window)
	if keep > overlap {
		keep = overlap
	}
	a.window = append(a.window[:0], a.window[len(a.window)-keep:]...)
	a.window = append(a.window, body...)
	w := a.window
	for i, r := range rules {
		if a.hits&(1<<i) != 0 || (r.code && a.comment) || !r.applies(a.kind) || !r.match(w) {
			continue
		}
		a.hits |= 1 << i
		name := r.name
		if name == RuleFraming {
			name = framingRule(w)
		}
		a.add(contract.AuditFinding{Path: a.path(), Line: a.lineNo, Rule: name}, r.needsExec)
	}
	if !a.exec && !a.comment && a.kind.nonTestGo() && processStart(w) {
		a.exec = true
		a.sawProcessStart = true
	}
	// What is kept for the next piece: copy, since the reader's buffer
	// (body) is reused.
	if len(a.window) > overlap {
		a.window = append(a.window[:0], a.window[len(a.window)-overlap:]...)
	}
}

func (a *auditor) add(f contract.AuditFinding, needsExec bool) {
	a.seq++
	list, more := &a.found, &a.moreFound
	if needsExec {
		list, more = &a.pending, &a.morePending
	}
	if len(*list) >= a.o.maxFindings {
		*more++
		return
	}
	*list = append(*list, finding{seq: a.seq, f: f})
}

// result merges the findings in patch order, keeps the first ones up to
// the cap, and counts the rest in a last finding.
func (a *auditor) result() []contract.AuditFinding {
	// Dropped paths the patch did not name (a patch cut short) are
	// still changes the grade reset.
	for _, p := range a.o.dropped {
		if !a.dropped[p] {
			a.dropped[p] = true
			a.add(contract.AuditFinding{Path: p, Rule: RuleProtected}, false)
		}
	}
	all := a.found
	more := a.moreFound
	if a.sawProcessStart && len(a.pending) > 0 {
		all = append(slices.Clone(a.found), a.pending...)
		slices.SortStableFunc(all, func(x, y finding) int { return x.seq - y.seq })
		more += a.morePending
	}
	if len(all) > a.o.maxFindings {
		more += len(all) - a.o.maxFindings
		all = all[:a.o.maxFindings]
	}
	var out []contract.AuditFinding
	for _, f := range all {
		out = append(out, f.f)
	}
	if more > 0 {
		out = append(out, contract.AuditFinding{Rule: fmt.Sprintf("%d more findings not listed", more)})
	}
	return out
}
