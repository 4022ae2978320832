package gitrepo

import (
	"bytes"
	"io"
	"strings"
)

// `git add` stores a text file with LF line endings when .gitattributes
// says so (text, text=auto, eol=, the older crlf): a project whose
// checkout has CRLF files (*.bat eol=crlf, say) would otherwise get blobs
// with CRLF, and git in the container would then show those files as
// changed, and every agent's patch would carry them. Only the attributes
// that decide the line-ending conversion of `git add` are read; filters
// (LFS) are not configured in a fresh repository and pass content through
// unchanged, as git does.

// attrValue is the state of one attribute for a path, as git's attr.c
// keeps it.
type attrValue struct {
	// decided is set once a line has set, unset or reset the attribute:
	// lines of lower precedence no longer count.
	decided bool
	// state is "set", "unset", "" (unspecified: "!attr") or the value of
	// "attr=value".
	state string
}

// attrAssign is one "attr", "-attr", "!attr" or "attr=value" of a line.
type attrAssign struct {
	name  string
	state string
}

// attrLine is one line of a .gitattributes file.
type attrLine struct {
	pat     pattern
	assigns []attrAssign
}

// attrList is the parsed content of one .gitattributes file.
type attrList struct {
	// base is the file's directory with a trailing "/" ("" at the root).
	base  string
	lines []attrLine
}

// builtinMacros are git's built-in macro attributes.
var builtinMacros = map[string][]attrAssign{
	"binary": {{"diff", "unset"}, {"merge", "unset"}, {"text", "unset"}},
}

// parseAttributes parses a .gitattributes file as git's attr.c does:
// lines as for .gitignore files, the pattern first (a pattern in double
// quotes is not supported and the line is skipped), then whitespace
// separated assignments. Negative patterns are refused by git (with a
// warning); "[attr]name ..." defines a macro, which git allows in the
// top-level file only; they are expanded when a path's attributes are
// looked up, so the order the files come in does not matter.
func parseAttributes(base string, content []byte, macros map[string][]attrAssign) *attrList {
	l := &attrList{base: base}
	for _, line := range lines(content) {
		if i := bytes.IndexByte(line, 0); i >= 0 {
			line = line[:i]
		}
		// git's blanks: a "\r" separates like a space.
		fields := strings.FieldsFunc(string(line), func(r rune) bool { return r == ' ' || r == '\t' || r == '\r' })
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") || strings.HasPrefix(fields[0], "\"") {
			continue
		}
		var assigns []attrAssign
		for _, f := range fields[1:] {
			assigns = append(assigns, parseAssign(f))
		}
		if name, ok := strings.CutPrefix(fields[0], "[attr]"); ok {
			if base == "" && name != "" && macros != nil {
				macros[name] = assigns
			}
			continue
		}
		if strings.HasPrefix(fields[0], "!") {
			continue
		}
		l.lines = append(l.lines, attrLine{pat: parsePattern(fields[0]), assigns: assigns})
	}
	return l
}

func parseAssign(s string) attrAssign {
	switch {
	case strings.HasPrefix(s, "-"):
		return attrAssign{s[1:], "unset"}
	case strings.HasPrefix(s, "!"):
		return attrAssign{s[1:], ""}
	}
	if name, v, ok := strings.Cut(s, "="); ok {
		return attrAssign{name, v}
	}
	return attrAssign{s, "set"}
}

// crlfAction is what `git add` does to a file's line endings.
type crlfAction int

const (
	// crlfKeep stores the content as it is (binary, or no attribute:
	// core.autocrlf is false in a fresh repository).
	crlfKeep crlfAction = iota
	// crlfText turns every CRLF into LF.
	crlfText
	// crlfAuto does so unless git's heuristics find the content binary.
	crlfAuto
)

// crlfActionOf decides the conversion of path from the attributes of the
// .gitattributes files of its directories, deepest first, and within a
// file the last matching line first, as git's convert_attrs does.
func (b *Builder) crlfActionOf(path string) crlfAction {
	if len(b.attrs) == 0 {
		return crlfKeep
	}
	vals := map[string]*attrValue{}
	var fill func(assigns []attrAssign)
	// fill is git's fill_one: the assignments of one line, last first;
	// an attribute already decided by a line of higher precedence stays,
	// and a macro just set expands into what it stands for.
	fill = func(assigns []attrAssign) {
		for j := len(assigns) - 1; j >= 0; j-- {
			a := assigns[j]
			v := vals[a.name]
			if v == nil {
				v = &attrValue{}
				vals[a.name] = v
			}
			if v.decided {
				continue
			}
			v.decided, v.state = true, a.state
			if a.state != "set" {
				continue
			}
			if m, ok := b.macros[a.name]; ok {
				fill(m)
			} else if m, ok := builtinMacros[a.name]; ok {
				fill(m)
			}
		}
	}
	dir := parentDir(path)
	for {
		if l := b.attrs[dir]; l != nil {
			for i := len(l.lines) - 1; i >= 0; i-- {
				if ln := &l.lines[i]; ln.pat.match(l.base, path, false) {
					fill(ln.assigns)
				}
			}
		}
		if dir == "" {
			break
		}
		dir = parentDir(dir)
	}
	state := func(name string) string {
		if v := vals[name]; v != nil {
			return v.state
		}
		return ""
	}
	action := func(state string) (crlfAction, bool) {
		switch state {
		case "set", "input":
			return crlfText, true
		case "unset":
			return crlfKeep, true
		case "auto":
			return crlfAuto, true
		}
		return crlfKeep, false
	}
	if a, ok := action(state("text")); ok {
		return a
	}
	if a, ok := action(state("crlf")); ok {
		return a
	}
	// eol alone makes a file text.
	if s := state("eol"); s == "lf" || s == "crlf" {
		return crlfText
	}
	return crlfKeep
}

// textStats counts what git's gather_stats counts, over a stream. The
// printable bytes are what is left once the others are counted.
type textStats struct {
	crlf, loneCR, lf, nul, nonPrintable int64
	// pendingCR is a "\r" at the end of the last chunk.
	pendingCR bool
	last      byte
	n         int64
}

// Byte classes for textStats; most bytes are printable (0).
const (
	classPrintable = iota
	classCR
	classLF
	classNUL
	classNonPrintable
)

var byteClass = func() (t [256]uint8) {
	for c := 0; c < 32; c++ {
		t[c] = classNonPrintable
	}
	for _, c := range []byte{'\b', '\t', '\033', '\014'} {
		t[c] = classPrintable
	}
	t['\r'], t['\n'], t[0], t[127] = classCR, classLF, classNUL, classNonPrintable
	return t
}()

func (s *textStats) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	i := 0
	if s.pendingCR {
		s.pendingCR = false
		if p[0] == '\n' {
			s.crlf++
			i = 1
		} else {
			s.loneCR++
		}
	}
	for ; i < len(p); i++ {
		switch byteClass[p[i]] {
		case classPrintable:
		case classCR:
			switch {
			case i+1 == len(p):
				s.pendingCR = true
			case p[i+1] == '\n':
				s.crlf++
				i++
			default:
				s.loneCR++
			}
		case classLF:
			s.lf++
		case classNUL:
			s.nul++
			s.nonPrintable++
		default:
			s.nonPrintable++
		}
	}
	s.last = p[len(p)-1]
	s.n += int64(len(p))
	return len(p), nil
}

// binary is git's convert_is_binary, once the whole content is counted.
func (s *textStats) binary() bool {
	loneCR, nonPrintable := s.loneCR, s.nonPrintable
	if s.pendingCR {
		loneCR++
	}
	printable := s.n - 2*s.crlf - loneCR - s.lf - nonPrintable
	// A DOS end-of-file mark is not counted against the content.
	if s.n > 0 && s.last == '\032' {
		nonPrintable--
	}
	return loneCR > 0 || s.nul > 0 || printable>>7 < nonPrintable
}

// convert reports whether git turns the counted content's CRLFs into LFs.
func (s *textStats) convert(a crlfAction) bool {
	switch {
	case s.crlf == 0:
		return false
	case a == crlfText:
		return true
	case a == crlfAuto:
		return !s.binary()
	}
	return false
}

// crlfToLF drops the "\r" of every "\r\n" of a stream.
type crlfToLF struct {
	r   io.Reader
	buf []byte
	// out[start:end] is converted and not yet read.
	out        []byte
	start, end int
	// pendingCR is a "\r" that ended the last chunk, not yet decided.
	pendingCR bool
	eof       bool
}

func (c *crlfToLF) Read(p []byte) (int, error) {
	if c.buf == nil {
		c.buf = make([]byte, 32<<10)
		c.out = make([]byte, len(c.buf)+1)
	}
	for c.start == c.end {
		c.start, c.end = 0, 0
		if c.eof {
			if !c.pendingCR {
				return 0, io.EOF
			}
			c.pendingCR = false
			c.out[0], c.end = '\r', 1
			break
		}
		n, err := c.r.Read(c.buf)
		for _, ch := range c.buf[:n] {
			if c.pendingCR {
				c.pendingCR = false
				if ch != '\n' {
					c.out[c.end] = '\r'
					c.end++
				}
			}
			if ch == '\r' {
				c.pendingCR = true
				continue
			}
			c.out[c.end] = ch
			c.end++
		}
		if err == io.EOF {
			c.eof = true
		} else if err != nil {
			return 0, err
		}
	}
	n := copy(p, c.out[c.start:c.end])
	c.start += n
	return n, nil
}
