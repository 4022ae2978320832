package commands_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	ssebench "github.com/42-b3yond-6ug/ssebench"
)

// namesHome writes a home with agent folder "mine" (name My-Agent) and
// dataset Pilot whose manifest pins the base of task RUSTSEC-2019-0009.
func namesHome(t *testing.T, c *cli, agentYAML string) {
	t.Helper()
	writeFiles(t, c.home, map[string]string{
		"agents/mine/agent.yaml": agentYAML,
		"agents/mine/Dockerfile": "FROM ssebench-agent\n",
		"datasets/Pilot/manifest.json": `{"dataset": "Pilot", "version": "pilot-v1", "tasks": [{"id": "RUSTSEC-2019-0009",
  "language": "rust", "project": "p", "repository": "https://example.invalid/p", "base": "base-generic-rust:1.0.0",
  "image": "case/pilot/rustsec-2019-0009", "arch": ["amd64"], "checks": [], "files": {}, "metadata": {}}]}`,
		"datasets/Pilot/RUSTSEC-2019-0009/Dockerfile": "ARG SSEBENCH_REGISTRY\nFROM ${SSEBENCH_REGISTRY}/base-generic-rust:9.9.9\n",
		"datasets/Pilot/Other-2/Dockerfile":           "ARG SSEBENCH_REGISTRY\nFROM ${SSEBENCH_REGISTRY}/base-generic-c:9.9.9\n",
	})
}

// parseNames turns LAYER<TAB>NAME lines into a map, failing on any other
// line.
func parseNames(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		layer, name, ok := strings.Cut(line, "\t")
		if !ok || layer == "" || name == "" || strings.Contains(name, "\t") {
			t.Fatalf("line %q is not LAYER<TAB>NAME", line)
		}
		m[layer] = name
	}
	return m
}

func TestNames(t *testing.T) {
	v := ssebench.Version()
	tests := []struct {
		name      string
		agentYAML string
		args      []string
		want      map[string]string
		wantOrder []string
	}{{
		name:      "every layer, lowercased per layer",
		agentYAML: "name: My-Agent\nversion: V2\n",
		args:      []string{"--task", "RUSTSEC-2019-0009", "--dataset", "Pilot", "--agent", "mine", "--registry", "Example.com:5000/Team/"},
		want: map[string]string{
			// The base comes from the manifest, not the Dockerfile.
			"base":    "Example.com:5000/Team/base-generic-rust:1.0.0",
			"case":    "Example.com:5000/Team/case/pilot/rustsec-2019-0009",
			"tool":    "Example.com:5000/Team/tool/rustsec-2019-0009:" + v,
			"agent":   "example.com:5000/team/agent-my-agent/rustsec-2019-0009:v2",
			"runtime": "Example.com:5000/Team/runtime:" + v,
		},
		wantOrder: []string{"base", "case", "tool", "agent", "runtime"},
	}, {
		name:      "dataset found from the task folder, agent version defaults to VERSION",
		agentYAML: "name: dummy\n",
		args:      []string{"--task", "RUSTSEC-2019-0009", "--agent", "mine", "--registry", "localhost:5000/ssebench"},
		want: map[string]string{
			"base":    "localhost:5000/ssebench/base-generic-rust:1.0.0",
			"case":    "localhost:5000/ssebench/case/pilot/rustsec-2019-0009",
			"tool":    "localhost:5000/ssebench/tool/rustsec-2019-0009:" + v,
			"agent":   "localhost:5000/ssebench/agent-dummy/rustsec-2019-0009:" + strings.ToLower(v),
			"runtime": "localhost:5000/ssebench/runtime:" + v,
		},
		wantOrder: []string{"base", "case", "tool", "agent", "runtime"},
	}, {
		name:      "base from the Dockerfile when the manifest lacks the task",
		agentYAML: "name: dummy\n",
		args:      []string{"--task", "Other-2", "--registry", "localhost:5000/ssebench"},
		want: map[string]string{
			"base":    "localhost:5000/ssebench/base-generic-c:9.9.9",
			"case":    "localhost:5000/ssebench/case/pilot/other-2",
			"tool":    "localhost:5000/ssebench/tool/other-2:" + v,
			"runtime": "localhost:5000/ssebench/runtime:" + v,
		},
		wantOrder: []string{"base", "case", "tool", "runtime"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCLI(t)
			namesHome(t, c, tt.agentYAML)
			out, _ := c.mustRun(t, append([]string{"names"}, tt.args...)...)
			if diff := cmp.Diff(tt.want, parseNames(t, out)); diff != "" {
				t.Errorf("names %v mismatch (-want +got):\n%s", tt.args, diff)
			}
			var order []string
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				order = append(order, strings.SplitN(line, "\t", 2)[0])
			}
			if diff := cmp.Diff(tt.wantOrder, order); diff != "" {
				t.Errorf("names %v layer order mismatch (-want +got):\n%s", tt.args, diff)
			}

			out, _ = c.mustRun(t, append([]string{"names", "--json"}, tt.args...)...)
			var got map[string]string
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("names --json printed no JSON object: %v\n%s", err, out)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("names --json %v mismatch (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestNamesRegistryPrecedence checks where REGISTRY comes from: --registry,
// then SSEBENCH_REGISTRY, then .env in the working directory, then .env in
// the home, then the default; trailing slashes removed.
func TestNamesRegistryPrecedence(t *testing.T) {
	tests := []struct {
		name            string
		flag, env       string
		cwdEnv, homeEnv string
		want            string
	}{
		{name: "flag first", flag: "flag.example/a/", env: "env.example/b", cwdEnv: "cwd.example/c", homeEnv: "home.example/d", want: "flag.example/a"},
		{name: "environment before .env", env: "env.example/b//", cwdEnv: "cwd.example/c", homeEnv: "home.example/d", want: "env.example/b"},
		{name: "blank environment is unset", env: "   ", cwdEnv: "cwd.example/c", homeEnv: "home.example/d", want: "cwd.example/c"},
		{name: "working directory's .env before the home's", cwdEnv: "cwd.example/c/", homeEnv: "home.example/d", want: "cwd.example/c"},
		{name: "home's .env", homeEnv: "home.example/d", want: "home.example/d"},
		{name: "quoted .env value", homeEnv: `"home.example/q"`, want: "home.example/q"},
		{name: "default", want: "ghcr.io/42-b3yond-6ug/ssebench"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCLI(t)
			writeFiles(t, c.home, map[string]string{"datasets/d/t1/Dockerfile": "FROM scratch\n"})
			t.Setenv("SSEBENCH_REGISTRY", tt.env)
			// Another key first: .env files hold more than REGISTRY.
			if tt.cwdEnv != "" {
				writeFiles(t, c.wd, map[string]string{".env": "# settings\nSSE_MODEL_NAME=x\nSSEBENCH_REGISTRY=" + tt.cwdEnv + "\n"})
			}
			if tt.homeEnv != "" {
				writeFiles(t, c.home, map[string]string{".env": "export SSEBENCH_REGISTRY=" + tt.homeEnv + "\n"})
			}
			args := []string{"names", "--task", "t1", "--json"}
			if tt.flag != "" {
				args = append(args, "--registry", tt.flag)
			}
			out, _ := c.mustRun(t, args...)
			var got map[string]string
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatal(err)
			}
			want := tt.want + "/runtime:" + ssebench.Version()
			if got["runtime"] != want {
				t.Errorf("runtime = %q, want %q", got["runtime"], want)
			}
		})
	}
}

func TestNamesBadDotEnv(t *testing.T) {
	c := newCLI(t)
	writeFiles(t, c.wd, map[string]string{".env": "SSEBENCH_REGISTRY\n"})
	_, _, err := c.run(t, "names", "--task", "t1")
	oneLine(t, err)
	if want := filepath.Join(c.wd, ".env") + ":1"; err != nil && !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not point at %s", err, want)
	}
}
