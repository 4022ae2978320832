package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// leftovers lists the files of dir other than the ones named.
func leftovers(t *testing.T, dir string, names ...string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
next:
	for _, e := range ents {
		for _, n := range names {
			if e.Name() == n {
				continue next
			}
		}
		out = append(out, e.Name())
	}
	return out
}

func TestWriteFileReplacesTheWholeFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "result.json")
	if err := os.WriteFile(p, []byte(strings.Repeat("old content, longer than the new\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(p, []byte("new\n"), 0o644, Sync()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "new\n" {
		t.Fatalf("the file holds %q, want exactly the new content", b)
	}
	if extra := leftovers(t, dir, "result.json"); len(extra) > 0 {
		t.Fatalf("temporary files left behind: %v", extra)
	}
}

func TestWriteFileKeepsTheMode(t *testing.T) {
	dir := t.TempDir()
	for _, perm := range []os.FileMode{0o644, 0o600, 0o755} {
		p := filepath.Join(dir, "f"+perm.String())
		if err := WriteBytes(p, []byte("x"), perm); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != perm {
			t.Errorf("mode %v, want %v", fi.Mode().Perm(), perm)
		}
	}
}

func TestWriteFileFailureLeavesTheOldFileAndNoTemporary(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := WriteFile(p, 0o644, func(f *os.File) error {
		if _, err := f.WriteString("half a"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("WriteFile returned %v, want the write's error", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("a failed write changed the file to %q", b)
	}
	if extra := leftovers(t, dir, "plan.json"); len(extra) > 0 {
		t.Fatalf("temporary files left behind: %v", extra)
	}
}

func TestWriteFileIsAtomicForReaders(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "summary.json")
	err := WriteFile(p, 0o644, func(f *os.File) error {
		// While the content is being written, path does not exist yet:
		// it appears whole, by rename, or not at all.
		if _, err := f.WriteString("part one, "); err != nil {
			return err
		}
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("path is visible before the write finished: %v", err)
		}
		_, err := f.WriteString("part two")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "part one, part two" {
		t.Fatalf("the file holds %q", b)
	}
}

func TestWriteFileTemporaryOptions(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, ".tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "index.json")
	var name string
	err := WriteFile(p, 0o644, func(f *os.File) error {
		name = f.Name()
		_, err := f.WriteString("{}")
		return err
	}, TempDir(tmp), TempPattern(".index-1-*"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(name) != tmp || !strings.HasPrefix(filepath.Base(name), ".index-1-") {
		t.Fatalf("the temporary file was %s, want .tmp/.index-1-*", name)
	}
	for _, opt := range []WriteOption{TempDir(""), TempPattern(""), TempPattern("a/b*")} {
		if err := WriteBytes(p, nil, 0o644, opt); err == nil {
			t.Error("an invalid option was accepted")
		}
	}
}
