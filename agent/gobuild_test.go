package agent

import (
	"context"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// TestGoBuild: go_build compiles the folder's package into the named file,
// static for the platform asked, and a second build leaves an unchanged
// file alone.
func TestGoBuild(t *testing.T) {
	home := t.TempDir()
	writeAgent(t, home, "tiny", "name: tiny\ngo_build:\n  tiny-bin: ./cmd\n")
	dir := filepath.Join(home, "agents", "tiny")
	os.MkdirAll(filepath.Join(dir, "cmd"), 0o755)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/tiny\n\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "cmd", "main.go"), []byte("package main\n\nfunc main() { println(\"tiny\") }\n"), 0o644)
	a, err := Load(home, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.GoBuild) != 1 || a.GoBuild[0] != (GoProgram{Output: "tiny-bin", Package: "cmd"}) {
		t.Fatalf("GoBuild = %+v", a.GoBuild)
	}
	ctx := context.Background()
	p := v1.Platform{OS: "linux", Architecture: "arm64"}
	if err := a.Build(ctx, p); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "tiny-bin")
	f, err := elf.Open(out)
	if err != nil {
		t.Fatalf("the output is not an ELF binary: %v", err)
	}
	if f.Machine != elf.EM_AARCH64 {
		t.Errorf("machine = %v, want arm64", f.Machine)
	}
	f.Close()
	old := time.Unix(1_000_000_000, 0)
	os.Chtimes(out, old, old)
	if err := a.Build(ctx, p); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(out); !fi.ModTime().Equal(old) || fi.Mode().Perm() != 0o755 {
		t.Errorf("second build: mtime %v mode %v, want the unchanged file (0755)", fi.ModTime(), fi.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 4 {
		t.Errorf("the folder holds %d entries after two builds, want 4 (no leftovers)", len(ents))
	}
	// A compile error names the agent and the file.
	os.WriteFile(filepath.Join(dir, "cmd", "main.go"), []byte("package main\n\nfunc main() { x }\n"), 0o644)
	if err := a.Build(ctx, p); err == nil || !strings.Contains(err.Error(), "tiny-bin of agent tiny") {
		t.Errorf("Build() of broken code = %v", err)
	}
}

func TestGoBuildRefused(t *testing.T) {
	for _, y := range []string{
		"name: x\ngo_build: sse-loop\n",
		"name: x\ngo_build:\n  ../out: .\n",
		"name: x\ngo_build:\n  a/b: .\n",
		"name: x\ngo_build:\n  .hidden: .\n",
		"name: x\ngo_build:\n  out: ../../elsewhere\n",
		"name: x\ngo_build:\n  out: /abs\n",
		"name: x\ngo_build:\n  out: [a]\n",
	} {
		home := t.TempDir()
		writeAgent(t, home, "x", y)
		if _, err := Load(home, "x"); err == nil || !strings.Contains(err.Error(), "go_build") {
			t.Errorf("Load(%q) = %v, want a go_build error", y, err)
		}
	}
}

// TestGoBuildStaysInside: a package directory that is a symlink out of the
// folder is refused before anything is compiled.
func TestGoBuildStaysInside(t *testing.T) {
	home := t.TempDir()
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	writeAgent(t, home, "esc", "name: esc\ngo_build:\n  bin: ./pkg\n")
	dir := filepath.Join(home, "agents", "esc")
	os.Symlink(outside, filepath.Join(dir, "pkg"))
	a, err := Load(home, "esc")
	if err != nil {
		t.Fatal(err)
	}
	err = a.Build(context.Background(), v1.Platform{OS: "linux", Architecture: "amd64"})
	if err == nil || !strings.Contains(err.Error(), "leads out of the agent folder") {
		t.Errorf("Build() with a package symlinked out = %v, want a refusal", err)
	}
}
