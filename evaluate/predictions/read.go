package predictions

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/internal/suggest"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// Bounds of a predictions file: its patches are written to the grade's
// folder one at a time, never held together.
const (
	// maxPredictionLine bounds one prediction (a line of JSON Lines, an
	// element of an array): a patch is kilobytes; SWE-bench's largest are
	// a few megabytes.
	maxPredictionLine = 64 << 20
	// maxModelName bounds model_name_or_path, which reports print.
	maxModelName = 200
)

// The kinds of patch a prediction holds, as its line and result.json say.
const (
	// KindEmpty is a patch of nothing but white space.
	KindEmpty = "empty patch"
	// KindNotDiff is a patch that is neither a unified nor a git diff.
	KindNotDiff = "not a diff"
)

// Prediction is one entry of a predictions file, as `ssebench grade`
// reads it.
type Prediction struct {
	// Where is "line N" (JSON Lines) or "element N" (a JSON array).
	Where string
	// ID is instance_id, Model model_name_or_path, both as given (printed
	// only through quote).
	ID, Model string
	// PatchFile is the patch's copy in the grade's folder; Bytes its size.
	PatchFile string
	Bytes     int
	// Kind is "" for a diff, else KindEmpty or KindNotDiff: it is graded
	// all the same (the source unchanged), and the notes say why.
	Kind string
	// Refused, when set, is why the prediction is not graded: an unknown
	// or malformed id, a malformed model name, a duplicate.
	Refused string
}

// rawPrediction is the SWE-bench prediction: other keys (full_output,
// cost, ...) are ignored, as SWE-bench ignores them.
type rawPrediction struct {
	InstanceID *string `json:"instance_id"`
	Model      *string `json:"model_name_or_path"`
	Patch      *string `json:"model_patch"`
}

// Read reads the predictions file path, JSON Lines or one JSON
// array, writing each patch to dir (created) as <n>.diff, and checks each
// prediction against the task ids known. A file that cannot be read as
// predictions is an error naming the line; a prediction that cannot be
// graded is one with Refused set.
func Read(path, dir string, known []string) ([]Prediction, error) {
	// Checked before it is opened: opening a FIFO waits for a writer.
	if fi, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("reading the predictions: %w (pass --predictions FILE: JSON Lines of instance_id, model_name_or_path, model_patch)", err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("--predictions %s is not a regular file: pass a JSON Lines file or a JSON array of predictions", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the predictions: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("--predictions %s is not a regular file: pass a JSON Lines file or a JSON array of predictions", path)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the predictions' folder: %w", err)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	first, err := firstByte(br)
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s holds no predictions: want one JSON object per line with instance_id, model_name_or_path and model_patch", path)
	} else if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	r := &predReader{path: path, dir: dir, known: known, seen: map[string]string{}}
	if first == '[' {
		err = r.array(br)
	} else {
		err = r.lines(br)
	}
	if err != nil {
		return nil, err
	}
	if len(r.out) == 0 {
		return nil, fmt.Errorf("%s holds no predictions: want one JSON object per line with instance_id, model_name_or_path and model_patch", path)
	}
	return r.out, nil
}

func firstByte(br *bufio.Reader) (byte, error) {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return c, br.UnreadByte()
		}
	}
}

type predReader struct {
	path, dir string
	known     []string
	// seen maps model and id to where the first prediction of the pair is.
	seen map[string]string
	out  []Prediction
}

// lines reads JSON Lines: one object per line, blank lines skipped. A
// line is read up to maxPredictionLine and no further.
func (r *predReader) lines(br *bufio.Reader) error {
	for n := 1; ; n++ {
		line, err := readLine(br, maxPredictionLine)
		if errors.Is(err, errLineTooLong) {
			return fmt.Errorf("%s line %d is over %d MiB: a prediction's patch may be at most that", r.path, n, maxPredictionLine>>20)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading %s: %w", r.path, err)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			var p rawPrediction
			if derr := strictObject(line, &p); derr != nil {
				return fmt.Errorf("%s line %d is not a prediction: %v (want one JSON object per line with instance_id, model_name_or_path and model_patch)", r.path, n, derr)
			}
			if aerr := r.add(fmt.Sprintf("line %d", n), p); aerr != nil {
				return aerr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

// array reads one JSON array of objects, one element at a time.
func (r *predReader) array(br *bufio.Reader) error {
	dec := json.NewDecoder(br)
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("%s is not a JSON array of predictions: %v", r.path, err)
	}
	for n := 1; dec.More(); n++ {
		var raw json.RawMessage
		// The decoder buffers one element: InputOffset bounds it before
		// the next one is read.
		start := dec.InputOffset()
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("%s element %d is not a prediction: %v", r.path, n, err)
		}
		if dec.InputOffset()-start > maxPredictionLine {
			return fmt.Errorf("%s element %d is over %d MiB: a prediction's patch may be at most that", r.path, n, maxPredictionLine>>20)
		}
		var p rawPrediction
		if err := strictObject(raw, &p); err != nil {
			return fmt.Errorf("%s element %d is not a prediction: %v (want objects with instance_id, model_name_or_path and model_patch)", r.path, n, err)
		}
		if err := r.add(fmt.Sprintf("element %d", n), p); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("%s is not a JSON array of predictions: %v", r.path, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s has more after its array: want one JSON array, or one object per line", r.path)
	}
	return nil
}

var errLineTooLong = errors.New("line too long")

// readLine reads up to the next '\n' (dropped), at most max bytes; a
// longer line is errLineTooLong, read no further.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > max+1 {
			return nil, errLineTooLong
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}

// strictObject decodes one JSON object into p; the three keys must be
// strings (model_patch may be null).
func strictObject(b []byte, p *rawPrediction) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return errors.New("not a JSON object")
	}
	if err := json.Unmarshal(b, p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%s must be a string", te.Field)
		}
		return err
	}
	return nil
}

// add checks one prediction and writes its patch.
func (r *predReader) add(where string, raw rawPrediction) error {
	p := Prediction{Where: where}
	if raw.InstanceID != nil {
		p.ID = *raw.InstanceID
	}
	if raw.Model != nil {
		p.Model = *raw.Model
	}
	patch := ""
	if raw.Patch != nil {
		patch = *raw.Patch
	}
	p.Refused = r.check(&p, raw)
	if p.Refused == "" {
		p.PatchFile = filepath.Join(r.dir, fmt.Sprintf("%d.diff", len(r.out)+1))
		// Read-only for the run: the file is mounted read-only as the
		// agent's input and nothing of the run writes it.
		if err := safefile.WriteBytes(p.PatchFile, []byte(patch), 0o644); err != nil {
			return fmt.Errorf("writing the patch of %s: %w", where, err)
		}
		p.Bytes, p.Kind = len(patch), patchKind(patch)
		r.seen[p.Model+"\x00"+p.ID] = where
	}
	r.out = append(r.out, p)
	return nil
}

// check says why p cannot be graded, or "".
func (r *predReader) check(p *Prediction, raw rawPrediction) string {
	switch {
	case raw.InstanceID == nil:
		return "no instance_id"
	case raw.Model == nil || strings.TrimSpace(p.Model) == "":
		return "no model_name_or_path: name the model (or system) that made the patch"
	case !isPrintable(p.Model) || len(p.Model) > maxModelName:
		return fmt.Sprintf("model_name_or_path is not a name: printable characters, at most %d bytes", maxModelName)
	case !task.ValidID(p.ID):
		return fmt.Sprintf("instance_id %s is not a task id", quote(p.ID))
	}
	found := false
	for _, k := range r.known {
		if k == p.ID {
			found = true
			break
		}
	}
	if !found {
		if s := suggest.Closest(p.ID, r.known); s != "" {
			return fmt.Sprintf("unknown instance_id %s: did you mean %q?", quote(p.ID), s)
		}
		return fmt.Sprintf("unknown instance_id %s: the dataset has no such task", quote(p.ID))
	}
	if first, dup := r.seen[p.Model+"\x00"+p.ID]; dup {
		return fmt.Sprintf("duplicate: %s has a prediction of %s by the same model; the first one is graded", first, p.ID)
	}
	return ""
}

// patchKind is "" for what looks like a unified or git diff.
func patchKind(s string) string {
	switch {
	case strings.TrimSpace(s) == "":
		return KindEmpty
	case strings.IndexByte(s, 0) >= 0:
		return KindNotDiff
	case strings.HasPrefix(s, "diff ") || strings.Contains(s, "\ndiff "),
		(strings.HasPrefix(s, "--- ") || strings.Contains(s, "\n--- ")) && strings.Contains(s, "\n+++ ") && strings.Contains(s, "\n@@ "):
		return ""
	}
	return KindNotDiff
}

// isPrintable says s is valid UTF-8 of printable characters only.
func isPrintable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, c := range s {
		if !unicode.IsPrint(c) {
			return false
		}
	}
	return true
}

// quote is s for a line of output: quoted, at most 80 bytes of it.
func quote(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%q…", strings.ToValidUTF8(s[:80], ""))
	}
	return fmt.Sprintf("%q", s)
}
