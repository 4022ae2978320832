package preflight

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/registry/naming"
)

// TestTaskNames: a task's images in layer order, its dataset found from
// the task folder, its base from the Dockerfile; the agent's image only
// when an agent is named; a task the home lacks is refused.
func TestTaskNames(t *testing.T) {
	home := t.TempDir()
	for name, body := range map[string]string{
		"agents/mine/agent.yaml":        "name: Mine\nversion: v2\n",
		"datasets/pilot/t-1/Dockerfile": "ARG SSEBENCH_REGISTRY\nFROM ${SSEBENCH_REGISTRY}/base-generic-c:9.9.9\n",
		"datasets/pilot/dataset.yaml":   "version: pilot-v1\n",
		"datasets/pilot/t-2/sse/.keep":  "",
		"datasets/other/dataset.yaml":   "version: other-v1\n",
		"datasets/other/t-9/Dockerfile": "FROM scratch\n",
	} {
		p := filepath.Join(home, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n := naming.Names{Registry: "localhost:5000/ssebench", Version: "1.0"}
	got, err := TaskNames(home, n, "", "t-1", "mine")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, r := range got {
		lines = append(lines, r.Layer+" "+r.Name)
	}
	want := []string{
		"base localhost:5000/ssebench/base-generic-c:9.9.9",
		"case localhost:5000/ssebench/case/pilot/t-1",
		"tool localhost:5000/ssebench/tool/t-1:1.0",
		"agent localhost:5000/ssebench/agent-mine/t-1:v2",
		"runtime localhost:5000/ssebench/runtime:1.0",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("TaskNames =\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if got, err := TaskNames(home, n, "pilot", "t-2", ""); err != nil || len(got) != 3 || got[0].Layer != "case" {
		t.Errorf("TaskNames of a task without a base, no agent = %+v, %v; want case, tool, runtime", got, err)
	}
	if _, err := TaskNames(home, n, "", "nope-1", ""); err == nil {
		t.Error("TaskNames of a task the home lacks: no error")
	}
}
