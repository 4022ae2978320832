package commands

import (
	"fmt"
	"strings"
)

// quote is s for a line of output: quoted, at most 80 bytes of it.
func quote(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%q…", strings.ToValidUTF8(s[:80], ""))
	}
	return fmt.Sprintf("%q", s)
}
