package agentimage

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestInputsKey(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM ssebench-agent\nRUN true\n"), 0o644))
	must(os.Symlink("Dockerfile", filepath.Join(dir, "link")))
	when := time.Unix(1750000000, 0)
	in := Inputs{Builder: "1.0.0", Platform: "linux/amd64", Time: when, Dirs: []string{dir}, BuildArgs: map[string]string{"A": "1"}}
	key := func() string {
		t.Helper()
		k, err := in.Key()
		must(err)
		return k
	}
	k0 := key()
	if key() != k0 {
		t.Fatal("the same inputs give two keys")
	}
	changes := []struct {
		name string
		do   func()
		undo func()
	}{
		{"file content", func() {
			must(os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM ssebench-agent\nRUN false\n"), 0o644))
		},
			func() {
				must(os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM ssebench-agent\nRUN true\n"), 0o644))
			}},
		{"file mode", func() { must(os.Chmod(filepath.Join(dir, "Dockerfile"), 0o755)) }, func() { must(os.Chmod(filepath.Join(dir, "Dockerfile"), 0o644)) }},
		{"link target", func() { os.Remove(filepath.Join(dir, "link")); must(os.Symlink("other", filepath.Join(dir, "link"))) },
			func() {
				os.Remove(filepath.Join(dir, "link"))
				must(os.Symlink("Dockerfile", filepath.Join(dir, "link")))
			}},
		{"build arg", func() { in.BuildArgs["A"] = "2" }, func() { in.BuildArgs["A"] = "1" }},
		{"platform", func() { in.Platform = "linux/arm64" }, func() { in.Platform = "linux/amd64" }},
		{"builder", func() { in.Builder = "1.0.1" }, func() { in.Builder = "1.0.0" }},
		{"time", func() { in.Time = when.Add(time.Second) }, func() { in.Time = when }},
	}
	for _, c := range changes {
		// Each change against the key just before it: an undone file
		// change leaves a new mtime, itself an input.
		base := key()
		c.do()
		if key() == base {
			t.Errorf("a change of %s keeps the key", c.name)
		}
		c.undo()
	}
	// BuildKit's COPY keeps a file's time: a new time is a new input.
	base := key()
	must(os.Chtimes(filepath.Join(dir, "Dockerfile"), when, when))
	if key() == base {
		t.Error("a file with another mtime keeps the key")
	}
}
