package audit

import "strings"

// headerPath reads the path of a "--- " or "+++ " line: "a/x.go" (prefix
// "a/" or "b/" taken off), a quoted one, or /dev/null (""). git ends the
// line with a tab when the path has a space (diff.c, builtin_diff); a
// path that ends with a tab of its own is quoted, so the tab is never
// the path's.
func headerPath(s, prefix string) string {
	s = strings.TrimSuffix(s, "\t")
	if s == "/dev/null" {
		return ""
	}
	p := unquote(s)
	if rest, ok := strings.CutPrefix(p, prefix); ok {
		return rest
	}
	return p
}

// gitHeaderPath reads the path of a "diff --git a/P b/P" line (given
// without "diff --git "): the line's two names are one path in every
// diff but a rename's, so P is the first half of the line, whatever
// spaces and " b/" it holds. "" when the two names differ (a rename's
// header lines name them).
func gitHeaderPath(rest string) string {
	if strings.HasPrefix(rest, `"`) {
		end := quotedEnd(rest)
		if end < 0 {
			return ""
		}
		a, b := unquote(rest[:end]), unquote(strings.TrimPrefix(rest[end:], " "))
		a, okA := strings.CutPrefix(a, "a/")
		b, okB := strings.CutPrefix(b, "b/")
		if !okA || !okB || a != b {
			return ""
		}
		return a
	}
	n := len(rest) - len("a/ b/")
	if n <= 0 || n%2 != 0 {
		return ""
	}
	p := rest[len("a/") : len("a/")+n/2]
	if rest != "a/"+p+" b/"+p {
		return ""
	}
	return p
}

// quotedEnd returns the index just past the closing quote of the quoted
// string s starts with, or -1.
func quotedEnd(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// unquote undoes git's quoting of a path (quote.c, quote_c_style): a path
// with a control byte, a byte of 0x80 or more (core.quotePath, the
// default), a '"' or a '\' is written in double quotes with C escapes,
// each such byte as \ooo octal ("a/\303\251.go" is "a/é.go"). Anything
// else is returned as it is, and so is a quoted string that is not well
// formed.
func unquote(s string) string {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return s
	}
	in := s[1 : len(s)-1]
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(in) {
			return s
		}
		switch e := in[i]; e {
		case 'a':
			out = append(out, '\a')
		case 'b':
			out = append(out, '\b')
		case 't':
			out = append(out, '\t')
		case 'n':
			out = append(out, '\n')
		case 'v':
			out = append(out, '\v')
		case 'f':
			out = append(out, '\f')
		case 'r':
			out = append(out, '\r')
		case '"', '\\':
			out = append(out, e)
		case '0', '1', '2', '3':
			if i+2 >= len(in) || !isOctal(in[i+1]) || !isOctal(in[i+2]) {
				return s
			}
			out = append(out, (e-'0')<<6|(in[i+1]-'0')<<3|(in[i+2]-'0'))
			i += 2
		default:
			return s
		}
	}
	return string(out)
}

func isOctal(c byte) bool { return '0' <= c && c <= '7' }
