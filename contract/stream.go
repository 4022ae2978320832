package contract

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
)

// The results stream is how a run's results come back to the machine that
// started it when no volume is shared: the entrypoint writes the block
// inside the image (WriteResultsStream) and the backend reads it from the
// container's log (ReadResultsStream). Both ends must agree on the
// variable, the framing and the names, so the whole protocol is here, on
// the standard library only.

// EnvResultsStream, when set, has the entrypoint write its results and
// archive directories to its standard output when it ends, as one framed
// block of base64 text (a gzipped tar): the way a backend with no volume
// shared with the machine that started the run (a Kubernetes Job) gets
// them back, through the container's log. The value is a token of the
// run that frames the block, so nothing else printed can pass for it; the
// agent never sees it.
const EnvResultsStream = "SSE_RESULTS_STREAM"

// The directories of a results stream: the top-level names in its tar.
const (
	StreamResults = "results"
	StreamArchive = "archive"
)

// streamLineWidth is the width of the base64 lines, as in PEM: short
// enough for every log pipeline, which may split long lines.
const streamLineWidth = 76

// DefaultStreamLimit bounds what ReadResultsStream writes: the archive is
// the agent's, and a run must not fill the disk of the machine that
// started it.
const DefaultStreamLimit = 2 << 30

// maxStreamEntries bounds the entries of a results stream.
const maxStreamEntries = 100000

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{16,128}$`)

// CheckStreamToken checks a token of EnvResultsStream: 16 to 128 letters,
// digits, '-' or '_'.
func CheckStreamToken(token string) error {
	if !tokenRE.MatchString(token) {
		return fmt.Errorf("%s must be 16 to 128 letters, digits, '-' or '_'", EnvResultsStream)
	}
	return nil
}

func streamBegin(token string) string { return "ssebench-results " + token + " begin" }
func streamEnd(token string) string   { return "ssebench-results " + token + " end" }

// WriteResultsStream writes the block of token to w: the directories of
// dirs (StreamResults, StreamArchive → a directory; an empty one is left
// out) as a gzipped tar, in base64 lines between a begin and an end line.
// Only directories and regular files go in, never through a symlink: the
// archive is the agent's.
func WriteResultsStream(w io.Writer, token string, dirs map[string]string) error {
	if err := CheckStreamToken(token); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "\n%s\n", streamBegin(token))
	lw := &lineWriter{w: bw}
	enc := base64.NewEncoder(base64.StdEncoding, lw)
	zw := gzip.NewWriter(enc)
	tw := tar.NewWriter(zw)
	var errs []error
	for _, name := range []string{StreamResults, StreamArchive} {
		if dir := dirs[name]; dir != "" {
			if err := tarDir(tw, name, dir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, c := range []io.Closer{tw, zw, enc} {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if lw.n > 0 {
		bw.WriteByte('\n')
	}
	fmt.Fprintf(bw, "%s\n", streamEnd(token))
	if err := bw.Flush(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// tarDir adds dir's directories and regular files under name; what
// cannot be read is left out (the stream must still end).
func tarDir(tw *tar.Writer, name, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, rerr := filepath.Rel(dir, p)
		if rerr != nil {
			return nil
		}
		entry := path.Join(name, filepath.ToSlash(rel))
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: entry + "/", Mode: 0o755})
		case d.Type().IsRegular():
			return tarFile(tw, entry, p)
		}
		return nil
	})
}

func tarFile(tw *tar.Writer, entry, p string) error {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: entry, Mode: int64(fi.Mode().Perm() &^ 0o022), Size: fi.Size()}); err != nil {
		return err
	}
	// A file that shrank meanwhile is padded, one that grew cut: the tar
	// stays well-formed either way.
	n, err := io.Copy(tw, io.LimitReader(f, fi.Size()))
	if err != nil {
		return err
	}
	if n < fi.Size() {
		_, err = io.CopyN(tw, zeros{}, fi.Size()-n)
	}
	return err
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// lineWriter breaks what it writes into lines of streamLineWidth.
type lineWriter struct {
	w *bufio.Writer
	n int
}

func (l *lineWriter) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		k := min(streamLineWidth-l.n, len(p))
		if _, err := l.w.Write(p[:k]); err != nil {
			return total - len(p), err
		}
		l.n += k
		p = p[k:]
		if l.n == streamLineWidth {
			if err := l.w.WriteByte('\n'); err != nil {
				return total - len(p), err
			}
			l.n = 0
		}
	}
	return total, nil
}

// ErrNoResultsStream means the output ended without a whole block of the
// run's token: the container stopped before it wrote its results.
var ErrNoResultsStream = errors.New("the container's output has no results block")

// ErrForgedResultsStream means the output held more than one results
// block of the run's token: one of them was not the entrypoint's, and the
// run's results are refused rather than taken from either.
var ErrForgedResultsStream = errors.New("the container's output has more than one results block: refusing them (something other than the entrypoint wrote one)")

// ReadResultsStream copies r to out, but for the block of token, which it
// extracts: each top-level directory of its tar into dest[name] (names
// without a destination are skipped). It reads one pass, holding nothing
// whole. It returns ErrNoResultsStream when r has no whole block. The
// block is treated as hostile: only directories and regular files, no
// path out of its destination, at most limit bytes written (0 means
// DefaultStreamLimit). A second block of the token is refused with
// ErrForgedResultsStream.
func ReadResultsStream(r io.Reader, out io.Writer, token string, dest map[string]string, limit int64) error {
	if err := CheckStreamToken(token); err != nil {
		return err
	}
	if out == nil {
		out = io.Discard
	}
	if limit <= 0 {
		limit = DefaultStreamLimit
	}
	br := bufio.NewReaderSize(r, 64<<10)
	begin := []byte(streamBegin(token))
	found := false
	var extractErr error
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line of output: pass it on in pieces.
			out.Write(line)
			continue
		}
		if found && bytes.Equal(bytes.TrimRight(line, "\r\n"), begin) {
			// The entrypoint writes one block, last. A second one means
			// something else knew the token and wrote a block of its own:
			// neither is believed.
			br2 := &blockReader{r: br, end: []byte(streamEnd(token))}
			_, _ = io.Copy(io.Discard, br2)
			return ErrForgedResultsStream
		}
		if !found && bytes.Equal(bytes.TrimRight(line, "\r\n"), begin) {
			br2 := &blockReader{r: br, end: []byte(streamEnd(token))}
			extractErr = extractStream(base64.NewDecoder(base64.StdEncoding, br2), dest, limit)
			// Read to the end line whatever happened, so the output
			// after it is passed on.
			if _, derr := io.Copy(io.Discard, br2); derr != nil && extractErr == nil {
				extractErr = derr
			}
			if !br2.ended {
				return fmt.Errorf("%w: it was cut off", ErrNoResultsStream)
			}
			found = true
			continue
		}
		out.Write(line)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the container's output: %w", err)
		}
	}
	if !found {
		return ErrNoResultsStream
	}
	return extractErr
}

// blockReader yields the base64 text of a block, newlines dropped, up to
// its end line.
type blockReader struct {
	r     *bufio.Reader
	end   []byte
	buf   []byte
	ended bool
}

func (b *blockReader) Read(p []byte) (int, error) {
	for len(b.buf) == 0 {
		if b.ended {
			return 0, io.EOF
		}
		line, err := b.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return 0, errors.New("results block: a line is too long")
		}
		trimmed := bytes.TrimRight(line, "\r\n")
		if bytes.Equal(trimmed, b.end) {
			b.ended = true
			return 0, io.EOF
		}
		if err != nil {
			return 0, io.ErrUnexpectedEOF
		}
		b.buf = append(b.buf[:0], trimmed...)
	}
	n := copy(p, b.buf)
	b.buf = b.buf[n:]
	return n, nil
}

func extractStream(r io.Reader, dest map[string]string, limit int64) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("results block: %w", err)
	}
	tr := tar.NewReader(zr)
	roots := map[string]*os.Root{}
	defer func() {
		for _, rt := range roots {
			rt.Close()
		}
	}()
	var written int64
	for n := 0; ; n++ {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("results block: %w", err)
		}
		if n >= maxStreamEntries {
			return fmt.Errorf("results block: more than %d entries", maxStreamEntries)
		}
		name := path.Clean(strings.TrimSuffix(h.Name, "/"))
		top, rel, _ := strings.Cut(name, "/")
		dir, ok := dest[top]
		if !ok || !fs.ValidPath(name) {
			continue
		}
		rt := roots[top]
		if rt == nil {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			if rt, err = os.OpenRoot(dir); err != nil {
				return err
			}
			roots[top] = rt
		}
		if rel == "" {
			continue
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := rt.MkdirAll(rel, 0o755); err != nil {
				return fmt.Errorf("results block: %w", err)
			}
		case tar.TypeReg:
			if written+h.Size > limit {
				return fmt.Errorf("results block: more than %d bytes", limit)
			}
			written += h.Size
			if err := writeEntry(rt, rel, os.FileMode(h.Mode).Perm()&^0o022, tr); err != nil {
				return fmt.Errorf("results block: %w", err)
			}
		}
	}
}

func writeEntry(rt *os.Root, rel string, mode os.FileMode, r io.Reader) error {
	if d := path.Dir(rel); d != "." {
		if err := rt.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// Replace, never write through: an entry already there (a symlink
	// of an earlier entry cannot be, but the run folder's own files can)
	// is removed first.
	if err := rt.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := rt.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
