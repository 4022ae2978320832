package remote

import (
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Progress receives what Push, Mirror and Load do with each blob. Its
// methods are called from several goroutines at once.
type Progress interface {
	// Start says an upload of e.Digest (e.Size bytes) begins.
	Start(e BlobEvent)
	// Advance says n more bytes of d were sent (n < 0 takes back bytes
	// of an attempt that failed and will be sent again).
	Advance(d v1.Hash, n int64)
	// Done says a blob is settled: pushed, mounted or already there.
	Done(e BlobEvent)
}
