package predictions

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

const predTask = "kvconf-12-afb9ee1"

var predKnown = []string{predTask, "libqs-3-b2a739e"}

func predLine(t *testing.T, id, model, patch any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"instance_id": id, "model_name_or_path": model, "model_patch": patch})
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

const goodDiff = "--- a/unquote.go\n+++ b/unquote.go\n@@ -1 +1 @@\n-a\n+b\n"

// readPreds writes content as a predictions file and reads it into a
// fresh folder, which it returns.
func readPreds(t *testing.T, content string) ([]Prediction, string, error) {
	t.Helper()
	root := t.TempDir()
	p := filepath.Join(root, "preds.jsonl")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "grade", "predictions")
	preds, err := Read(p, dir, predKnown)
	return preds, root, err
}

// onlyInside fails when root holds a file outside root/grade/predictions
// other than the predictions file.
func onlyInside(t *testing.T, root string) {
	t.Helper()
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && filepath.Base(p) != "preds.jsonl" && filepath.Dir(p) != filepath.Join(root, "grade", "predictions") {
			t.Errorf("a file outside the predictions' folder: %s", p)
		}
		return nil
	})
}

// TestReadPredictions: the SWE-bench forms (JSON Lines, a JSON array, a
// null patch, extra keys) read; each prediction that cannot be graded is
// refused on its own, with the closest id for an unknown one.
func TestReadPredictions(t *testing.T) {
	content := predLine(t, predTask, "org/model-a", goodDiff) +
		"\n" +
		`{"instance_id":"libqs-3-b2a739e","model_name_or_path":"org/model-a","model_patch":null,"full_output":"..."}` + "\n" +
		predLine(t, "kvconf-12-afb9ee", "org/model-a", goodDiff) +
		predLine(t, predTask, "org/model-a", goodDiff) +
		predLine(t, predTask, "org/model-b", "I would change the parser.") +
		predLine(t, predTask, "", goodDiff)
	preds, _, err := readPreds(t, content)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ where, kind, refused string }{
		{"line 1", "", ""},
		{"line 3", KindEmpty, ""},
		{"line 4", "", `unknown instance_id "kvconf-12-afb9ee": did you mean "kvconf-12-afb9ee1"?`},
		{"line 5", "", "duplicate: line 1 has a prediction"},
		{"line 6", KindNotDiff, ""},
		{"line 7", "", "no model_name_or_path"},
	}
	if len(preds) != len(want) {
		t.Fatalf("%d predictions, want %d: %+v", len(preds), len(want), preds)
	}
	for i, w := range want {
		p := preds[i]
		if p.Where != w.where || p.Kind != w.kind || !strings.HasPrefix(p.Refused, w.refused) || (w.refused == "") != (p.Refused == "") {
			t.Errorf("prediction %d = %+v, want %+v", i, p, w)
		}
		if p.Refused == "" {
			b, err := os.ReadFile(p.PatchFile)
			if err != nil || len(b) != p.Bytes {
				t.Errorf("prediction %d: patch file %s: %d bytes (%v), want %d", i, p.PatchFile, len(b), err, p.Bytes)
			}
		}
	}

	arr := "[\n" + strings.TrimSuffix(predLine(t, predTask, "m", goodDiff), "\n") + ",\n" + strings.TrimSuffix(predLine(t, "libqs-3-b2a739e", "m", goodDiff), "\n") + "\n]\n"
	preds, _, err = readPreds(t, arr)
	if err != nil || len(preds) != 2 || preds[1].Where != "element 2" || preds[1].Refused != "" {
		t.Errorf("a JSON array: %+v, %v", preds, err)
	}
}

// TestHostilePredictions: a predictions file is input from whoever made
// the predictions. Each hostile one is refused in one line, or read with
// its patches kept inside the grade's folder for the agent phase to apply
// (a patch is never applied on this machine).
func TestHostilePredictions(t *testing.T) {
	for _, tc := range []struct {
		name, class string
		content     func(t *testing.T) string
		err         string // the file is refused with this
		refused     string // the one prediction is refused with this
		kind        string // else the one prediction is read, of this kind
	}{
		{name: "huge line", class: "grade: predictions: size", content: func(t *testing.T) string {
			return predLine(t, predTask, "m", goodDiff) + predLine(t, predTask, "n", strings.Repeat("+", maxPredictionLine))
		}, err: "line 2 is over 64 MiB"},
		{name: "huge array element", class: "grade: predictions: size", content: func(t *testing.T) string {
			return "[" + strings.TrimSuffix(predLine(t, predTask, "n", strings.Repeat("+", maxPredictionLine)), "\n") + "]"
		}, err: "element 1 is over 64 MiB"},
		{name: "NUL byte in a line", class: "grade: predictions: NUL", content: func(t *testing.T) string {
			return `{"instance_id":"` + predTask + "\x00" + `","model_name_or_path":"m","model_patch":""}` + "\n"
		}, err: "line 1 is not a prediction"},
		{name: "NUL in the id", class: "grade: predictions: NUL", content: func(t *testing.T) string {
			return predLine(t, predTask+"\x00", "m", goodDiff)
		}, refused: "is not a task id"},
		{name: "NUL in the model's name", class: "grade: predictions: NUL", content: func(t *testing.T) string {
			return predLine(t, predTask, "m\x00", goodDiff)
		}, refused: "model_name_or_path is not a name"},
		{name: "NUL in the patch", class: "grade: predictions: NUL", content: func(t *testing.T) string {
			return predLine(t, predTask, "m", goodDiff+"\x00")
		}, kind: KindNotDiff},
		{name: "instance_id ../x", class: "grade: predictions: traversal", content: func(t *testing.T) string {
			return predLine(t, "../x", "m", goodDiff)
		}, refused: `instance_id "../x" is not a task id`},
		{name: "instance_id /etc/passwd", class: "grade: predictions: traversal", content: func(t *testing.T) string {
			return predLine(t, "/etc/passwd", "m", goodDiff)
		}, refused: "is not a task id"},
		{name: "model ../../x", class: "grade: predictions: traversal", content: func(t *testing.T) string {
			// A name, not a path: it names the run only through
			// runIDPart, which keeps it one safe path component.
			return predLine(t, predTask, "../../x", goodDiff)
		}, kind: ""},
		{name: "model with a newline", class: "grade: predictions: names", content: func(t *testing.T) string {
			return predLine(t, predTask, "m\nFORGED PASSED", goodDiff)
		}, refused: "model_name_or_path is not a name"},
		{name: "path traversal in a diff", class: "grade: predictions: traversal", content: func(t *testing.T) string {
			return predLine(t, predTask, "m", "--- a/../../../../tmp/pwned\n+++ b/../../../../tmp/pwned\n@@ -0,0 +1 @@\n+x\n")
		}, kind: ""},
		{name: "symlink creation in a diff", class: "grade: predictions: symlink", content: func(t *testing.T) string {
			return predLine(t, predTask, "m", "diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n@@ -0,0 +1 @@\n+/ssebench\n\\ No newline at end of file\n")
		}, kind: ""},
		{name: "id not a string", class: "grade: predictions: types", content: func(t *testing.T) string {
			return `{"instance_id":12,"model_name_or_path":"m","model_patch":""}` + "\n"
		}, err: "instance_id must be a string"},
		{name: "not an object", class: "grade: predictions: types", content: func(t *testing.T) string {
			return `"just a string"` + "\n"
		}, err: "line 1 is not a prediction: not a JSON object"},
		{name: "an array and more", class: "grade: predictions: types", content: func(t *testing.T) string {
			return "[] {}"
		}, err: "has more after its array"},
		{name: "empty file", class: "grade: predictions: types", content: func(t *testing.T) string { return "\n\n" }, err: "holds no predictions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, tc.class)
			preds, root, err := readPreds(t, tc.content(t))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("Read() = %v, want one line with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p := preds[len(preds)-1]
			if tc.refused != "" {
				if !strings.Contains(p.Refused, tc.refused) || strings.Contains(p.Refused, "\n") {
					t.Errorf("refused %q, want one line with %q", p.Refused, tc.refused)
				}
				if p.PatchFile != "" {
					t.Errorf("a refused prediction's patch was written to %s", p.PatchFile)
				}
			} else if p.Refused != "" || p.Kind != tc.kind {
				t.Errorf("prediction = %+v, want read, kind %q", p, tc.kind)
			}
			onlyInside(t, root)
		})
	}
}

// TestHostilePredictionsNotAFile: a FIFO (or a folder) as the predictions
// file is refused, not waited on.
func TestHostilePredictionsNotAFile(t *testing.T) {
	hostile.Case(t, "grade: predictions: special file")
	root := t.TempDir()
	fifo := filepath.Join(root, "preds.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, root} {
		done := make(chan error, 1)
		go func() {
			_, err := Read(p, filepath.Join(root, "out"), predKnown)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "is not a regular file") {
				t.Errorf("%s as --predictions: %v", p, err)
			}
		case <-time.After(10 * time.Second):
			// Unblock the open, so the test ends.
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				f.Close()
			}
			t.Fatalf("%s as --predictions: still waiting after 10s", p)
		}
	}
}
