package task

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
)

// A manifest holds the SHA-256 of every file of every task: a dataset of a
// million task files is a manifest of a hundred MB, which Manifest and
// Marshal hold several times over (about 1 KB a file). WriteManifestFile
// and CheckManifest instead stream it: the hashes are written (or compared
// with the file) as they are computed, and what stays in memory is the
// task's file names while they are sorted.

// filesSentinel stands, in the skeleton of a manifest, for the files of
// task i: a key no file name can be (it starts with NUL).
func filesSentinel(i int) string { return fmt.Sprintf("\x00ssebench-files-%d", i) }

// WriteManifestFile writes the dataset's manifest (what Manifest gives,
// rendered as Marshal renders it) to dir/manifest.json, atomically,
// streaming the hashes, and returns the number of tasks. GeneratedFrom is
// left out, as Manifest leaves it.
func (d *Dataset) WriteManifestFile() (int, error) {
	err := safefile.WriteFile(filepath.Join(d.Dir, ManifestFile), 0o644, func(f *os.File) error {
		bw := bufio.NewWriterSize(f, 256<<10)
		if err := d.writeManifest(bw, ""); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return 0, err
	}
	return len(d.Tasks), nil
}

// writeManifest writes to w the bytes Marshal gives of d.Manifest() (with
// generatedFrom), computing each task's file hashes as they are written.
func (d *Dataset) writeManifest(w io.Writer, generatedFrom string) error {
	m := &Manifest{Dataset: d.Name, Version: d.Version, GeneratedFrom: generatedFrom, Tasks: []ManifestTask{}}
	for i, t := range d.Tasks {
		e := d.manifestTask(t, nil)
		e.Files = map[string]string{filesSentinel(i): ""}
		m.Tasks = append(m.Tasks, e)
	}
	// Manifest sorts the tasks by id; the sentinels follow them.
	order := make([]int, len(d.Tasks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(d.Tasks[a].ID, d.Tasks[b].ID) })
	sorted := make([]ManifestTask, len(order))
	for k, i := range order {
		sorted[k] = m.Tasks[i]
	}
	m.Tasks = sorted
	skeleton, err := m.Marshal()
	if err != nil {
		return err
	}
	for _, i := range order {
		key, _ := jsonString(filesSentinel(i))
		// `"files": {` newline, the sentinel's line, its closing brace.
		at := bytes.Index(skeleton, key)
		open := bytes.LastIndexByte(skeleton[:at], '{')
		closing := bytes.IndexByte(skeleton[at:], '}') + at
		lineStart := bytes.LastIndexByte(skeleton[:at], '\n') + 1
		indent := skeleton[lineStart:at]
		if _, err := w.Write(skeleton[:open]); err != nil {
			return err
		}
		if err := writeManifestFiles(w, d.Tasks[i], string(indent), string(skeleton[bytes.LastIndexByte(skeleton[:closing], '\n')+1:closing])); err != nil {
			return fmt.Errorf("task %s: %w", d.Tasks[i].ID, err)
		}
		skeleton = skeleton[closing+1:]
	}
	_, err = w.Write(skeleton)
	return err
}

// writeManifestFiles writes the "files" object of task t as encoding/json indents
// it (entries at indent, the closing brace at closeIndent; "{}" when the
// task has no file), hashing each file in key order.
func writeManifestFiles(w io.Writer, t *Task, indent, closeIndent string) error {
	var names []string
	err := walkFiles(t.Dir, func(rel, _ string) error {
		if !utf8.ValidString(rel) {
			return fmt.Errorf("task file %q: its name is not UTF-8, which manifest.json cannot hold: rename it", rel)
		}
		names = append(names, rel)
		return nil
	})
	if err != nil {
		return err
	}
	if len(names) == 0 {
		_, err := io.WriteString(w, "{}")
		return err
	}
	// encoding/json writes map keys in byte order.
	slices.Sort(names)
	root, err := filepath.EvalSymlinks(t.Dir)
	if err != nil {
		return fmt.Errorf("reading task folder: %w", err)
	}
	h := sha256.New()
	buf := make([]byte, 64<<10)
	sum := make([]byte, 0, sha256.Size)
	hexSum := make([]byte, 2*sha256.Size)
	if _, err := io.WriteString(w, "{\n"); err != nil {
		return err
	}
	for k, rel := range names {
		h.Reset()
		if err := hashInto(h, filepath.Join(root, filepath.FromSlash(rel)), buf); err != nil {
			return fmt.Errorf("hashing task files: %w", err)
		}
		hex.Encode(hexSum, h.Sum(sum[:0]))
		key, err := jsonString(rel)
		if err != nil {
			return err
		}
		sep := ",\n"
		if k == len(names)-1 {
			sep = "\n"
		}
		if _, err := fmt.Fprintf(w, "%s%s: \"%s\"%s", indent, key, hexSum, sep); err != nil {
			return err
		}
		names[k] = "" // let it go
	}
	_, err = io.WriteString(w, closeIndent+"}")
	return err
}

// hashInto writes the content of the file at path to h through buf.
func hashInto(h io.Writer, path string, buf []byte) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	// Through buf, not io.Copy: *os.File's WriteTo would take a new
	// 32 KiB buffer for each file, a GB of garbage for 30,000 files.
	if _, err := io.CopyBuffer(h, struct{ io.Reader }{f}, buf); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// jsonString is s as encoding/json writes it without HTML escaping.
func jsonString(s string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// sameBytes is a writer that compares what it is given with r, and
// remembers where they first differ.
type sameBytes struct {
	r    *bufio.Reader
	off  int64
	line int // of the first difference, from 1
	diff bool
	buf  []byte
}

var errDiffer = errors.New("the bytes differ")

func (c *sameBytes) Write(p []byte) (int, error) {
	if c.diff {
		return 0, errDiffer
	}
	for n := 0; n < len(p); {
		k := min(len(p)-n, 64<<10)
		if cap(c.buf) < k {
			c.buf = make([]byte, 64<<10)
		}
		got, err := io.ReadFull(c.r, c.buf[:k])
		if c.line == 0 {
			c.line = 1
		}
		for i := 0; i < got; i++ {
			if c.buf[i] != p[n+i] {
				c.off += int64(i)
				c.diff = true
				return n + i, errDiffer
			}
			if p[n+i] == '\n' {
				c.line++
			}
		}
		c.off += int64(got)
		n += got
		if err != nil {
			c.diff = true
			return n, errDiffer
		}
	}
	return len(p), nil
}

// atEnd reports whether r has nothing after what was compared.
func (c *sameBytes) atEnd() bool {
	_, err := c.r.ReadByte()
	return err == io.EOF
}

// readRecorded reads the manifest at path as ReadManifest does, checked
// the same way, but as a stream that keeps no file hash (each is checked
// as it goes by): the dataset needs of the manifest on disk only each
// task's arch and generated_from, and ReadManifest holds the whole file
// and every hash, hundreds of MB for a million task files. The entries'
// Files are nil.
func readRecorded(path string) (*Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, bad, err := decodeManifestStream(bufio.NewReaderSize(f, 64<<10))
	if errors.Is(err, io.EOF) {
		// Inside the document, as json.Decoder.Decode says it.
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, fmt.Errorf("%s: not a valid manifest: %w", path, err)
	}
	if err := m.check(); err != nil {
		bad = append([]string{err.Error()}, bad...)
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("%s: %s", path, strings.Join(bad, "; "))
	}
	return m, nil
}

// decodeManifestStream decodes a manifest token by token, refusing unknown
// fields as ParseManifest does; bad lists the files whose hash is not a
// SHA-256 (at most a few).
func decodeManifestStream(r io.Reader) (m *Manifest, bad []string, err error) {
	dec := json.NewDecoder(r)
	if err := expectToken(dec, json.Delim('{')); err != nil {
		return nil, nil, err
	}
	m = &Manifest{}
	for dec.More() {
		key, err := stringToken(dec)
		if err != nil {
			return nil, nil, err
		}
		switch key {
		case "dataset":
			err = dec.Decode(&m.Dataset)
		case "version":
			err = dec.Decode(&m.Version)
		case "generated_from":
			err = dec.Decode(&m.GeneratedFrom)
		case "tasks":
			err = decodeTasksStream(dec, m, &bad)
		default:
			err = fmt.Errorf("json: unknown field %q", key)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	if err := expectToken(dec, json.Delim('}')); err != nil {
		return nil, nil, err
	}
	if m.Tasks == nil {
		m.Tasks = []ManifestTask{}
	}
	return m, bad, nil
}

func decodeTasksStream(dec *json.Decoder, m *Manifest, bad *[]string) error {
	t, err := dec.Token()
	if err != nil || t == nil {
		return err
	}
	if t != json.Delim('[') {
		return fmt.Errorf("tasks: not a list")
	}
	for dec.More() {
		if err := expectToken(dec, json.Delim('{')); err != nil {
			return err
		}
		fields := map[string]json.RawMessage{}
		var badFiles []string
		for dec.More() {
			key, err := stringToken(dec)
			if err != nil {
				return err
			}
			if key != "files" {
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return err
				}
				fields[key] = raw
				continue
			}
			fields[key] = json.RawMessage("null")
			if err := streamFiles(dec, &badFiles); err != nil {
				return err
			}
		}
		if err := expectToken(dec, json.Delim('}')); err != nil {
			return err
		}
		b, err := json.Marshal(fields)
		if err != nil {
			return err
		}
		var e ManifestTask
		td := json.NewDecoder(bytes.NewReader(b))
		td.DisallowUnknownFields()
		if err := td.Decode(&e); err != nil {
			return err
		}
		for _, f := range badFiles {
			if len(*bad) < 10 {
				*bad = append(*bad, fmt.Sprintf("tasks[%s].files%s", e.ID, f))
			}
		}
		m.Tasks = append(m.Tasks, e)
	}
	return expectToken(dec, json.Delim(']'))
}

// streamFiles reads a "files" object, checking each hash without keeping
// it.
func streamFiles(dec *json.Decoder, bad *[]string) error {
	t, err := dec.Token()
	if err != nil || t == nil {
		return err
	}
	if t != json.Delim('{') {
		return fmt.Errorf("files: not an object")
	}
	for dec.More() {
		p, err := stringToken(dec)
		if err != nil {
			return err
		}
		var sum string
		if err := dec.Decode(&sum); err != nil {
			return err
		}
		if !hexSHA256.MatchString(sum) && len(*bad) < 10 {
			*bad = append(*bad, fmt.Sprintf("[%q]: %q is not a SHA-256", p, sum))
		}
	}
	return expectToken(dec, json.Delim('}'))
}

func expectToken(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != want {
		return fmt.Errorf("want %q, got %v", want, t)
	}
	return nil
}

func stringToken(dec *json.Decoder) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", err
	}
	s, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("want a key, got %v", t)
	}
	return s, nil
}
