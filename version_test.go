package ssebench

import (
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestNoCompiledBinaryTracked fails when git tracks a compiled program or
// object file: build outputs are made by the scripts and the CLI from
// source, never committed (a binary cannot be reviewed, and it goes stale).
func TestNoCompiledBinaryTracked(t *testing.T) {
	if _, err := os.Stat(".git"); err != nil {
		t.Skip("not a git checkout")
	}
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("listing tracked files: %v", err)
	}
	for _, p := range bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0}) {
		name := string(p)
		if kind := compiledKind(t, name); kind != "" {
			t.Errorf("%s is a compiled %s: remove it with `git rm --cached %s` and ignore it in .gitignore", name, kind, name)
		}
	}
}

// compiledKind names the binary format of the file at path by its magic
// number, or returns "" for anything else (and for a file the checkout
// does not have, such as one deleted but not yet staged).
func compiledKind(t *testing.T, path string) string {
	fi, err := os.Lstat(filepath.FromSlash(path))
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	f, err := os.Open(filepath.FromSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return "ELF file"
	case bytes.HasPrefix(head, []byte("\x00asm")):
		return "WebAssembly module"
	case bytes.HasPrefix(head, []byte("!<arch>\n")):
		return "archive of object files"
	case len(head) >= 4 && isMachO(binary.BigEndian.Uint32(head)):
		return "Mach-O file"
	case len(head) >= 64 && bytes.HasPrefix(head, []byte("MZ")):
		// A PE file: "MZ", and "PE\0\0" where e_lfanew points.
		off := int64(binary.LittleEndian.Uint32(head[60:64]))
		sig := make([]byte, 4)
		if _, err := f.ReadAt(sig, off); err == nil && bytes.Equal(sig, []byte("PE\x00\x00")) {
			return "PE (Windows) file"
		}
	}
	return ""
}

func isMachO(magic uint32) bool {
	switch magic {
	case 0xfeedface, 0xfeedfacf, 0xcefaedfe, 0xcffaedfe:
		return true
	}
	return false
}
