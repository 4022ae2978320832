package hostile

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"strconv"
)

// WriteSparse writes to w, the stream under tw, a GNU sparse file (PAX
// format 1.0, as GNU tar --sparse writes it) named name, of logical size
// bytes, whose only data is data at offset 0: the rest is a hole.
// archive/tar reads it as a regular file of size bytes, the hole as zeros,
// so a few hundred bytes of layer stand for up to 8 EiB of file. tw is
// flushed first and may write entries after; archive/tar cannot write
// sparse files (it drops GNU.sparse records), hence the raw bytes.
func WriteSparse(w io.Writer, tw *tar.Writer, name string, size int64, data []byte) error {
	b, err := SparseEntry(name, size, data)
	if err != nil {
		return err
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// SparseEntry returns the raw tar bytes WriteSparse writes: a PAX extended
// header, the file's header and its data, padded to whole blocks.
func SparseEntry(name string, size int64, data []byte) ([]byte, error) {
	if int64(len(data)) > size {
		return nil, fmt.Errorf("sparse file %q: %d bytes of data in a file of %d", name, len(data), size)
	}
	var records bytes.Buffer
	for _, kv := range [][2]string{
		{"GNU.sparse.major", "1"},
		{"GNU.sparse.minor", "0"},
		{"GNU.sparse.name", name},
		{"GNU.sparse.realsize", strconv.FormatInt(size, 10)},
	} {
		records.WriteString(paxRecord(kv[0], kv[1]))
	}
	sparseMap := "1\n0\n" + strconv.Itoa(len(data)) + "\n"
	mapBlock := make([]byte, (len(sparseMap)+511)/512*512)
	copy(mapBlock, sparseMap)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	// The extended header, written as a regular file and retyped: the
	// writer refuses to write type 'x' itself.
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "PaxHeaders.0/sparse", Mode: 0o644, Size: int64(records.Len()), Format: tar.FormatUSTAR}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(records.Bytes()); err != nil {
		return nil, err
	}
	if err := tw.Flush(); err != nil {
		return nil, err
	}
	retype(buf.Bytes()[:512], tar.TypeXHeader)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "GNUSparseFile.0/sparse", Mode: 0o644, Size: int64(len(mapBlock) + len(data)), Format: tar.FormatUSTAR}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(append(mapBlock, data...)); err != nil {
		return nil, err
	}
	if err := tw.Flush(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// paxRecord formats one PAX record: "<length> key=value\n", where the
// length counts itself.
func paxRecord(k, v string) string {
	body := " " + k + "=" + v + "\n"
	n := len(body)
	for {
		s := strconv.Itoa(n) + body
		if len(s) == n {
			return s
		}
		n = len(s)
	}
}

// retype sets the type flag of the header block blk and its checksum.
func retype(blk []byte, typeflag byte) {
	blk[156] = typeflag
	for i := 148; i < 156; i++ {
		blk[i] = ' '
	}
	var sum int64
	for _, c := range blk {
		sum += int64(c)
	}
	copy(blk[148:156], fmt.Sprintf("%06o\x00 ", sum))
}
