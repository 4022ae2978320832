package limitevents

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

func TestLimitEvents(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := Read(dir, ""); got != (Events{}) {
		t.Errorf("no files: %+v, want zeros", got)
	}
	write("memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\noom_group_kill 0\n")
	write("pids.events", "max 0\n")
	before := Read(dir, "")
	if before.OOMKills != 1 || before.PidsRefused != 0 {
		t.Errorf("ReadLimitEvents() = %+v", before)
	}
	write("pids.events", "max 12\n")
	if got := before.Killed(Read(dir, "")); got != contract.KilledPids {
		t.Errorf("Killed() = %q, want %q", got, contract.KilledPids)
	}
	write("memory.events", "oom_kill 2\n")
	if got := before.Killed(Read(dir, "")); got != contract.KilledMemory {
		t.Errorf("Killed() = %q, want %q (memory first)", got, contract.KilledMemory)
	}
	if got := before.Killed(before); got != "" {
		t.Errorf("Killed() with nothing hit = %q", got)
	}
}

// TestLimitEventsV1: cgroup v1's files, as runc mounts them in a
// container.
func TestLimitEventsV1(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"memory/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
		"pids/pids.events":          "max 5\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := Read(dir, ""); got.OOMKills != 2 || got.PidsRefused != 5 {
		t.Errorf("ReadLimitEvents(v1) = %+v, want 2 and 5", got)
	}
}

// TestReadAtPath: the host reads a container's cgroup by its path.
func TestReadAtPath(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "pids", "ssebench", "run-1")
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "pids.events"), []byte("max 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Read(root, "/ssebench/run-1"); got.PidsRefused != 7 {
		t.Errorf("Read(root, path) = %+v, want 7 refused forks", got)
	}
}
