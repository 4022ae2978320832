package remote

// What a push reports: each blob settled (pushed, mounted, already there)
// and the totals a command prints. Push, PushAll, Mirror and package
// archive's PushLoaded return it.

import (
	"fmt"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// BlobAction says what Push did with a blob.
type BlobAction string

const (
	// BlobPushed means the blob's bytes were uploaded.
	BlobPushed BlobAction = "pushed"
	// BlobMounted means the registry copied the blob from another of its
	// repositories: no bytes were uploaded.
	BlobMounted BlobAction = "mounted"
	// BlobExists means the repository had the blob already.
	BlobExists BlobAction = "exists"
)

// BlobEvent is one blob settled by a push.
type BlobEvent struct {
	// Repository is the full name of the repository the blob went to.
	Repository string
	Digest     v1.Hash
	Size       int64
	Action     BlobAction
	// From is the repository a mounted blob came from.
	From string
	// Resumed is how many bytes of an upload an earlier, interrupted
	// push had already sent (they were not sent again).
	Resumed int64
}

// PushReport says what a push (or a mirror or load) moved. Sizes are in
// bytes.
type PushReport struct {
	// Uploaded is the bytes sent to registries; Mounted the bytes that
	// registries copied between their repositories; Skipped the bytes
	// the target repositories already had.
	Uploaded, Mounted, Skipped int64
	// UploadedBlobs, MountedBlobs and SkippedBlobs count the blobs.
	UploadedBlobs, MountedBlobs, SkippedBlobs int
	// Manifests counts the manifests and indexes written.
	Manifests int
	// Blobs lists every blob settled, in the order they were.
	Blobs []BlobEvent
}

func (r *PushReport) add(e BlobEvent) {
	switch e.Action {
	case BlobPushed:
		r.Uploaded += e.Size - e.Resumed
		r.UploadedBlobs++
	case BlobMounted:
		r.Mounted += e.Size
		r.MountedBlobs++
	case BlobExists:
		r.Skipped += e.Size
		r.SkippedBlobs++
	}
	r.Blobs = append(r.Blobs, e)
}

// Merge adds o's counts and blobs to r.
func (r *PushReport) Merge(o *PushReport) {
	if o == nil {
		return
	}
	r.Uploaded += o.Uploaded
	r.Mounted += o.Mounted
	r.Skipped += o.Skipped
	r.UploadedBlobs += o.UploadedBlobs
	r.MountedBlobs += o.MountedBlobs
	r.SkippedBlobs += o.SkippedBlobs
	r.Manifests += o.Manifests
	r.Blobs = append(r.Blobs, o.Blobs...)
}

// String is the summary line, e.g. "uploaded 12.3 MiB (2 blobs), mounted
// 40.0 MiB (3 blobs), skipped 1.2 GiB already there (10 blobs)".
func (r *PushReport) String() string {
	return fmt.Sprintf("uploaded %s (%s), mounted %s (%s), skipped %s already there (%s)",
		units.Bytes(r.Uploaded), units.Plural(r.UploadedBlobs, "blob"),
		units.Bytes(r.Mounted), units.Plural(r.MountedBlobs, "blob"),
		units.Bytes(r.Skipped), units.Plural(r.SkippedBlobs, "blob"))
}
