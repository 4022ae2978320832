package commands

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// printable returns s as it may go to a terminal: unchanged when every rune
// is a printable character, else quoted with Go's escapes. A name that
// comes from a file someone else wrote (a catalog's language or project, an
// archive's image name) could otherwise carry a newline that forges a line,
// an escape sequence, or a right-to-left override that shows another name.
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || r == utf8Error }) < 0 {
		return s
	}
	return strconv.Quote(s)
}

const utf8Error = '\uFFFD'

// quote is s for a line of output: quoted, at most 80 bytes of it.
func quote(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%q…", strings.ToValidUTF8(s[:80], ""))
	}
	return fmt.Sprintf("%q", s)
}
