package oci

import (
	"archive/tar"
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

const (
	// gzipLevel is fixed because the compressed bytes, and so the layer
	// digest, depend on it (WithGzipLevel picks another, as fixed). The
	// default level is what BuildKit and containerd use, a fair trade
	// between size and speed.
	gzipLevel = gzip.DefaultCompression
	// zstdLevel likewise fixes the zstd encoder's level.
	zstdLevel = zstd.SpeedDefault
	// spoolBufferSize batches writes to the spool file: compressed bytes,
	// which come a few times slower than the tar stream. An assembler
	// keeps three layer writers open; 1 MiB each was 2 MB of a 200,000
	// file case's peak for nothing measurable in time.
	spoolBufferSize = 64 << 10
)

// LayerWriter writes one layer as a tar stream, compressing it to a spool
// file and computing the layer's digest (of the compressed bytes), size and
// diffID (of the tar bytes) in the same pass.
//
// Use it like a tar.Writer: WriteHeader, then Write the entry's content, for
// each entry in the order they must appear; then Finish. Headers are
// normalised (see WriteHeader) so that the same calls always give the same
// bytes. The writer neither sorts entries nor adds missing parent
// directories; WriteLayer does the sorting.
//
// A LayerWriter is not safe for concurrent use. After an error, call Abort.
type LayerWriter struct {
	opts  options
	path  string
	f     *os.File
	buf   *bufio.Writer
	comp  io.WriteCloser
	async *asyncSink // hashes and compresses in its own goroutine
	tw    *tar.Writer

	compressed   *countingHash // digest and size of the spool file
	uncompressed *countingHash // diffID

	name      string // current entry, for error messages
	size      int64  // its declared size
	remaining int64  // content bytes it still expects
	done      bool   // Finish or Abort was called
	err       error  // first error; the writer is unusable after it
}

// NewLayerWriter creates a spool file in dir (which must exist; pass a
// temporary directory of the store so the finished layer can be renamed
// into place) and returns a writer for it.
func NewLayerWriter(dir string, opts ...Option) (*LayerWriter, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, "layer-*.spool")
	if err != nil {
		return nil, fmt.Errorf("creating layer spool file: %w", err)
	}
	w := &LayerWriter{
		opts:         o,
		path:         f.Name(),
		f:            f,
		buf:          bufio.NewWriterSize(f, spoolBufferSize),
		compressed:   newCountingHash(),
		uncompressed: newCountingHash(),
	}
	// Compressed bytes go to the file and to the digest; tar bytes go to
	// the diffID and to the compressor.
	sink := io.MultiWriter(w.buf, w.compressed)
	switch o.compression {
	case Zstd:
		// One goroutine, so that block boundaries, and so the bytes, never
		// depend on scheduling.
		zw, err := zstd.NewWriter(sink,
			zstd.WithEncoderConcurrency(1),
			zstd.WithEncoderLevel(zstdLevel))
		if err != nil {
			w.Abort()
			return nil, fmt.Errorf("creating zstd encoder: %w", err)
		}
		w.comp = zw
	default:
		gw, err := gzip.NewWriterLevel(sink, o.gzipLevel)
		if err != nil {
			w.Abort()
			return nil, fmt.Errorf("creating gzip encoder: %w", err)
		}
		// No name, no comment, and MTIME 0 ("no time"): nothing about the
		// machine or the moment leaks into the bytes. The time must be set:
		// klauspost's writer stores the zero time.Time as a non-zero MTIME,
		// where compress/gzip would write 0.
		gw.Header = gzip.Header{ModTime: time.Unix(0, 0), OS: 255}
		w.comp = gw
	}
	w.async = newAsyncSink(io.MultiWriter(w.uncompressed, w.comp))
	w.tw = tar.NewWriter(w.async)
	return w, nil
}

// WriteHeader starts a new entry. The header is copied and normalised
// before it is written; h itself is not modified:
//
//   - Name and, for hard links, Linkname lose any leading "/" and "./" and
//     are cleaned; directories get a trailing "/" (as BuildKit and
//     containerd write them). A name that is the root or climbs above it
//     is an error.
//   - Uname and Gname are cleared: only the numeric Uid and Gid count.
//   - Mode keeps the permission, setuid, setgid and sticky bits (07777);
//     the file type comes from Typeflag. TypeRegA becomes TypeReg.
//   - ModTime is truncated to whole seconds, and a zero ModTime becomes the
//     default time (WithDefaultTime). AccessTime and ChangeTime are cleared.
//   - Size is kept for regular files and set to 0 for every other type.
//   - Xattrs are moved into PAXRecords ("SCHILY.xattr." keys) and the
//     format is PAX, which records long names, large ids and xattrs
//     without loss.
//
// WriteHeader fails if the previous entry got fewer bytes than its Size.
func (w *LayerWriter) WriteHeader(h *tar.Header) error {
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.checkComplete(); err != nil {
		return w.fail(err)
	}
	hdr, err := normalizeHeader(h, w.opts.defaultTime)
	if err != nil {
		// A bad header is the caller's mistake, not a broken stream: the
		// writer stays usable.
		return err
	}
	if err := w.tw.WriteHeader(hdr); err != nil {
		return w.fail(fmt.Errorf("writing header of %q: %w", hdr.Name, err))
	}
	w.name = hdr.Name
	w.size = hdr.Size
	w.remaining = hdr.Size
	return nil
}

// Write writes content of the current entry. Writing more than the
// header's Size is an error.
func (w *LayerWriter) Write(p []byte) (int, error) {
	if err := w.usable(); err != nil {
		return 0, err
	}
	if int64(len(p)) > w.remaining {
		return 0, w.fail(fmt.Errorf("entry %q: content is longer than the %d bytes its header declares", w.name, w.size))
	}
	n, err := w.tw.Write(p)
	w.remaining -= int64(n)
	if err != nil {
		return n, w.fail(fmt.Errorf("writing %q: %w", w.name, err))
	}
	return n, nil
}

// Finish ends the tar stream, flushes the compressor and closes the spool
// file. It returns a *SpooledLayer backed by that file, whose Digest,
// DiffID, Size and MediaType are known without reading it again. The
// caller owns the file from then on: call the layer's Remove when it is no
// longer needed (for example after it has been copied into a store).
//
// If Finish fails the spool file is removed.
func (w *LayerWriter) Finish() (v1.Layer, error) {
	if err := w.usable(); err != nil {
		return nil, err
	}
	err := w.checkComplete()
	if err == nil {
		err = w.tw.Close()
	}
	// The tar stream is complete only once the goroutine has taken all of
	// it; the compressor may be closed after that, not before.
	if cerr := w.async.Close(); err == nil {
		err = cerr
	}
	w.async = nil
	if err == nil {
		err = w.comp.Close()
	}
	if err == nil {
		err = w.buf.Flush()
	}
	if err == nil {
		err = w.f.Close()
		w.f = nil
	}
	if err != nil {
		w.fail(fmt.Errorf("finishing layer: %w", err))
		w.Abort()
		return nil, w.err
	}
	w.done = true
	return &SpooledLayer{
		path:        w.path,
		compression: w.opts.compression,
		digest:      w.compressed.sum(),
		diffID:      w.uncompressed.sum(),
		size:        w.compressed.n,
	}, nil
}

// Abort stops writing and removes the spool file. It is safe to call more
// than once and after a failed Finish; after a successful Finish it does
// nothing, because the file then belongs to the returned layer.
func (w *LayerWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	if w.err == nil {
		w.err = errors.New("layer writer was aborted")
	}
	if w.async != nil {
		// Stop the goroutine before the encoder it writes to.
		_ = w.async.Close()
		w.async = nil
	}
	if w.comp != nil {
		// Release the encoder; its output goes nowhere now.
		_ = w.comp.Close()
	}
	if w.f != nil {
		_ = w.f.Close()
		w.f = nil
	}
	_ = os.Remove(w.path)
}

func (w *LayerWriter) usable() error {
	if w.err != nil {
		return w.err
	}
	if w.done {
		return errors.New("layer writer is finished")
	}
	return nil
}

func (w *LayerWriter) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return err
}

// checkComplete reports an entry that got less content than its Size.
// tar.Writer would notice too, but without saying which entry.
func (w *LayerWriter) checkComplete() error {
	if w.remaining > 0 {
		return fmt.Errorf("entry %q: content ended %d bytes short of the size its header declares", w.name, w.remaining)
	}
	return nil
}

// normalizeHeader returns the header LayerWriter writes for h.
func normalizeHeader(h *tar.Header, defTime time.Time) (*tar.Header, error) {
	if h == nil {
		return nil, errors.New("tar header is nil")
	}
	name, err := cleanName(h.Name)
	if err != nil {
		return nil, fmt.Errorf("entry %q: %w", h.Name, err)
	}
	if name == "" {
		return nil, fmt.Errorf("entry %q: a layer entry cannot be the root directory", h.Name)
	}
	hdr := &tar.Header{
		Typeflag: h.Typeflag,
		Name:     name,
		Mode:     h.Mode & 07777,
		Uid:      h.Uid,
		Gid:      h.Gid,
		Format:   tar.FormatPAX,
	}
	if hdr.Typeflag == tar.TypeRegA {
		hdr.Typeflag = tar.TypeReg
	}
	switch hdr.Typeflag {
	case tar.TypeReg:
		hdr.Size = h.Size
		if hdr.Size < 0 {
			return nil, fmt.Errorf("entry %q: negative size %d", name, hdr.Size)
		}
	case tar.TypeDir:
		hdr.Name += "/"
	case tar.TypeSymlink:
		if h.Linkname == "" {
			return nil, fmt.Errorf("entry %q: symbolic link without a target", name)
		}
		// A symlink's target is resolved at run time, relative to the
		// link; it is kept exactly as given.
		hdr.Linkname = h.Linkname
	case tar.TypeLink:
		target, err := cleanName(h.Linkname)
		if err != nil {
			return nil, fmt.Errorf("entry %q: hard link target %q: %w", name, h.Linkname, err)
		}
		if target == "" {
			return nil, fmt.Errorf("entry %q: hard link to the root directory", name)
		}
		hdr.Linkname = target
	case tar.TypeChar, tar.TypeBlock:
		hdr.Devmajor, hdr.Devminor = h.Devmajor, h.Devminor
	case tar.TypeFifo:
	default:
		return nil, fmt.Errorf("entry %q: unsupported tar entry type %q", name, h.Typeflag)
	}
	hdr.ModTime = h.ModTime
	if hdr.ModTime.IsZero() {
		hdr.ModTime = defTime
	}
	hdr.ModTime = hdr.ModTime.Truncate(time.Second).UTC()

	// Only extended attributes describe the file; other PAX records
	// (times, names, ids) are derived from the fields above by tar.Writer.
	for k, v := range h.PAXRecords {
		if strings.HasPrefix(k, paxXattrPrefix) {
			if hdr.PAXRecords == nil {
				hdr.PAXRecords = make(map[string]string)
			}
			hdr.PAXRecords[k] = v
		}
	}
	// Xattrs is deprecated, but callers may still fill it.
	for k, v := range h.Xattrs { //nolint:staticcheck // see above
		if hdr.PAXRecords == nil {
			hdr.PAXRecords = make(map[string]string)
		}
		hdr.PAXRecords[paxXattrPrefix+k] = v
	}
	return hdr, nil
}

// countingHash is a sha256 that also counts what it hashed.
type countingHash struct {
	h hash.Hash
	n int64
}

func newCountingHash() *countingHash { return &countingHash{h: sha256.New()} }

func (c *countingHash) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.h.Write(p)
}

func (c *countingHash) sum() v1.Hash {
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(c.h.Sum(nil))}
}
