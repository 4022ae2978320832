package buildkit

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

// TestToolsModuleSharesVersions keeps tools/buildkit, the module that
// scripts/setup.sh compiles buildkitd from, on the versions ssebench itself
// uses for every module both need. Go's build cache is keyed by content, so
// with equal versions the two hundred packages they share (grpc, protobuf,
// containerd, otel, the BuildKit client…) compile once on a fresh machine,
// not once for each; one differing golang.org/x/sys is enough to recompile
// nearly all of them.
func TestToolsModuleSharesVersions(t *testing.T) {
	main := readModFile(t, filepath.Join(testenv.ModuleRoot(), "go.mod"))
	tools := readModFile(t, filepath.Join(testenv.ModuleRoot(), "tools", "buildkit", "go.mod"))
	want := map[string]string{}
	for _, r := range main.Require {
		want[r.Mod.Path] = r.Mod.Version
	}
	shared := 0
	for _, r := range tools.Require {
		v, ok := want[r.Mod.Path]
		if !ok {
			continue
		}
		shared++
		if v != r.Mod.Version {
			t.Errorf("tools/buildkit requires %s %s but ssebench requires %s: run `go get %s@%s && go mod tidy` in tools/buildkit", r.Mod.Path, r.Mod.Version, v, r.Mod.Path, v)
		}
	}
	if shared < 50 {
		t.Fatalf("tools/buildkit and ssebench share only %d modules; expected the BuildKit client's dependencies", shared)
	}
}

func readModFile(t *testing.T, path string) *modfile.File {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax(path, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
