package casebuild

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/42-b3yond-6ug/ssebench/naming"
)

func TestBaseNames(t *testing.T) {
	home := t.TempDir()
	for _, lang := range []string{"go", "rust"} {
		d := filepath.Join(home, "images", "base-images", "generic-"+lang)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "Dockerfile"), []byte("FROM x\n"), 0o644)
	}
	os.MkdirAll(filepath.Join(home, "datasets", "pilot"), 0o755)
	manifest := `{"dataset":"pilot","version":"pilot-v1","tasks":[
 {"id":"a","base":"base-generic-go:0.9.0","arch":["amd64"]},
 {"id":"b","base":"base-generic-go:1.0.0","arch":["amd64"]},
 {"id":"c","base":"base-generic-rust:1.0.0","arch":["amd64"]},
 {"id":"d","base":"base-generic-go@sha256:0000000000000000000000000000000000000000000000000000000000000000","arch":["amd64"]}]}`
	os.WriteFile(filepath.Join(home, "datasets", "pilot", "manifest.json"), []byte(manifest), 0o644)

	b := &Builder{Names: naming.NewNames("localhost:5000/sse", "1.0.0")}
	got, err := b.BaseNames(home, "go")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"localhost:5000/sse/base-generic-go:1.0.0",
		"localhost:5000/sse/base-generic-go:latest",
		"localhost:5000/sse/base-generic-go:0.9.0",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("BaseNames(go) (-want +got):\n%s", d)
	}
	langs, err := BaseLanguages(home)
	if err != nil || strings.Join(langs, ",") != "go,rust" {
		t.Errorf("BaseLanguages() = %v, %v; want go, rust", langs, err)
	}
}

func TestBuildBaseNeedsOSImage(t *testing.T) {
	b := &Builder{Names: naming.NewNames("localhost:5000/sse", "1.0.0")}
	_, err := b.BuildBase(t.Context(), t.TempDir(), "go", "", "")
	if err == nil || !strings.Contains(err.Error(), "--os-image") {
		t.Errorf("BuildBase without an OS image: %v, want a hint about --os-image", err)
	}
}
