package gitrepo

// This file is a Go rendering of git's wildmatch.c (git v2.39), the glob
// matcher behind .gitignore. Its quirks are git's and are kept on purpose:
// the tree ids we compute must equal those of `git add -A`, so whatever git
// ignores we must ignore, byte for byte.
// Adapted from https://github.com/git/git/blob/v2.39.0/wildmatch.c

// wildmatch results, as in git.
const (
	wmMatch           = 0
	wmNoMatch         = 1
	wmAbortAll        = -1
	wmAbortToStarStar = -2
)

// wildmatch reports whether text matches the glob pattern. With pathname
// set, '*', '?' and bracket expressions do not match '/', and "**" between
// slashes matches any number of directories (git's WM_PATHNAME).
func wildmatch(pattern, text string, pathname bool) bool {
	return dowild(pattern, text, pathname) == wmMatch
}

// at returns s[i], or 0 past the end: the C code walks NUL-terminated
// strings and relies on reading that terminator.
func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

func isGlobSpecial(c byte) bool {
	return c == '*' || c == '?' || c == '[' || c == '\\'
}

func hasSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return true
		}
	}
	return false
}

func dowild(pat, text string, pathname bool) int {
	p, t := 0, 0
	for ; at(pat, p) != 0; t, p = t+1, p+1 {
		pCh := pat[p]
		tCh := at(text, t)
		if tCh == 0 && pCh != '*' {
			return wmAbortAll
		}
		switch pCh {
		case '\\':
			// Literal match with the next character; a trailing
			// backslash compares against NUL and so never matches.
			p++
			pCh = at(pat, p)
			if tCh != pCh {
				return wmNoMatch
			}
			continue
		default:
			if tCh != pCh {
				return wmNoMatch
			}
			continue
		case '?':
			if pathname && tCh == '/' {
				return wmNoMatch
			}
			continue
		case '*':
			var matchSlash bool
			p++
			if at(pat, p) == '*' {
				prevP := p - 2
				for p++; at(pat, p) == '*'; p++ {
				}
				switch {
				case !pathname:
					matchSlash = true
				case (prevP < 0 || pat[prevP] == '/') &&
					(at(pat, p) == 0 || at(pat, p) == '/' ||
						(at(pat, p) == '\\' && at(pat, p+1) == '/')):
					// "**/" may match no directory at all:
					// try the rest of the pattern right here.
					if at(pat, p) == '/' && dowild(pat[p+1:], text[t:], pathname) == wmMatch {
						return wmMatch
					}
					matchSlash = true
				default:
					matchSlash = false
				}
			} else {
				matchSlash = !pathname
			}
			if at(pat, p) == 0 {
				// Trailing "**" matches everything, trailing "*"
				// only what has no more slashes.
				if !matchSlash && hasSlash(text[t:]) {
					return wmNoMatch
				}
				return wmMatch
			} else if !matchSlash && pat[p] == '/' {
				// One asterisk followed by a slash matches the
				// rest of this directory name.
				i := t
				for i < len(text) && text[i] != '/' {
					i++
				}
				if i == len(text) {
					return wmNoMatch
				}
				t = i
				// The loop header consumes the slash in both
				// pattern and text.
				break
			}
			for {
				if tCh == 0 {
					break
				}
				// Skip ahead to the next occurrence of a literal
				// that follows the star.
				if !isGlobSpecial(at(pat, p)) {
					pCh = at(pat, p)
					for {
						tCh = at(text, t)
						if tCh == 0 || (!matchSlash && tCh == '/') {
							break
						}
						if tCh == pCh {
							break
						}
						t++
					}
					if tCh != pCh {
						return wmNoMatch
					}
				}
				matched := dowild(pat[p:], text[t:], pathname)
				if matched != wmNoMatch {
					if !matchSlash || matched != wmAbortToStarStar {
						return matched
					}
				} else if !matchSlash && tCh == '/' {
					return wmAbortToStarStar
				}
				t++
				tCh = at(text, t)
			}
			return wmAbortAll
		case '[':
			p++
			pCh = at(pat, p)
			if pCh == '^' {
				pCh = '!'
			}
			negated := pCh == '!'
			if negated {
				p++
				pCh = at(pat, p)
			}
			var prevCh byte
			matched := false
			for {
				if pCh == 0 {
					return wmAbortAll
				}
				switch {
				case pCh == '\\':
					p++
					pCh = at(pat, p)
					if pCh == 0 {
						return wmAbortAll
					}
					if tCh == pCh {
						matched = true
					}
				case pCh == '-' && prevCh != 0 && at(pat, p+1) != 0 && at(pat, p+1) != ']':
					p++
					pCh = pat[p]
					if pCh == '\\' {
						p++
						pCh = at(pat, p)
						if pCh == 0 {
							return wmAbortAll
						}
					}
					if tCh <= pCh && tCh >= prevCh {
						matched = true
					}
					pCh = 0 // so that prevCh becomes 0
				case pCh == '[' && at(pat, p+1) == ':':
					p += 2
					s := p
					for at(pat, p) != 0 && pat[p] != ']' {
						p++
					}
					if at(pat, p) == 0 {
						return wmAbortAll
					}
					i := p - s - 1
					if i < 0 || pat[p-1] != ':' {
						// No ":]": an ordinary '[' in the set.
						p = s - 2
						pCh = '['
						if tCh == pCh {
							matched = true
						}
						break
					}
					ok, known := charClass(pat[s:s+i], tCh)
					if !known {
						return wmAbortAll
					}
					if ok {
						matched = true
					}
					pCh = 0
				default:
					if tCh == pCh {
						matched = true
					}
				}
				prevCh = pCh
				p++
				pCh = at(pat, p)
				if pCh == ']' {
					break
				}
			}
			if matched == negated || (pathname && tCh == '/') {
				return wmNoMatch
			}
			continue
		}
		// Reached by "break" out of the switch: the single-star-slash
		// case, which continues the outer loop as the C code does.
	}
	if t < len(text) {
		return wmNoMatch
	}
	return wmMatch
}

// charClass evaluates a POSIX class the way git's locale-independent ctype
// does: ASCII only, so no byte above 0x7f belongs to any class, and
// "space" is only tab, newline, carriage return and space.
func charClass(name string, c byte) (match, known bool) {
	isUpper := c >= 'A' && c <= 'Z'
	isLower := c >= 'a' && c <= 'z'
	isDigit := c >= '0' && c <= '9'
	switch name {
	case "alnum":
		return isUpper || isLower || isDigit, true
	case "alpha":
		return isUpper || isLower, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < 0x20 || c == 0x7f, true
	case "digit":
		return isDigit, true
	case "graph":
		return c > 0x20 && c < 0x7f, true
	case "lower":
		return isLower, true
	case "print":
		return c >= 0x20 && c < 0x7f, true
	case "punct":
		return c > 0x20 && c < 0x7f && !isUpper && !isLower && !isDigit, true
	case "space":
		return c == ' ' || c == '\t' || c == '\n' || c == '\r', true
	case "upper":
		return isUpper, true
	case "xdigit":
		return isDigit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'), true
	}
	return false, false
}
