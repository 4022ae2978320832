package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// memoDir holds the store's memos, one small file per key; hidden, as
// the temporary directory is, from tools that read the layout.
const memoDir = ".memo"

// Memo returns the image digest that SetMemo recorded for key: a build
// whose inputs hash to key made that image before, and may take it again
// instead of building (when the store still names it). A missing or
// unreadable memo is no memo.
func (s *Store) Memo(key string) (v1.Hash, bool) {
	if !validMemoKey(key) {
		return v1.Hash{}, false
	}
	b, err := os.ReadFile(filepath.Join(s.dir, memoDir, key))
	if err != nil {
		return v1.Hash{}, false
	}
	h, err := v1.NewHash(strings.TrimSpace(string(b)))
	if err != nil {
		return v1.Hash{}, false
	}
	return h, true
}

// SetMemo records that the build whose inputs hash to key (64 lowercase
// hex digits) made the image h. Memos are hints: gc leaves them, and a
// memo whose image is gone or renamed is ignored by its reader.
func (s *Store) SetMemo(key string, h v1.Hash) error {
	if err := s.writable(); err != nil {
		return err
	}
	if !validMemoKey(key) {
		return fmt.Errorf("memo key %q: want 64 lowercase hex digits", key)
	}
	dir := filepath.Join(s.dir, memoDir)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("recording a build memo: %w", err)
	}
	return s.writeFileAtomic(filepath.Join(memoDir, key), []byte(h.String()+"\n"))
}

func validMemoKey(key string) bool {
	if len(key) != 64 {
		return false
	}
	for _, c := range key {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
