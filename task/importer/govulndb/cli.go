package govulndb

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/42-b3yond-6ug/ssebench/task"
)

// KeepOptions say what KeepVerified keeps.
type KeepOptions struct {
	// Dataset is the dataset the import wrote, as read now.
	Dataset *task.Dataset
	// Verified says whether the task id verified with its folder as it
	// is: files is the folder's files digest (release.Record.Verified).
	Verified func(id, files string) bool
	// ReasonFiles hold the tables `ssebench dataset verify` printed: a
	// dropped task's failed checks become its reason (the first file
	// that names the task gives it).
	ReasonFiles []string
}

// KeepVerified is `dataset import govulndb --keep-verified`: Keep of the
// dataset's tasks that verified with their folders as they are, the
// others dropped with the reasons of o.ReasonFiles.
func KeepVerified(o KeepOptions) (kept, dropped int, err error) {
	digests := map[string]string{}
	for _, t := range o.Dataset.Tasks {
		if d, err := t.FilesDigest(); err == nil {
			digests[t.ID] = d
		}
	}
	why := map[string]string{}
	for _, f := range o.ReasonFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, 0, fmt.Errorf("reading the verify table: %w", err)
		}
		r, err := ReadVerifyReasons(bytes.NewReader(b))
		if err != nil {
			return 0, 0, err
		}
		for id, w := range r {
			if why[id] == "" {
				why[id] = w
			}
		}
	}
	return Keep(o.Dataset.Dir, func(id string) bool {
		d, ok := digests[id]
		return ok && o.Verified(id, d)
	}, why)
}

// WriteRows writes an import's rows to w as a table (report, module,
// status, reason) and returns how many were imported.
func WriteRows(w io.Writer, rows []Row) (imported int) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REPORT\tMODULE\tSTATUS\tREASON")
	for _, r := range rows {
		if r.Status == "imported" {
			imported++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Module, r.Status, r.Reason)
	}
	tw.Flush()
	return imported
}
