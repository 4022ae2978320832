package contract

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWriteRunResult(t *testing.T) {
	dir := t.TempDir()
	r := &RunResult{
		TaskID: "t-1", Mode: "sandbox", Command: "echo hi", AgentExit: 124, TimedOut: true,
		PatchBytes: 10, PatchSHA256: "ab", Difficulty: 3, ToolCalls: 2,
		Build: &Check{OK: true, DurationMS: 5, Log: "build.log"},
		Test:  &Check{Exit: -1, Skipped: "the build failed", Log: "test.log"},
	}
	if err := WriteRunResult(dir, r); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, ResultFile))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"task_id": "t-1", "mode": "sandbox", "command": "echo hi", "agent_exit": 124.0, "timed_out": true,
		"agent_duration_ms": 0.0, "patch_bytes": 10.0, "patch_sha256": "ab", "passed": false,
		"difficulty": 3.0, "tool_calls": 2.0,
		"build": map[string]any{"ok": true, "exit": 0.0, "duration_ms": 5.0, "log": "build.log"},
		"test":  map[string]any{"ok": false, "exit": -1.0, "duration_ms": 0.0, "skipped": "the build failed", "log": "test.log"},
		"poc":   nil,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("result.json (-want +got):\n%s", diff)
	}
	back, err := ReadRunResult(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, back); diff != "" {
		t.Errorf("ReadRunResult() (-want +got):\n%s", diff)
	}
	if fi, err := os.Stat(filepath.Join(dir, ResultFile)); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("result.json: %v, %v; want mode 0644", fi.Mode(), err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("results dir has %d entries, want only result.json", len(ents))
	}
}
