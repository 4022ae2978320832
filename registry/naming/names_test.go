package naming

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	n := NewNames("Localhost:5000/SSE/", "1.0.0")
	tests := []struct {
		name, got, want string
	}{
		{"base", n.Base("go"), "Localhost:5000/SSE/base-generic-go:1.0.0"},
		{"base latest", n.BaseLatest("rust"), "Localhost:5000/SSE/base-generic-rust:latest"},
		{"pinned base", n.Prefixed("base-generic-go:0.9.0"), "Localhost:5000/SSE/base-generic-go:0.9.0"},
		{"case lowercased after the registry", n.Case("Pilot", "GJSON-196-bf4efcb"), "Localhost:5000/SSE/case/pilot/gjson-196-bf4efcb"},
		{"case from a catalog", n.CaseTagged("pilot", "gjson-196-bf4efcb", "pilot-v1"), "Localhost:5000/SSE/case/pilot/gjson-196-bf4efcb:pilot-v1"},
		{"tool keeps the registry as written", n.Tool("GJSON-196-bf4efcb"), "Localhost:5000/SSE/tool/gjson-196-bf4efcb:1.0.0"},
		{"agent lowercases the whole string", n.Agent("Dummy", "GJSON-196", "V2"), "localhost:5000/sse/agent-dummy/gjson-196:v2"},
		{"agent default version", n.Agent("dummy", "x", ""), "localhost:5000/sse/agent-dummy/x:1.0.0"},
		{"runtime", n.Runtime(), "Localhost:5000/SSE/runtime:1.0.0"},
		{"sidecar task", n.SidecarTask("GJSON-196"), "Localhost:5000/SSE/tool-sidecar/gjson-196:1.0.0"},
		{"sidecar agent runtime", n.SidecarAgentRuntime(), "Localhost:5000/SSE/tool-sidecar-agent:1.0.0"},
		{"sidecar agent", n.SidecarAgent("Dummy", ""), "localhost:5000/sse/agent-dummy/sidecar:1.0.0"},
		{"custom tool layer", n.ToolLayer("tool-mcp", "ABC"), "Localhost:5000/SSE/tool-mcp/abc:1.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestSpecExample(t *testing.T) {
	n := NewNames(DefaultRegistry, "1.0.0")
	if got, want := n.Agent("dummy", "gjson-196-bf4efcb", ""), "ghcr.io/42-b3yond-6ug/ssebench/agent-dummy/gjson-196-bf4efcb:1.0.0"; got != want {
		t.Errorf("Agent() = %q, want %q", got, want)
	}
	if got, want := n.Case("pilot", "gjson-196-bf4efcb"), "ghcr.io/42-b3yond-6ug/ssebench/case/pilot/gjson-196-bf4efcb"; got != want {
		t.Errorf("Case() = %q, want %q", got, want)
	}
}

func TestRegistryPrecedence(t *testing.T) {
	cwd, home := t.TempDir(), t.TempDir()
	write := func(dir, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(cwd, "# local settings\nSSEBENCH_REGISTRY = cwd.example/ssebench/ \n")
	write(home, "export SSEBENCH_REGISTRY=\"home.example/ssebench\"\n")
	env := map[string]string{}
	s := &Settings{Getenv: func(k string) string { return env[k] }, Dirs: []string{cwd, home}}

	check := func(name, flag, want string) {
		t.Helper()
		got, err := s.Registry(flag)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != want {
			t.Errorf("%s: Registry(%q) = %q, want %q", name, flag, got, want)
		}
	}
	check("flag wins", "flag.example/x//", "flag.example/x")
	env[RegistryEnv] = "  env.example/ssebench/  "
	check("environment before .env", "", "env.example/ssebench")
	env[RegistryEnv] = "   "
	check("blank environment counts as unset", "", "cwd.example/ssebench")
	write(cwd, "SSEBENCH_REGISTRY=\n")
	check("empty value in cwd falls through to home", "", "home.example/ssebench")
	if err := os.Remove(filepath.Join(home, ".env")); err != nil {
		t.Fatal(err)
	}
	check("default", "", DefaultRegistry)
}

func TestReadDotEnvRejectsGarbage(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(p, []byte("A=1\nnot a pair\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadDotEnv(p)
	if err == nil || !strings.Contains(err.Error(), ":2:") {
		t.Fatalf("ReadDotEnv() error = %v, want it to name line 2", err)
	}
}

// TestIsGrader: the runtime and tool images, under any prefix, are the
// images that grade; case and agent images are not.
func TestIsGrader(t *testing.T) {
	for ref, want := range map[string]bool{
		"localhost:5000/ssebench/runtime:1.0":                true,
		"mirror.lan/x/tool/kvconf-12:1.0":                    true,
		"localhost:5000/ssebench/tool-sidecar/kvconf-12:1.0": true,
		"localhost:5000/ssebench/tool-sidecar-agent:1.0":     true,
		"localhost:5000/ssebench/case/examples/kvconf-12:1":  false,
		"localhost:5000/ssebench/agent-dummy/kvconf-12:1":    false,
		"not a reference": false,
	} {
		if got := IsGrader(ref); got != want {
			t.Errorf("IsGrader(%q) = %t, want %t", ref, got, want)
		}
	}
}
