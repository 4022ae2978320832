package gitrepo

import (
	"bytes"
	"strings"
)

// pattern is one line of a .gitignore file, parsed as git's
// parse_path_pattern does.
type pattern struct {
	// glob is the pattern without its "!" and trailing "/"; a leading "/"
	// is kept (it is removed when matching, as git does).
	glob string
	// negative is set for "!pattern": a match re-includes the path.
	negative bool
	// mustBeDir is set for "pattern/": only directories match.
	mustBeDir bool
	// noDir is set when the pattern has no slash (other than a trailing
	// one): it is matched against the last path component only, at any
	// depth below the .gitignore's directory.
	noDir bool
}

// ignoreList is the parsed content of one .gitignore file.
type ignoreList struct {
	// base is the directory holding the .gitignore, relative to the
	// repository root, with a trailing "/" ("" at the root).
	base     string
	patterns []pattern
}

// parseIgnore parses a .gitignore file the way git's
// add_patterns_from_buffer does: a UTF-8 byte order mark is skipped, lines
// end at "\n" (a "\r" before it is dropped), empty lines and lines starting
// with "#" are skipped, and unescaped trailing spaces are trimmed.
func parseIgnore(base string, content []byte) *ignoreList {
	l := &ignoreList{base: base}
	for _, line := range lines(content) {
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		// git handles lines as C strings: a NUL ends the line.
		if i := bytes.IndexByte(line, 0); i >= 0 {
			line = line[:i]
		}
		s := trimTrailingSpaces(string(line))
		l.patterns = append(l.patterns, parsePattern(s))
	}
	return l
}

// lines splits a .gitignore or .gitattributes file as git reads it: a UTF-8
// byte order mark is skipped and lines end at "\n"; git appends a newline
// to the buffer, so a last line without one still counts.
func lines(content []byte) [][]byte {
	content = bytes.TrimPrefix(content, []byte("\xef\xbb\xbf"))
	var out [][]byte
	for len(content) > 0 {
		i := bytes.IndexByte(content, '\n')
		if i < 0 {
			return append(out, content)
		}
		out = append(out, content[:i])
		content = content[i+1:]
	}
	return out
}

// trimTrailingSpaces removes trailing spaces unless they are escaped with a
// backslash, as git's trim_trailing_spaces does (tabs are kept).
func trimTrailingSpaces(s string) string {
	lastSpace := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if lastSpace < 0 {
				lastSpace = i
			}
		case '\\':
			i++
			if i >= len(s) {
				return s
			}
			lastSpace = -1
		default:
			lastSpace = -1
		}
	}
	if lastSpace >= 0 {
		return s[:lastSpace]
	}
	return s
}

func parsePattern(s string) pattern {
	var p pattern
	if strings.HasPrefix(s, "!") {
		p.negative = true
		s = s[1:]
	}
	if strings.HasSuffix(s, "/") {
		p.mustBeDir = true
		s = s[:len(s)-1]
	}
	p.noDir = !strings.Contains(s, "/")
	p.glob = s
	return p
}

// match reports whether the pattern matches path (relative to the
// repository root, inside l.base).
func (p *pattern) match(base, path string, isDir bool) bool {
	if p.mustBeDir && !isDir {
		return false
	}
	if p.noDir {
		name := path[strings.LastIndexByte(path, '/')+1:]
		return wildmatch(p.glob, name, false)
	}
	// A pattern with a slash is anchored at its .gitignore's directory.
	return wildmatch(strings.TrimPrefix(p.glob, "/"), path[len(base):], true)
}

// lastMatch returns the last pattern of l that matches path, or nil: within
// one file the last matching line decides.
func (l *ignoreList) lastMatch(path string, isDir bool) *pattern {
	for i := len(l.patterns) - 1; i >= 0; i-- {
		if l.patterns[i].match(l.base, path, isDir) {
			return &l.patterns[i]
		}
	}
	return nil
}
