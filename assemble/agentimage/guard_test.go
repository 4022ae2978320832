package agentimage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// TestHostileAgentConfig: an agent Dockerfile must not take the run away
// from the entrypoint, whether the planner sees it (a literal ENTRYPOINT
// or ENV SSE_*) or only the evaluation does (a variable as the key).
func TestHostileAgentConfig(t *testing.T) {
	tool := toolImage(t)
	for _, tc := range []struct{ name, dockerfile, want string }{
		{"another entrypoint", "FROM ssebench-agent\nENTRYPOINT [\"/bin/sh\"]\n", `ENTRYPOINT /bin/sh`},
		{"shell-form entrypoint", "FROM ssebench-agent\nENTRYPOINT /usr/local/bin/entrypoint\n", `ENTRYPOINT /usr/local/bin/entrypoint`},
		{"empty entrypoint", "FROM ssebench-agent\nENTRYPOINT []\nCMD [\"id\"]\n", `ENTRYPOINT`},
		{"entrypoint with flags", "FROM ssebench-agent\nENTRYPOINT [\"/usr/local/bin/entrypoint\", \"--mode\", \"debug\"]\n", `ENTRYPOINT /usr/local/bin/entrypoint --mode debug`},
		{"runner user", "FROM ssebench-agent\nENV SSE_RUNNER_USER=root\n", "ENV SSE_RUNNER_USER"},
		{"task root", "FROM ssebench-agent\nENV A=1 SSE_TASK_ROOT=/tmp/x\n", "ENV SSE_TASK_ROOT"},
		{"timeout", "FROM ssebench-agent\nENV TIMEOUT=0\n", "ENV TIMEOUT"},
		{"source dir", "FROM ssebench-agent\nENV SOURCE_DIR=/\n", "ENV SOURCE_DIR"},
		{"key from a variable", "FROM ssebench-agent\nARG J=SSE_RESULTS\nENV $J=/tmp\n", "ENV SSE_RESULTS"},
		{"key from a build argument", "FROM ssebench-agent\nARG K\nENV ${K}=x\n", "ENV SSE_ADMIN_SOCKET"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "contract: agent ENTRYPOINT and ENV")
			p, err := NewPlan([]byte(tc.dockerfile), map[string]string{"K": "SSE_ADMIN_SOCKET"})
			if err == nil {
				var img *Image
				img, err = Assemble(context.Background(), tool, p, t.TempDir(), t.TempDir(), WithTempDir(t.TempDir()))
				if err == nil {
					img.Close()
				}
			}
			if !errors.Is(err, ErrBypassesEntrypoint) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error = %v, want one line with %q matching ErrBypassesEntrypoint", err, tc.want)
			}
		})
	}
}

func TestCheckConfig(t *testing.T) {
	tool := v1.Config{Entrypoint: []string{"/usr/local/bin/entrypoint"}, Env: []string{"PATH=/bin"}}
	for _, tc := range []struct {
		name  string
		agent v1.Config
		ok    bool
	}{
		{"same", v1.Config{Entrypoint: tool.Entrypoint, Env: []string{"PATH=/opt/bin:/bin", "AGENT=1"}}, true},
		{"with --", v1.Config{Entrypoint: []string{"/usr/local/bin/entrypoint", "--"}}, true},
		{"none", v1.Config{}, false},
		{"other", v1.Config{Entrypoint: []string{"/usr/local/bin/entrypoint2"}}, false},
		{"SSE_ var", v1.Config{Entrypoint: tool.Entrypoint, Env: []string{"SSE_KEEP_ALIVE=1"}}, false},
	} {
		if err := CheckConfig(tool, tc.agent); (err == nil) != tc.ok {
			t.Errorf("%s: CheckConfig() = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// TestHostileAgentDockerfile: an agent's Dockerfile that leaves its folder
// is refused without being read.
func TestHostileAgentDockerfile(t *testing.T) {
	host := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(host, []byte("FROM ssebench-agent\nCMD [\"SECRET\"]\n"), 0o644)
	for _, tc := range []struct {
		name   string
		target string
	}{
		{"absolute symlink", host},
		{"relative symlink", "../" + filepath.Base(filepath.Dir(host)) + "/secret"},
		{"to /proc", "/proc/self/environ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "hostile agent folders")
			parent := filepath.Dir(filepath.Dir(host))
			dir, err := os.MkdirTemp(parent, "agent-")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			if err := os.Symlink(tc.target, filepath.Join(dir, "Dockerfile")); err != nil {
				t.Fatal(err)
			}
			_, err = LoadPlan(dir, nil)
			if !errors.Is(err, safefile.ErrOutside) || strings.Contains(err.Error(), "SECRET") {
				t.Fatalf("LoadPlan() = %v, want a symlink-out-of-its-folder error", err)
			}
		})
	}
}

func TestHostileAgentDockerfileSize(t *testing.T) {
	hostile.Case(t, "huge configs")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM ssebench-agent\n"+strings.Repeat("# pad\n", 200000)), 0o644)
	if _, err := LoadPlan(dir, nil); err == nil || !strings.Contains(err.Error(), "more than the 1048576 bytes") {
		t.Fatalf("LoadPlan() = %v, want a size error", err)
	}
}
