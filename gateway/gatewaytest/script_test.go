package gatewaytest_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/gateway/gatewaytest"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
)

// TestLoadScriptExamples: the example scripts load, their tool calls'
// arguments become JSON objects.
func TestLoadScriptExamples(t *testing.T) {
	dir := filepath.Join(testenv.ModuleRoot(), "examples", "models")
	loop, err := gatewaytest.LoadScript(filepath.Join(dir, "loop-kvconf.script.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(loop) != 2 || len(loop[0].ToolCalls) != 3 || loop[0].Match != "Find the bug" || loop[1].Match != "exit 0\n1\n" {
		t.Fatalf("loop script = %+v", loop)
	}
	if a := loop[0].ToolCalls[1].Arguments; !strings.HasPrefix(a, `{"new_text":"\t\tcase 'x':\n\t\t\tif i+2 >= len(s) {`) {
		t.Errorf("edit_file arguments = %s", a)
	}
	if a := loop[0].ToolCalls[0].Arguments; a != "{}" {
		t.Errorf("task_info arguments = %s, want {}", a)
	}
	if _, err := gatewaytest.LoadScript(filepath.Join(dir, "codex.script.yaml")); err != nil {
		t.Fatal(err)
	}
}

// TestParseScriptRefuses: what a script may not say is refused in one
// line that names the reply.
func TestParseScriptRefuses(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"empty", "", "empty"},
		{"no replies", "replies: []\n", "no replies"},
		{"unknown key", "replies:\n  - txt: hi\n", `unknown key "txt"`},
		{"bad arguments", "replies:\n  - tool_calls:\n      - name: x\n        arguments: \"not json\"\n", "reply 1, tool call 1 (x): arguments"},
		{"list arguments", "replies:\n  - tool_calls:\n      - name: x\n        arguments: [1]\n", "want a mapping"},
		{"no name", "replies:\n  - tool_calls:\n      - arguments: {}\n", "name is required"},
		{"bad delay", "replies:\n  - delay: soon\n", "not a duration"},
		{"bad status", "replies:\n  - status: 9000\n", "not an HTTP status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gatewaytest.ParseScript([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("ParseScript() = %v, want one line with %q", err, tc.want)
			}
		})
	}
}
