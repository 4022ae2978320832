package gitrepo

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"sort"

	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/klauspost/compress/zlib"
)

// objectID is a SHA-1 object name.
type objectID [sha1.Size]byte

func (id objectID) String() string { return hex.EncodeToString(id[:]) }

// objectType is the type code of a pack entry.
type objectType byte

const (
	typeCommit objectType = 1
	typeTree   objectType = 2
	typeBlob   objectType = 3
)

func (t objectType) String() string {
	switch t {
	case typeCommit:
		return "commit"
	case typeTree:
		return "tree"
	}
	return "blob"
}

// object is one object of the pack. Its zlib stream lives either in the
// spool file (blobs: off and n) or in memory (trees and the commit: data).
type object struct {
	id     objectID
	typ    objectType
	size   int64
	off, n int64
	data   []byte
}

// spool holds the zlib streams of the blobs, in the order they arrive, until
// Finish knows how many objects the pack has (its header needs the count)
// and in which order to write them (the pack must not depend on the order
// files were added).
type spool struct {
	f  *os.File
	w  *bufio.Writer
	n  int64
	zw *zlib.Writer
	h  hash.Hash
	// buf is reused by every copy.
	buf []byte
}

func newSpool(f *os.File, level int) (*spool, error) {
	s := &spool{f: f, w: bufio.NewWriterSize(f, 256<<10), h: sha1.New(), buf: make([]byte, 1<<16)}
	zw, err := zlib.NewWriterLevel(s, level)
	if err != nil {
		return nil, err
	}
	s.zw = zw
	return s, nil
}

// Write counts what goes into the spool.
func (s *spool) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	s.n += int64(n)
	return n, err
}

// errSizeMismatch reports content that does not have the announced size.
var errSizeMismatch = errors.New("content size does not match")

// addBlob streams size bytes of r into the spool and returns the blob's id
// and where its zlib stream is. The content is read exactly once; stats,
// when not nil, counts it too.
func (s *spool) addBlob(size int64, r io.Reader, stats *textStats) (objectID, int64, int64, error) {
	var id objectID
	start := s.n
	s.h.Reset()
	fmt.Fprintf(s.h, "blob %d\x00", size)
	s.zw.Reset(s)
	var w io.Writer = io.MultiWriter(s.h, s.zw)
	if stats != nil {
		w = io.MultiWriter(s.h, s.zw, stats)
	}
	n, err := io.CopyBuffer(w, io.LimitReader(r, size), s.buf)
	if err != nil {
		return id, 0, 0, fmt.Errorf("reading content: %w", err)
	}
	if n != size {
		return id, 0, 0, fmt.Errorf("%w: expected %d bytes, but only read %d", errSizeMismatch, size, n)
	}
	if m, _ := r.Read(s.buf[:1]); m > 0 {
		return id, 0, 0, fmt.Errorf("%w: more than the expected %d bytes", errSizeMismatch, size)
	}
	if err := s.zw.Close(); err != nil {
		return id, 0, 0, fmt.Errorf("compressing content: %w", err)
	}
	copy(id[:], s.h.Sum(nil))
	return id, start, s.n - start, nil
}

// reAdd adds the blob whose zlib stream is at off (n bytes) again, with
// every CRLF turned into LF: size bytes.
func (s *spool) reAdd(off, n, size int64) (objectID, int64, int64, error) {
	if err := s.w.Flush(); err != nil {
		return objectID{}, 0, 0, err
	}
	zr, err := zlib.NewReader(io.NewSectionReader(s.f, off, n))
	if err != nil {
		return objectID{}, 0, 0, err
	}
	defer zr.Close()
	return s.addBlob(size, &crlfToLF{r: zr}, nil)
}

// memCompressor compresses the objects held in memory (trees and the
// commit), reusing one zlib writer: a new one costs most of a megabyte.
type memCompressor struct {
	zw *zlib.Writer
	// spill, when set, takes each object's zlib stream to the spool
	// instead of memory: the trees of 200,000 files took 5 MB.
	spill *spool
}

func newMemCompressor(level int) (*memCompressor, error) {
	zw, err := zlib.NewWriterLevel(io.Discard, level)
	if err != nil {
		return nil, err
	}
	return &memCompressor{zw: zw}, nil
}

// hashObject returns the id of an object held in memory and its zlib
// stream.
func (c *memCompressor) hashObject(typ objectType, data []byte) (*object, error) {
	h := sha1.New()
	fmt.Fprintf(h, "%s %d\x00", typ, len(data))
	h.Write(data)
	var z bytes.Buffer
	c.zw.Reset(&z)
	c.zw.Write(data)
	if err := c.zw.Close(); err != nil {
		return nil, err
	}
	o := &object{typ: typ, size: int64(len(data)), data: z.Bytes()}
	copy(o.id[:], h.Sum(nil))
	if c.spill != nil {
		o.off = c.spill.n
		if _, err := c.spill.Write(o.data); err != nil {
			return nil, fmt.Errorf("writing object spool: %w", err)
		}
		o.n, o.data = int64(len(o.data)), nil
	}
	return o, nil
}

// packEntryHeader encodes a pack entry's type and inflated size: 3 bits of
// type and 4 bits of size in the first byte, then 7 bits a byte, low bits
// first, the high bit of each byte saying that another follows.
func packEntryHeader(typ objectType, size int64) []byte {
	b := []byte{byte(typ)<<4 | byte(size&0x0f)}
	size >>= 4
	for size > 0 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
		size >>= 7
	}
	return b
}

// countingWriter tracks the offset in the pack.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// packed is what the idx needs to know of an object in the pack.
type packed struct {
	id  objectID
	crc uint32
	off int64
}

// writePack writes a version 2 pack of objs then blobs, in that order, to
// w, taking blob streams from src. It returns the pack's checksum (its
// trailer, and its name) and the index entries of the objects.
func writePack(ctx context.Context, w io.Writer, src io.ReaderAt, objs []*object, blobs []blobRec) (objectID, []packed, error) {
	var sum objectID
	h := sha1.New()
	cw := &countingWriter{w: io.MultiWriter(w, h)}
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(objs)+len(blobs)))
	if _, err := cw.Write(hdr[:]); err != nil {
		return sum, nil, err
	}
	out := make([]packed, 0, len(objs)+len(blobs))
	buf := make([]byte, 1<<16)
	for i := range len(objs) + len(blobs) {
		if err := ctx.Err(); err != nil {
			return sum, nil, err
		}
		o := &object{typ: typeBlob}
		if i < len(objs) {
			o = objs[i]
		} else {
			r := &blobs[i-len(objs)]
			o.id, o.size, o.off, o.n = r.id, r.size, r.off, r.n
		}
		crc := crc32.NewIEEE()
		ew := io.MultiWriter(cw, crc)
		off := cw.n
		if _, err := ew.Write(packEntryHeader(o.typ, o.size)); err != nil {
			return sum, nil, err
		}
		var err error
		if o.data != nil {
			_, err = ew.Write(o.data)
		} else {
			_, err = io.CopyBuffer(ew, oci.ContextReader(ctx, io.NewSectionReader(src, o.off, o.n)), buf)
		}
		if err != nil {
			return sum, nil, err
		}
		out = append(out, packed{id: o.id, crc: crc.Sum32(), off: off})
	}
	copy(sum[:], h.Sum(nil))
	if _, err := w.Write(sum[:]); err != nil {
		return sum, nil, err
	}
	return sum, out, nil
}

// writeIdx writes the version 2 pack index of entries (which it sorts) for
// the pack whose checksum is packSum.
func writeIdx(w io.Writer, entries []packed, packSum objectID) error {
	sort.Slice(entries, func(i, j int) bool {
		return bytes.Compare(entries[i].id[:], entries[j].id[:]) < 0
	})
	h := sha1.New()
	bw := bufio.NewWriter(io.MultiWriter(w, h))
	u32 := func(v uint32) {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], v)
		bw.Write(b[:])
	}
	bw.WriteString("\xfftOc")
	u32(2)
	// Fan-out: entry k is the number of objects whose first byte is <= k.
	var fanout [256]uint32
	for _, e := range entries {
		fanout[e.id[0]]++
	}
	var total uint32
	for k := range fanout {
		total += fanout[k]
		u32(total)
	}
	for _, e := range entries {
		bw.Write(e.id[:])
	}
	for _, e := range entries {
		u32(e.crc)
	}
	// Offsets that do not fit in 31 bits go to a table of 64-bit offsets.
	var large []int64
	for _, e := range entries {
		if e.off < 1<<31 {
			u32(uint32(e.off))
		} else {
			u32(1<<31 | uint32(len(large)))
			large = append(large, e.off)
		}
	}
	for _, off := range large {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(off))
		bw.Write(b[:])
	}
	bw.Write(packSum[:])
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(h.Sum(nil))
	return err
}
