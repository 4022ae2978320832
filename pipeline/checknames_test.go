package pipeline_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/pipeline"
)

// TestCheckLocal: a --local folder that is not there, or is a file, is
// said to be so, not taken for a dataset without tasks.
func TestCheckLocal(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for arg, want := range map[string]string{"": "", dir: "", filepath.Join(dir, "nope"): "no such folder", file: "is a file"} {
		err := pipeline.CheckLocal(arg)
		if (want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("CheckLocal(%q) = %v, want %q", arg, err, want)
		}
	}
	if err := pipeline.CheckNames(dir, nil, []string{"t1"}, dir, ""); err == nil || !strings.Contains(err.Error(), "has no task folders") {
		t.Errorf("CheckNames of an empty dataset = %v", err)
	}
}
