package task

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFindDataset(t *testing.T) {
	home := t.TempDir()
	for _, d := range []string{"a/only-here", "a/twice", "b/twice"} {
		if err := os.MkdirAll(filepath.Join(home, "datasets", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct{ id, want string }{
		{"only-here", filepath.Join(home, "datasets", "a")},
		{"twice", ""},
		{"nowhere", ""},
	}
	for _, tt := range tests {
		if got := FindDataset(home, tt.id); got != tt.want {
			t.Errorf("FindDataset(%q) = %q, want %q", tt.id, got, tt.want)
		}
	}
}
