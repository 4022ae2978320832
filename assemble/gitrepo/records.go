package gitrepo

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// records keeps what the Builder learns of each file and blob in a
// temporary file until Finish, rather than in memory: for 200,000 files
// they took 25 MB, on top of the case's layer indexes that the caller
// holds while it adds the files. Finish reads them back once the caller
// has let those go.
type records struct {
	f *os.File
	w *bufio.Writer
	n int64 // bytes written
	// count and pathBytes are the file records written and the length
	// of their paths, so that allFiles reads them into memory sized once.
	count, pathBytes int
}

func newRecords(dir, name string) (*records, error) {
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", name, err)
	}
	return &records{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

// blobRecSize is a blob record: id, size, offset and length in the spool.
const blobRecSize = 20 + 3*8

// fileRecHead is the fixed part of a file record: mode, size, id and the
// path's length; the path follows.
const fileRecHead = 4 + 8 + 20 + 4

func (r *records) write(p []byte) error {
	n, err := r.w.Write(p)
	r.n += int64(n)
	return err
}

func (r *records) addBlob(b blobRec) error {
	var rec [blobRecSize]byte
	copy(rec[:20], b.id[:])
	binary.LittleEndian.PutUint64(rec[20:], uint64(b.size))
	binary.LittleEndian.PutUint64(rec[28:], uint64(b.off))
	binary.LittleEndian.PutUint64(rec[36:], uint64(b.n))
	return r.write(rec[:])
}

func decodeBlob(rec []byte) blobRec {
	var b blobRec
	copy(b.id[:], rec[:20])
	b.size = int64(binary.LittleEndian.Uint64(rec[20:]))
	b.off = int64(binary.LittleEndian.Uint64(rec[28:]))
	b.n = int64(binary.LittleEndian.Uint64(rec[36:]))
	return b
}

// blobs reads every blob record back.
func (r *records) blobs() ([]blobRec, error) {
	if err := r.w.Flush(); err != nil {
		return nil, err
	}
	out := make([]blobRec, 0, r.n/blobRecSize)
	br := bufio.NewReaderSize(io.NewSectionReader(r.f, 0, r.n), 64<<10)
	var rec [blobRecSize]byte
	for {
		if _, err := io.ReadFull(br, rec[:]); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		out = append(out, decodeBlob(rec[:]))
	}
}

func (r *records) addFile(f fileEntry) error {
	var rec [fileRecHead]byte
	binary.LittleEndian.PutUint32(rec[0:], f.mode)
	binary.LittleEndian.PutUint64(rec[4:], uint64(f.size))
	copy(rec[12:32], f.id[:])
	binary.LittleEndian.PutUint32(rec[32:], uint32(len(f.path)))
	if err := r.write(rec[:]); err != nil {
		return err
	}
	n, err := r.w.WriteString(f.path)
	r.n += int64(n)
	r.count++
	r.pathBytes += len(f.path)
	return err
}

// allFiles reads every file record back into one slice, the paths into
// one string: 48 bytes and the path per file, where appending each record
// and its own path string took about 1.6 times that (issue 27).
func (r *records) allFiles() ([]fileEntry, error) {
	out := make([]fileEntry, 0, r.count)
	// A builder grown once never moves what it holds, so each path can
	// be a part of what String returns, without a copy.
	var arena strings.Builder
	arena.Grow(r.pathBytes)
	err := r.files(func(f fileEntry) bool {
		if arena.Len()+len(f.path) > r.pathBytes || len(out) == cap(out) {
			return false // more than was written: checked below
		}
		start := arena.Len()
		arena.WriteString(f.path)
		f.path = arena.String()[start:]
		out = append(out, f)
		return true
	})
	if err != nil {
		return nil, err
	}
	if len(out) != r.count {
		return nil, errors.New("damaged file records")
	}
	return out, nil
}

// files reads every file record back; each calls fn until it returns
// false.
func (r *records) files(fn func(fileEntry) bool) error {
	if err := r.w.Flush(); err != nil {
		return err
	}
	br := bufio.NewReaderSize(io.NewSectionReader(r.f, 0, r.n), 64<<10)
	var rec [fileRecHead]byte
	var buf []byte
	for {
		if _, err := io.ReadFull(br, rec[:]); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		var f fileEntry
		f.mode = binary.LittleEndian.Uint32(rec[0:])
		f.size = int64(binary.LittleEndian.Uint64(rec[4:]))
		copy(f.id[:], rec[12:32])
		n := binary.LittleEndian.Uint32(rec[32:])
		if n > 1<<20 {
			return errors.New("damaged file records")
		}
		if uint32(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		f.path = string(buf)
		if !fn(f) {
			return nil
		}
	}
}

func (r *records) close() {
	r.f.Close()
	os.Remove(r.f.Name())
}
