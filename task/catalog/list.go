package catalog

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/42-b3yond-6ug/ssebench/task"
)

// Entry is one task of a catalog, as `ssebench tasks list` lists it.
type Entry struct {
	ID       string   `json:"id"`
	Dataset  string   `json:"dataset"`
	Version  string   `json:"version"`
	Language string   `json:"language"`
	Project  string   `json:"project"`
	Arch     []string `json:"arch"`
	Checks   []string `json:"checks"`
	// Image is the case image, registry-prefixed, pinned by digest when
	// the lock pins it (Pinned), else tagged with the dataset version.
	Image   string `json:"image"`
	Pinned  bool   `json:"pinned"`
	Catalog string `json:"catalog"`
}

// HomeCatalogs are the catalogs of a home with none named: the dataset
// folders under home's datasets/ that hold a manifest.json. None is an
// error that says how to name one.
func HomeCatalogs(home string) ([]string, error) {
	all, _ := filepath.Glob(filepath.Join(home, "datasets", "*", task.ManifestFile))
	if len(all) == 0 {
		return nil, fmt.Errorf("no catalog: pass --catalog, set %s, or generate manifest.json in a dataset under %s", CatalogEnv, filepath.Join(home, "datasets"))
	}
	var locs []string
	for _, a := range all {
		locs = append(locs, filepath.Dir(a))
	}
	return locs, nil
}

// List opens each catalog of locs with opts and lists its tasks, their
// case images under registry. The catalogs' warnings (a lock stale,
// malformed or missing, a task it does not pin) go to warn, one line
// each.
func List(ctx context.Context, locs []string, registry string, warn io.Writer, opts ...Option) ([]Entry, error) {
	var entries []Entry
	for _, l := range locs {
		c, err := Open(ctx, l, opts...)
		if err != nil {
			return nil, err
		}
		for _, w := range c.Warnings {
			fmt.Fprintf(warn, "warning: %s\n", w)
		}
		for _, t := range c.Manifest.Tasks {
			ref, pinned, warning, err := c.CaseRef(registry, t.ID)
			if err != nil {
				return nil, err
			}
			if warning != "" {
				fmt.Fprintf(warn, "warning: %s\n", warning)
			}
			entries = append(entries, Entry{
				ID: t.ID, Dataset: c.Manifest.Dataset, Version: c.Manifest.Version, Language: t.Language, Project: t.Project,
				Arch: t.Arch, Checks: t.Checks, Image: ref, Pinned: pinned, Catalog: l,
			})
		}
	}
	return entries, nil
}

// WriteTable writes entries to w as a table: task, dataset and version,
// language, arch and case image.
func WriteTable(w io.Writer, entries []Entry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tDATASET\tLANGUAGE\tARCH\tCASE IMAGE")
	for _, e := range entries {
		// Every field is a catalog's: the ids and names are checked
		// when it is opened, the free text is escaped.
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", printable(e.ID), printable(e.Dataset+" "+e.Version), printable(e.Language), printable(strings.Join(e.Arch, ",")), printable(e.Image))
	}
	return tw.Flush()
}

// printable returns s as it may go to a terminal: unchanged when every rune
// is a printable character, else quoted with Go's escapes. A name that
// comes from a file someone else wrote (a catalog's language or project)
// could otherwise carry a newline that forges a line, an escape sequence,
// or a right-to-left override that shows another name.
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || r == unicode.ReplacementChar }) < 0 {
		return s
	}
	return strconv.Quote(s)
}
