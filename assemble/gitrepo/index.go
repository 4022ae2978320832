package gitrepo

import (
	"bufio"
	"crypto/sha1"
	"encoding/binary"
	"io"
)

// writeIndex writes a version 2 index ("DIRC") of files, which are sorted
// by path, as git compares index names: byte by byte.
//
// The stat data is zero except mode and size. Git then finds every entry's
// timestamps changed and compares the content instead (the size alone would
// make it report a change without looking, so that one is real): the first
// `git status` re-hashes the files, sees they match, refreshes the index and
// prints nothing. Real stat data could not be right anyway: ctime, inode and
// device are only known once the image is unpacked on the machine that runs
// it.
func writeIndex(w io.Writer, files []fileEntry) error {
	h := sha1.New()
	bw := bufio.NewWriter(io.MultiWriter(w, h))
	var hdr [12]byte
	copy(hdr[:], "DIRC")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(len(files)))
	bw.Write(hdr[:])
	var e [62]byte
	for _, f := range files {
		clear(e[:])
		// ctime, mtime (seconds and nanoseconds), dev, ino: zero.
		binary.BigEndian.PutUint32(e[24:], f.mode)
		// uid, gid: zero.
		binary.BigEndian.PutUint32(e[36:], uint32(f.size)) // git keeps the low 32 bits
		copy(e[40:60], f.id[:])
		n := len(f.path)
		if n > 0xfff {
			n = 0xfff // longer names say 0xfff and are NUL-terminated
		}
		binary.BigEndian.PutUint16(e[60:], uint16(n))
		bw.Write(e[:])
		bw.WriteString(f.path)
		// Pad with 1 to 8 NULs to a multiple of 8 bytes.
		entryLen := len(e) + len(f.path)
		pad := 8 - entryLen%8
		bw.Write(make([]byte, pad))
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(h.Sum(nil))
	return err
}
