package contract

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testToken = "0123456789abcdef0123"

func TestResultsStreamRoundTrip(t *testing.T) {
	src := t.TempDir()
	results, archive := filepath.Join(src, "results"), filepath.Join(src, "archive")
	mustWrite(t, filepath.Join(results, "result.json"), `{"passed":false}`)
	mustWrite(t, filepath.Join(results, "logs", "build.log"), strings.Repeat("build output\n", 5000))
	mustWrite(t, filepath.Join(archive, "notes.txt"), "kept")
	// The agent's archive may hold a symlink to a secret: it must not
	// come back as a file, nor as a link.
	if err := os.Symlink("/etc/shadow", filepath.Join(archive, "shadow")); err != nil {
		t.Fatal(err)
	}

	var log bytes.Buffer
	log.WriteString("entrypoint: agent exited 0\n")
	if err := WriteResultsStream(&log, testToken, map[string]string{StreamResults: results, StreamArchive: archive}); err != nil {
		t.Fatal(err)
	}
	log.WriteString("after the block\n")

	dst := t.TempDir()
	var out bytes.Buffer
	dest := map[string]string{StreamResults: dst, StreamArchive: filepath.Join(dst, "archive")}
	if err := ReadResultsStream(&log, &out, testToken, dest, 0); err != nil {
		t.Fatalf("ReadResultsStream: %v", err)
	}
	if got, want := out.String(), "entrypoint: agent exited 0\n\nafter the block\n"; got != want {
		t.Errorf("output passed on = %q, want %q", got, want)
	}
	for rel, want := range map[string]string{
		"result.json":       `{"passed":false}`,
		"logs/build.log":    strings.Repeat("build output\n", 5000),
		"archive/notes.txt": "kept",
	} {
		b, err := os.ReadFile(filepath.Join(dst, rel))
		if err != nil || string(b) != want {
			t.Errorf("%s = %.40q, %v; want %.40q", rel, b, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(dst, "archive", "shadow")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the archive's symlink came back: %v", err)
	}
}

func TestResultsStreamMissingOrForged(t *testing.T) {
	src := t.TempDir()
	mustWrite(t, filepath.Join(src, "result.json"), `{"passed":true}`)
	var forged bytes.Buffer
	// A block of another token (one the agent made up) is plain output.
	if err := WriteResultsStream(&forged, "forgedforgedforged", map[string]string{StreamResults: src}); err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	err := ReadResultsStream(bytes.NewReader(forged.Bytes()), nil, testToken, map[string]string{StreamResults: dst}, 0)
	if !errors.Is(err, ErrNoResultsStream) {
		t.Fatalf("ReadResultsStream of a forged block = %v, want ErrNoResultsStream", err)
	}
	if _, err := os.Stat(filepath.Join(dst, "result.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a forged block's result.json was written: %v", err)
	}

	// A block cut off (the pod was killed while writing) is no results.
	var cut bytes.Buffer
	if err := WriteResultsStream(&cut, testToken, map[string]string{StreamResults: src}); err != nil {
		t.Fatal(err)
	}
	b := cut.Bytes()[:cut.Len()-len(streamEnd(testToken))-2]
	if err := ReadResultsStream(bytes.NewReader(b), nil, testToken, map[string]string{StreamResults: t.TempDir()}, 0); !errors.Is(err, ErrNoResultsStream) {
		t.Errorf("ReadResultsStream of a cut block = %v, want ErrNoResultsStream", err)
	}
}

func TestResultsStreamHostileEntries(t *testing.T) {
	// A block crafted by hand: entries out of the destination, a
	// symlink, and more bytes than the limit.
	var tarBuf bytes.Buffer
	zw := gzip.NewWriter(&tarBuf)
	tw := tar.NewWriter(zw)
	add := func(h *tar.Header, body string) {
		h.Size = int64(len(body))
		if h.Typeflag == tar.TypeSymlink {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	add(&tar.Header{Typeflag: tar.TypeReg, Name: "results/../../escape", Mode: 0o644}, "x")
	add(&tar.Header{Typeflag: tar.TypeReg, Name: "/results/abs", Mode: 0o644}, "x")
	add(&tar.Header{Typeflag: tar.TypeSymlink, Name: "results/link", Linkname: "/etc/passwd"}, "")
	add(&tar.Header{Typeflag: tar.TypeReg, Name: "results/link", Mode: 0o4755}, "through")
	add(&tar.Header{Typeflag: tar.TypeReg, Name: "results/big", Mode: 0o644}, strings.Repeat("b", 100))
	tw.Close()
	zw.Close()
	var log bytes.Buffer
	log.WriteString(streamBegin(testToken) + "\n")
	enc := base64.StdEncoding.EncodeToString(tarBuf.Bytes())
	for len(enc) > 0 {
		n := min(76, len(enc))
		log.WriteString(enc[:n] + "\n")
		enc = enc[n:]
	}
	log.WriteString(streamEnd(testToken) + "\n")

	parent := t.TempDir()
	dst := filepath.Join(parent, "run")
	err := ReadResultsStream(&log, nil, testToken, map[string]string{StreamResults: dst}, 50)
	if err == nil || !strings.Contains(err.Error(), "more than 50 bytes") {
		t.Errorf("ReadResultsStream over the limit = %v, want an error naming the limit", err)
	}
	for _, p := range []string{filepath.Join(parent, "escape"), filepath.Join(dst, "abs"), filepath.Join(dst, "big")} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was written: %v", p, err)
		}
	}
	fi, err := os.Lstat(filepath.Join(dst, "link"))
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o755 {
		t.Errorf("results/link = %v, %v; want a regular file of mode 0755 (no symlink, no setuid)", fi, err)
	}
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestResultsStreamTwoBlocks: a second block of the run's token (code
// that learnt the token printed one before the entrypoint's) refuses the
// results instead of believing the first.
func TestResultsStreamTwoBlocks(t *testing.T) {
	forgedSrc, realSrc := t.TempDir(), t.TempDir()
	mustWrite(t, filepath.Join(forgedSrc, "result.json"), `{"passed":true}`)
	mustWrite(t, filepath.Join(realSrc, "result.json"), `{"passed":false}`)
	var log bytes.Buffer
	for _, src := range []string{forgedSrc, realSrc} {
		if err := WriteResultsStream(&log, testToken, map[string]string{StreamResults: src}); err != nil {
			t.Fatal(err)
		}
	}
	err := ReadResultsStream(&log, nil, testToken, map[string]string{StreamResults: t.TempDir()}, 0)
	if !errors.Is(err, ErrForgedResultsStream) {
		t.Fatalf("ReadResultsStream of two blocks = %v, want ErrForgedResultsStream", err)
	}
}
