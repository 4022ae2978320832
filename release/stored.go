package release

import (
	"context"
	"fmt"

	"github.com/42-b3yond-6ug/ssebench/task"
)

// StoredRecord reads the record of what of ds verified, kept beside the
// local store in storeDir (see Remember).
func StoredRecord(storeDir string, ds *task.Dataset) (*Record, error) {
	return ReadRecord(RecordFile(storeDir, ds.Name, ds.Version), ds.Name, ds.Version)
}

// PublishRevision is the revision a publish of the dataset in dir tags
// its images with: rev, else the commit of the git checkout holding dir.
func PublishRevision(ctx context.Context, dir, rev string) (string, error) {
	if rev != "" {
		return rev, nil
	}
	if rev = Revision(ctx, dir); rev == "" {
		return "", fmt.Errorf("%s is not in a git checkout: pass --revision, the commit the images are built from", dir)
	}
	return rev, nil
}

// Verified says whether task id verified with the files digest files:
// with its folder as it is now, when files is the folder's.
func (r *Record) Verified(id, files string) bool {
	v, ok := r.Tasks[id]
	return ok && v.FilesSHA256 != "" && v.FilesSHA256 == files
}
