package release_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/release"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// TestLockUpdate: `dataset lock` writes what verified and says how much
// it pins; --check says ok, or each difference and the one command that
// brings the lock up to date: verify again a task whose folder changed,
// lock again when only the lock is behind.
func TestLockUpdate(t *testing.T) {
	ctx := context.Background()
	ds := dataset(t)
	storeDir := t.TempDir()
	files, _ := ds.Tasks[0].FilesDigest()
	rec := &release.Record{Dataset: "examples", Version: "examples-v1", Tasks: map[string]release.VerifiedTask{
		id: {Digest: "sha256:" + strings.Repeat("4", 64), FilesSHA256: files},
	}}
	writeRecord := func() {
		t.Helper()
		if err := rec.Write(release.RecordFile(storeDir, "examples", "examples-v1")); err != nil {
			t.Fatal(err)
		}
	}
	writeRecord()
	lockFile := filepath.Join(ds.Dir, task.LockFile)
	broken := map[string]task.Problems{"zz-9-0000000": nil}
	u, err := release.NewLockUpdate(ctx, ds.Dir, ds, broken, storeDir, "0123abcd", false)
	if err != nil {
		t.Fatal(err)
	}
	if want := "wrote " + lockFile + " (1 of 2 tasks pinned)"; u.String() != want {
		t.Errorf("String() = %q, want %q", u, want)
	}
	if len(u.Unverified) != 1 || !strings.HasPrefix(u.Unverified[0], "zz-9-0000000: the task folder has problems") {
		t.Errorf("Unverified = %q, want the task with problems", u.Unverified)
	}
	if err := u.Write(); err != nil {
		t.Fatal(err)
	}
	check := func() (string, string) {
		t.Helper()
		u, err := release.NewLockUpdate(ctx, ds.Dir, ds, nil, storeDir, "", true)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		line := u.WriteCheck(&b)
		return b.String(), line
	}
	if out, line := check(); out != "ok "+lockFile+"\n" || line != "" {
		t.Errorf("WriteCheck of the lock just written = %q, %q; want ok", out, line)
	}

	// Verified again as another image: only the lock is behind.
	rec.Tasks[id] = release.VerifiedTask{Digest: "sha256:" + strings.Repeat("8", 64), FilesSHA256: files}
	writeRecord()
	if _, line := check(); line != lockFile+" is out of date (1 problem): its entries of "+id+" are behind what verified: refresh it with `ssebench dataset lock "+ds.Dir+"`" {
		t.Errorf("WriteCheck of a lock behind the record = %q", line)
	}

	// The folder changes: verify it again.
	if err := os.WriteFile(filepath.Join(ds.Dir, id, "src", "NOTES"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, line := check()
	if !strings.Contains(out, lockFile+": images["+id+"]: pinned, but not verified") {
		t.Errorf("WriteCheck of a changed folder wrote %q", out)
	}
	if want := " changed since verified: run `ssebench dataset verify " + ds.Dir + " --tasks " + id + "`, then `ssebench dataset lock " + ds.Dir + "`"; !strings.HasSuffix(line, want) {
		t.Errorf("WriteCheck of a changed folder = %q, want it to end %q", line, want)
	}

	// A lock that does not read: refused, unless checked.
	if err := os.WriteFile(lockFile, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := release.NewLockUpdate(ctx, ds.Dir, ds, nil, storeDir, "0123abcd", false); err == nil || !strings.Contains(err.Error(), "(delete it to write it again)") {
		t.Errorf("NewLockUpdate over a broken lock = %v, want a refusal", err)
	}
	if _, line := check(); !strings.Contains(line, "is out of date (1 problem)") {
		t.Errorf("WriteCheck of a broken lock = %q", line)
	}
	if _, err := release.NewLockUpdate(ctx, ds.Dir, ds, nil, storeDir, "HEAD", true); err == nil || !strings.Contains(err.Error(), "is not a commit id") {
		t.Errorf("NewLockUpdate --revision HEAD = %v, want a refusal", err)
	}
}
