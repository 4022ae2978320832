package task

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// TestWriteManifestFileMatchesMarshal: the streamed manifest is byte for
// byte what Marshal renders of Manifest, with odd file names (quotes,
// backslashes, HTML characters, U+2028, non-ASCII, control characters),
// a task without files, and a generated_from.
func TestWriteManifestFileMatchesMarshal(t *testing.T) {
	dir := makeDataset(t)
	task := filepath.Join(dir, "gjson-196-bf4efcb")
	for _, n := range []string{`q"uote`, `back\slash`, "<a&b>", "line\u2028sep", "ünï", "tab\tx", "a.txt", "a/b"} {
		p := filepath.Join(task, "odd", n)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d, err := LoadDataset(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{"", "abc123"} {
		m, err := d.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		m.GeneratedFrom = from
		want, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := d.writeManifest(&got, from); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("writeManifest(generated_from %q) =\n%s\nwant\n%s", from, got.Bytes(), want)
		}
	}
	if n, err := d.WriteManifestFile(); err != nil || n != 2 {
		t.Fatalf("WriteManifestFile() = %d, %v", n, err)
	}
	if ps, err := CheckManifest(dir); err != nil || len(ps) != 0 {
		t.Errorf("CheckManifest() after WriteManifestFile = %v, %v", ps, err)
	}
}

// manifestDirEnv names, to the child process of TestHostileManifestMemory,
// the dataset its parent made.
const manifestDirEnv = "SSEBENCH_TEST_MANIFEST_DATASET"

// TestHostileManifestMemory: writing and checking the manifest of a task
// of 15,000 files streams the hashes: the peak grows by a few bytes a file,
// not by the 1 KB a file (1.5 KB with --check) that holding every hash,
// the rendered document and the file on disk took.
func TestHostileManifestMemory(t *testing.T) {
	dir := os.Getenv(manifestDirEnv)
	if dir == "" {
		dir = makeDataset(t)
		task := filepath.Join(dir, "gjson-196-bf4efcb")
		for d := range 15 {
			sub := filepath.Join(task, "src", fmt.Sprintf("pkg%03d", d))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			for f := range 1000 {
				if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("file%04d.go", f)), []byte(fmt.Sprintf("package p%d // %d\n", d, f)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		d, err := LoadDataset(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.WriteManifestFile(); err != nil {
			t.Fatal(err)
		}
		t.Setenv(manifestDirEnv, dir)
	}
	t.Run("write", func(t *testing.T) {
		hostile.Case(t, "memory: dataset manifest")
		if !hostile.InChild(t) {
			hostile.RunChild(t, 22, 5*time.Minute)
			return
		}
		d, err := LoadDataset(dir)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.WriteManifestFile(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("check", func(t *testing.T) {
		hostile.Case(t, "memory: dataset manifest")
		if !hostile.InChild(t) {
			hostile.RunChild(t, 22, 5*time.Minute)
			return
		}
		ps, err := CheckManifest(dir)
		if err != nil || len(ps) != 0 {
			t.Fatalf("CheckManifest() = %v, %v", ps, err)
		}
	})
}
