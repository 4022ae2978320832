package release_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
	"github.com/42-b3yond-6ug/ssebench/release"
)

// TestHostileRecordIDs: a record of what verified whose task ids are not
// ids (a path, a newline, a right-to-left override) is refused in one
// escaped line before an id becomes an image name or a printed line.
func TestHostileRecordIDs(t *testing.T) {
	for _, id := range []string{"../hijack", "a/b", "a\nb", "a\u202eb", strings.Repeat("a", 200), ""} {
		t.Run(id, func(t *testing.T) {
			hostile.Case(t, "names: catalog ids")
			b, err := json.Marshal(map[string]any{"dataset": "ds", "version": "v1", "tasks": map[string]any{id: map[string]any{}}})
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(t.TempDir(), "verified.json")
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = release.ReadRecord(p, "ds", "v1")
			if err == nil || strings.ContainsAny(err.Error(), "\n\u202e") || !strings.Contains(err.Error(), "is not a valid id") {
				t.Errorf("ReadRecord with task id %q = %v, want one escaped line refusing the id", id, err)
			}
		})
	}
}
