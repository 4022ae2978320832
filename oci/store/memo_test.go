package store

import (
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestMemo(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := strings.Repeat("ab", 32)
	if _, ok := s.Memo(key); ok {
		t.Fatal("a new store has a memo")
	}
	h := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("0f", 32)}
	if err := s.SetMemo(key, h); err != nil {
		t.Fatal(err)
	}
	if got, ok := s.Memo(key); !ok || got != h {
		t.Errorf("Memo = %v, %v; want %v", got, ok, h)
	}
	// A key is a file name: nothing else may become one.
	for _, bad := range []string{"../../index.json", strings.Repeat("AB", 32), "ab", strings.Repeat("ab", 32) + "/x"} {
		if err := s.SetMemo(bad, h); err == nil {
			t.Errorf("SetMemo(%q) took the key", bad)
		}
		if _, ok := s.Memo(bad); ok {
			t.Errorf("Memo(%q) found a memo", bad)
		}
	}
	// The layout's own files are untouched, and verify is happy.
	if probs, err := s.Verify(t.Context()); err != nil || len(probs) != 0 {
		t.Errorf("Verify = %v, %v", probs, err)
	}
}
