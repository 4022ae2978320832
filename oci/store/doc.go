// Package store provides ssebench's local image store: one OCI image
// layout (an oci-layout file, one blob pool under blobs/sha256 and one
// index.json whose entries carry each image's full reference) that skopeo,
// crane, oras, `ctr import` and BuildKit's oci-layout:// can read too.
//
// Its files, by job:
//
//   - store.go: Open, the layout's creation and the Store itself
//   - options.go: the options of Open (WithContext, WithFetcher, ReadOnly)
//   - blob.go: reading blobs, verified against their digest as they are read
//   - ingest.go: the one write path of a blob (a temporary file hashed while
//     it is written, then synced and renamed into the pool), and the
//     adoption of files already spooled in the store
//   - write.go: Write, WriteIndex and Record, which store an image or index
//     and then point index.json at it
//   - index.go: index.json and its entries (SetEntry, List, Tag, Delete)
//   - image.go, imageindex.go: go-containerregistry images and indexes
//     backed by the store
//   - fetch.go: blobs recorded without their bytes, fetched from a registry
//     when read (Fetcher, Complete)
//   - holders.go: which registry repositories hold which blobs
//   - gc.go, check.go: garbage collection, Verify and Usage
//   - lock.go, temp.go: the file locks that let several processes share
//     one store, and each process's temporary directory
//
// Several processes may use one store at once: blobs land by rename,
// index.json is replaced by rename under a file lock, and GC waits for
// every writer.
package store
