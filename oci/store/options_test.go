package store

import (
	"context"
	"path/filepath"
	"testing"
)

func TestOpenRefusesInvalidOptions(t *testing.T) {
	//nolint:staticcheck // a nil context is the invalid value under test
	for name, opt := range map[string]Option{
		"nil fetcher": WithFetcher(nil),
		"nil context": WithContext(nil),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Open(filepath.Join(t.TempDir(), "store"), opt); err == nil {
				t.Fatal("Open accepted an invalid option")
			}
		})
	}
}

func TestWithContextKeepsTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := Open(filepath.Join(t.TempDir(), "store"), WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.ctx != ctx {
		t.Fatal("the store did not keep the context of WithContext")
	}
}
