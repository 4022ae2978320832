package preflight

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
)

// MustBuild counts the images of checks a run must build.
func MustBuild(checks []Image) int {
	n := 0
	for _, c := range checks {
		if c.Build {
			n++
		}
	}
	return n
}

// WriteTable writes checks to w as `ssebench tasks check` prints them: a
// table of the images (task, kind, agent, where, platforms, action,
// image), how many must be built for platform, and the commands that make
// what a run does not (see Fixes).
func WriteTable(w io.Writer, checks []Image, platform string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tKIND\tAGENT\tWHERE\tPLATFORMS\tACTION\tIMAGE")
	for _, c := range checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", orDash(c.Task), c.Kind, orDash(c.Agent), c.Where, orDash(strings.Join(c.Platforms, ",")), c.Action(), c.Ref)
	}
	tw.Flush()
	fmt.Fprintf(w, "%d of %s must be built for %s\n", MustBuild(checks), units.Plural(len(checks), "image"), platform)
	if fixes := Fixes(checks); len(fixes) > 0 {
		fmt.Fprintf(w, "a run does not make the base images or the runtime; make what is missing first:\n")
		for _, f := range fixes {
			fmt.Fprintf(w, "  %s\n", f)
		}
		if strings.Contains(strings.Join(fixes, " "), OSImagePlaceholder) {
			fmt.Fprintf(w, "(%s)\n", OSImageNote)
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
