package store

// The store's reports as `ssebench store` prints them: JSON (the types'
// own tags) or tables.

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
)

// Listed is one name of the store, as `store ls` lists it.
type Listed struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
	// Kind is "image" or "index".
	Kind string `json:"kind"`
}

// Listing is es as `store ls` lists them.
func Listing(es []Entry) []Listed {
	rows := make([]Listed, 0, len(es))
	for _, e := range es {
		kind := "image"
		if e.Descriptor.MediaType.IsIndex() {
			kind = "index"
		}
		rows = append(rows, Listed{Name: e.Name, Digest: e.Descriptor.Digest.String(), Kind: kind})
	}
	return rows
}

// WriteListing writes rows as a table.
func WriteListing(w io.Writer, rows []Listed) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDIGEST\tKIND")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.Digest, r.Kind)
	}
	return tw.Flush()
}

// WriteTable writes u as a table: each name, then the total.
func (u *Usage) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tLOCAL\tIN REGISTRY ONLY\tFREED BY RM")
	for _, r := range u.Images {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, units.Bytes(r.Local), units.Bytes(r.Remote), units.Bytes(r.Unique))
	}
	fmt.Fprintf(tw, "total\t%s in %s\t\t\n", units.Bytes(u.Bytes), units.Plural(u.Blobs, "blob"))
	return tw.Flush()
}

// String is what gc freed, in a line.
func (r GCResult) String() string {
	return fmt.Sprintf("freed %s (%s)", units.Bytes(r.Bytes), units.Plural(r.Blobs, "blob"))
}

// WriteProblems writes each problem of the store in dir on its line
// ("FAIL ..."), or "ok DIR" when there is none.
func WriteProblems(w io.Writer, dir string, probs []Problem) error {
	for _, p := range probs {
		if _, err := fmt.Fprintf(w, "FAIL %s\n", p); err != nil {
			return err
		}
	}
	if len(probs) == 0 {
		_, err := fmt.Fprintf(w, "ok %s\n", dir)
		return err
	}
	return nil
}

// Names lists the store's names, those in skip left out, sorted (what a
// shell completes).
func (s *Store) Names(skip ...string) ([]string, error) {
	es, err := s.List()
	if err != nil {
		return nil, err
	}
	given := map[string]bool{}
	for _, a := range skip {
		given[a] = true
	}
	var out []string
	for _, e := range es {
		if !given[e.Name] {
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}
