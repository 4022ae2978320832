// Package term says whether output goes to a terminal, where a line can
// be redrawn.
package term

import (
	"io"
	"os"
)

// IsTerminal says whether w is a terminal that draws a redrawn line: a
// carriage return elsewhere (a CI log, a file) only garbles the output,
// and TERM=dumb asks for none.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}
