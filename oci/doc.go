// Package oci provides the two foundations ssebench builds images on: a
// deterministic, streaming writer of OCI tar layers, and a merged view of
// the filesystem a stack of layers produces.
//
// # Writing layers
//
// LayerWriter (or WriteLayer, which sorts a set of Entry values first)
// writes a tar stream once: it compresses it into a spool file while hashing
// the compressed bytes (digest and size) and the tar bytes (diffID), so the
// returned layer's identity is known without reading it again. Headers are
// normalised (numeric ids only, PAX format, whole-second times with a fixed
// default, clean names, directories with a trailing "/") and compression is
// fixed (gzip with an empty header at a fixed level, or single-threaded
// zstd), so the same entries always give the same digest. (The compressed
// bytes depend on the klauspost/compress version: upgrading it may change
// layer digests, never diffIDs.) The layer is a *SpooledLayer whose spool
// file the caller removes when done.
//
// # Reading layers
//
// IndexLayer reads one layer's tar stream once and records its entries'
// normalised headers and whiteout markers as a LayerIndex: a JSON-friendly
// value that depends only on the layer's bytes, so it can be cached by layer
// digest (base layers are shared by every task of a language). Merge applies
// a stack of indexes, bottom layer first, following the OCI image-spec rules
// (whiteouts, opaque directories, hard links, symlinked parents resolved
// within the root) and returns a View of the merged filesystem: headers
// only, never content. ReadFiles then streams the content of chosen files,
// reading each layer at most once.
//
// Every layer read is checked against its digest; hostile entries (names or
// hard links that climb out of the root) are errors that name the layer and
// the entry.
//
// # Where the view and containerd can differ
//
// The view models containerd's archive.Apply onto the merged root, with
// whiteouts applied to lower layers only, as the image specification
// requires. Two cases depend on how a runtime stores layers: containerd's
// overlayfs snapshotter applies each layer into its own upper directory,
// where a lower layer's symlink is not seen (an entry below it creates a
// real directory that shadows the symlink) and a hard link to a lower
// layer's file fails. BuildKit never writes such layers (its diffs use real
// paths and re-emit hard-linked files), so these cases only matter for
// hand-made or hostile images.
//
// # The local store
//
// The OCI image layout that ssebench keeps its images in (one blob pool,
// an index.json with a name per image, lazy blobs, gc, verify) is package
// store under this one: an OCI format beside the others, as
// go-containerregistry keeps layout/ beside tarball/.
package oci
