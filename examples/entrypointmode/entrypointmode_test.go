package entrypointmode_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/examples/entrypointmode"
	"github.com/42-b3yond-6ug/ssebench/sserun/entrypoint"
)

// TestExampleMode checks that importing the package adds `--mode example`
// and that the mode runs.
func TestExampleMode(t *testing.T) {
	if !slices.Contains(entrypoint.Modes(), entrypointmode.Name) {
		t.Fatalf("modes %v lack %q", entrypoint.Modes(), entrypointmode.Name)
	}
	dir := t.TempDir()
	vars := map[string]string{
		contract.EnvResults:     filepath.Join(dir, "results"),
		contract.EnvTaskRoot:    filepath.Join(dir, "ssebench"),
		contract.EnvAdminSocket: filepath.Join(dir, "admin.sock"),
		contract.EnvAgentSocket: filepath.Join(dir, "agent.sock"),
	}
	e, err := entrypoint.New([]string{"--mode", entrypointmode.Name, "--", ""}, func(k string) string { return vars[k] }, os.Environ(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	e.Run(context.Background())
	b, err := os.ReadFile(filepath.Join(vars[contract.EnvResults], entrypointmode.File))
	if err != nil || !strings.Contains(string(b), "the example mode ran") {
		t.Errorf("%s = %q, %v", entrypointmode.File, b, err)
	}
	if _, err := os.Stat(filepath.Join(vars[contract.EnvResults], contract.ResultFile)); err != nil {
		t.Errorf("the example mode did not go on to sandbox mode: %v", err)
	}
}
