package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// TestHostileBlobFiles: an entry of blobs/ that is not a regular file (a
// FIFO, a symlink to /dev/zero or to a real blob, a directory) is reported
// by Verify without being opened, and refused by a read at once. Before,
// a FIFO blocked Verify for ever and a link to /dev/zero hashed for ever.
func TestHostileBlobFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(p string) error
		want string
	}{
		{"a FIFO", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "is a FIFO"},
		{"a symlink to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "is a symlink"},
		{"a directory", func(p string) error { return os.Mkdir(p, 0o755) }, "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "store: blobs that are not files")
			s := openStore(t)
			h := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}
			if err := tc.make(s.BlobPath(h)); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done := make(chan struct{})
			go func() {
				// A blocked open ignores the context: a watchdog
				// frees it, so the test ends.
				select {
				case <-done:
				case <-ctx.Done():
					if f, err := os.OpenFile(s.BlobPath(h), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
						f.Close()
					}
				}
			}()
			probs, err := s.Verify(ctx)
			close(done)
			if err != nil {
				t.Fatalf("Verify() = %v", err)
			}
			if len(probs) != 1 || probs[0].Digest != h.String() || !strings.Contains(probs[0].What, tc.want) {
				t.Fatalf("Verify() = %v, want one problem with %s saying %q", probs, h, tc.want)
			}
			if _, err := s.Blob(h, -1); err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("Blob() = %v, want an error saying it is not a regular file", err)
			}
		})
	}
	t.Run("a blob swapped for a FIFO after the listing", func(t *testing.T) {
		hostile.Case(t, "store: blobs that are not files")
		p := filepath.Join(t.TempDir(), "fifo")
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := hashFile(context.Background(), p); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "a FIFO") {
				t.Errorf("hashFile() = %v, want a FIFO refused", err)
			}
		case <-time.After(5 * time.Second):
			f, _ := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0)
			f.Close()
			t.Fatal("hashFile() blocked opening a FIFO")
		}
	})
}
