package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeAgent(t *testing.T, home, folder, yaml string) {
	t.Helper()
	dir := filepath.Join(home, "agents", folder)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	home := t.TempDir()
	writeAgent(t, home, "dummy", "name: '  Dummy '\n")
	writeAgent(t, home, "claude-code", "name: claude\nversion: 2.0.1\n")
	writeAgent(t, home, "bad", "name: x\nimage: y\n")
	writeAgent(t, home, "noname", "version: 1\n")
	writeAgent(t, home, "oc", "name: oc\nopencode: true\n")
	writeAgent(t, home, "ocbad", "name: oc\nopencode: maybe\n")
	if err := os.MkdirAll(filepath.Join(home, "agents", "notanagent"), 0o755); err != nil {
		t.Fatal(err)
	}

	a, err := Load(home, "dummy")
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "Dummy" || a.Version != "" {
		t.Errorf("Load(dummy) = %+v, want name Dummy and no version", a)
	}
	a, err = Load(home, "claude-code")
	if err != nil || a.Name != "claude" || a.Version != "2.0.1" {
		t.Errorf("Load(claude-code) = %+v, %v", a, err)
	}

	if a, err := Load(home, "oc"); err != nil || !a.OpenCode {
		t.Errorf("Load(oc) = %+v, %v; want opencode true", a, err)
	}
	if a, err := Load(home, "dummy"); err != nil || a.OpenCode {
		t.Errorf("Load(dummy) = %+v, %v; want opencode false when unsaid", a, err)
	}

	tests := []struct{ folder, want string }{
		{"ocbad", `ocbad/agent.yaml: line 2: key "opencode" must be true or false`},
		{"bad", `bad/agent.yaml: line 2: unknown key "image" (allowed: name, version, go_build, opencode)`},
		{"noname", `noname/agent.yaml: key "name" is required`},
		{"dumy", `unknown agent "dumy": did you mean "dummy"? agents: bad, claude-code, dummy, noname, oc, ocbad`},
		{"notanagent", `did you mean`},
		{"../x", `not a folder name`},
	}
	for _, tt := range tests {
		t.Run(tt.folder, func(t *testing.T) {
			_, err := Load(home, tt.folder)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load(%q) error = %v, want it to contain %q", tt.folder, err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}
