package oci

import (
	"archive/tar"
	"io"
)

// Entry is one tar entry of a layer being written: a header and, for a
// regular file, an opener for its content.
//
// Open is a function rather than an io.Reader because a layer may be written
// more than once (hashing, then uploading) and each pass needs fresh content.
type Entry struct {
	// Header describes the entry. Name is relative to the root, without a
	// leading "/" or "./". Size must match what Open yields.
	Header *tar.Header
	// Open returns the content of a regular file. It is nil for every other
	// type of entry.
	Open func() (io.ReadCloser, error)
}
