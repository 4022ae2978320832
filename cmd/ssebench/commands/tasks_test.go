package commands_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/release"
	"github.com/42-b3yond-6ug/ssebench/task"
)

const (
	kvconf = "kvconf-12-afb9ee1"
	pinned = "sha256:7777777777777777777777777777777777777777777777777777777777777777"
)

// TestTasksList lists a folder catalog whose lock pins one task: that one
// by digest, the others by tag with a warning each.
func TestTasksList(t *testing.T) {
	c := newCLI(t)
	dir := exampleDataset(t, c)
	m, err := task.ReadManifest(filepath.Join(dir, task.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	lock := &task.Lock{Dataset: m.Dataset, Version: m.Version, Images: map[string]task.LockedImage{
		kvconf: {Digest: pinned, FilesSHA256: task.DigestFiles(m.Task(kvconf).Files), Revision: "0123abc"},
	}}
	if err := task.WriteLock(dir, lock); err != nil {
		t.Fatal(err)
	}
	reg := "registry.invalid/ssebench"
	out, stderr := c.mustRun(t, "--registry", reg, "tasks", "list", "--catalog", dir)
	for _, want := range []string{
		reg + "/case/examples/" + kvconf + "@" + pinned,
		reg + "/case/examples/libqs-3-b2a739e:examples-v1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tasks list printed\n%s\nwant %s", out, want)
		}
	}
	if !strings.Contains(stderr, "does not pin libqs-3-b2a739e") {
		t.Errorf("tasks list warned %q, want the unpinned task named", stderr)
	}

	// SSEBENCH_CATALOG, JSON, and a lock of another version: a warning,
	// every task by tag.
	lock.Version = "examples-v0"
	if err := task.WriteLock(dir, lock); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSEBENCH_CATALOG", dir)
	out, stderr = c.mustRun(t, "--registry", reg, "tasks", "list", "--json")
	var entries []struct {
		ID     string `json:"id"`
		Image  string `json:"image"`
		Pinned bool   `json:"pinned"`
	}
	if err := json.Unmarshal([]byte(out), &entries); err != nil {
		t.Fatalf("tasks list --json: %v\n%s", err, out)
	}
	if len(entries) != 3 || entries[0].ID != kvconf || entries[0].Pinned || !strings.HasSuffix(entries[0].Image, ":examples-v1") {
		t.Errorf("tasks list --json = %+v, want 3 tasks, %s by tag", entries, kvconf)
	}
	if !strings.Contains(stderr, "ignoring the stale images lock") {
		t.Errorf("tasks list warned %q, want the stale lock named", stderr)
	}
}

// TestDatasetLock writes the lock from what verified and checks it.
func TestDatasetLock(t *testing.T) {
	c := newCLI(t)
	dir := exampleDataset(t, c)
	files, err := task.FilesDigest(filepath.Join(dir, kvconf))
	if err != nil {
		t.Fatal(err)
	}
	rec := &release.Record{Dataset: "examples", Version: "examples-v1", Tasks: map[string]release.VerifiedTask{
		kvconf: {Image: "x/case/examples/" + kvconf, Digest: pinned, FilesSHA256: files},
	}}
	c.mustRun(t, "store", "ls") // makes the store
	if err := rec.Write(release.RecordFile(c.store, "examples", "examples-v1")); err != nil {
		t.Fatal(err)
	}
	out, stderr := c.mustRun(t, "dataset", "lock", dir, "--revision", "0123abcd")
	if !strings.Contains(out, "(1 of 3 tasks pinned)") || !strings.Contains(stderr, "not locked: libqs-3-b2a739e: not verified") {
		t.Errorf("dataset lock printed %q %q", out, stderr)
	}
	l, err := task.ReadLock(filepath.Join(dir, task.LockFile))
	if err != nil || l.Images[kvconf] != (task.LockedImage{Digest: pinned, FilesSHA256: files, Revision: "0123abcd"}) {
		t.Fatalf("images.lock.json = %+v, %v", l, err)
	}
	// The task folder changes: the lock is stale.
	writeFiles(t, dir, map[string]string{kvconf + "/src/NOTES": "x\n"})
	out, stderr, err = c.run(t, "dataset", "lock", "--check", dir)
	if err == nil || !strings.Contains(out, "changed since it verified") || !strings.Contains(out, "images["+kvconf+"]: pinned, but not verified") {
		t.Errorf("dataset lock --check of a changed folder = %v:\n%s", err, out)
	}
	// Its last line names the task that changed and the commands that
	// refresh the lock.
	lockFile := filepath.Join(dir, task.LockFile)
	if want := lockFile + " is out of date (4 problems): " + kvconf + " changed since verified: run `ssebench dataset verify " + dir + " --tasks " + kvconf + "`, then `ssebench dataset lock " + dir + "`\n"; stderr != want {
		t.Errorf("dataset lock --check of a changed folder printed\n%q, want\n%q", stderr, want)
	}
	os.Remove(filepath.Join(dir, kvconf, "src", "NOTES"))

	// It verifies again as another image: only the lock is behind.
	rec.Tasks[kvconf] = release.VerifiedTask{Image: "x/case/examples/" + kvconf, Digest: "sha256:" + strings.Repeat("8", 64), FilesSHA256: files}
	if err := rec.Write(release.RecordFile(c.store, "examples", "examples-v1")); err != nil {
		t.Fatal(err)
	}
	_, stderr, _ = c.run(t, "dataset", "lock", "--check", dir)
	if want := lockFile + " is out of date (3 problems): its entries of " + kvconf + " are behind what verified: refresh it with `ssebench dataset lock " + dir + "`\n"; stderr != want {
		t.Errorf("dataset lock --check of a lock behind the record printed\n%q, want\n%q", stderr, want)
	}
}
