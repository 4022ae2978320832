package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// TestHostileAgentFolders: an agent folder cannot make ssebench read a host
// file, nor give the image a name outside the grammar.
func TestHostileAgentFolders(t *testing.T) {
	home := t.TempDir()
	host := filepath.Join(t.TempDir(), "shadow")
	os.WriteFile(host, []byte("name: root:$6$SECRET-HASH\n"), 0o644)
	for _, tc := range []struct {
		name, folder string
		setup        func(dir string)
		want         string
	}{
		{"agent.yaml to a host file", "linked", func(dir string) { os.Symlink(host, filepath.Join(dir, "agent.yaml")) }, "symlink out of its folder"},
		{"agent.yaml relative out", "rel", func(dir string) {
			os.Symlink("../../../"+filepath.Base(filepath.Dir(host))+"/shadow", filepath.Join(dir, "agent.yaml"))
		}, "symlink out of its folder"},
		{"agent.yaml a directory", "isdir", func(dir string) { os.Mkdir(filepath.Join(dir, "agent.yaml"), 0o755) }, "not a regular file"},
		{"huge agent.yaml", "huge", func(dir string) {
			os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte("name: x\n"+strings.Repeat("#\n", 40000)), 0o644)
		}, "more than the 65536 bytes"},
		{"name with dot-dot", "dotdot", func(dir string) { os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte("name: ../tool\n"), 0o644) }, `name "../tool" is not a valid name`},
		{"name with a slash", "slash", func(dir string) { os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte("name: x/runtime\n"), 0o644) }, "is not a valid name"},
		{"name is dot-dot", "dd", func(dir string) { os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte("name: ..\n"), 0o644) }, "is not a valid name"},
		{"name with a colon", "colon", func(dir string) { os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte("name: 'a:b'\n"), 0o644) }, "is not a valid name"},
		{"name with a newline", "nl", func(dir string) { os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte("name: \"a\\nb\"\n"), 0o644) }, "is not a valid name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "hostile agent folders")
			dir := filepath.Join(home, "agents", tc.folder)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			tc.setup(dir)
			_, err := Load(home, tc.folder)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("Load() = %v, want an error with %q and without the host file", err, tc.want)
			}
			if strings.Contains(strings.TrimSuffix(err.Error(), "\n"), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
	for _, folder := range []string{"..", "../agents/x", "/etc", "a/b", ""} {
		t.Run("folder "+folder, func(t *testing.T) {
			hostile.Case(t, "hostile agent folders")
			if _, err := Load(home, folder); err == nil {
				t.Errorf("Load(%q) = nil error", folder)
			}
		})
	}
}
