package store

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// TestUploadsAreResumedOnlyFromTheDead: the record of an unfinished upload
// hands it to a later push only when no live push is sending it, so that
// concurrent pushes from one store never write one upload at two offsets.
func TestUploadsAreResumedOnlyFromTheDead(t *testing.T) {
	s := openStore(t)
	repo, err := name.NewRepository("localhost:5000/ssebench/tool/x")
	if err != nil {
		t.Fatal(err)
	}
	d := v1.Hash{Algorithm: "sha256", Hex: "ab00000000000000000000000000000000000000000000000000000000000000"}
	h := s.Holders("localhost:5000")

	// This process is sending it: nobody may take it over.
	h.SetUpload(repo, d, "http://localhost:5000/v2/x/blobs/uploads/1")
	if got := s.Holders("localhost:5000").Upload(repo, d); got != "" {
		t.Errorf("an upload this process is sending was handed out: %q", got)
	}
	// It stopped without finishing: a later push of this process resumes.
	h.Release(repo, d)
	if got := s.Holders("localhost:5000").Upload(repo, d); got == "" {
		t.Error("an upload released by this process is not resumable")
	}

	write := func(pid int) {
		t.Helper()
		rec := holderData{Registry: "localhost:5000", Blobs: map[string][]string{}, Uploads: map[string]upload{
			"ssebench/tool/x@" + d.String(): {Location: "http://localhost:5000/v2/x/blobs/uploads/2", PID: pid},
		}}
		b, _ := json.Marshal(rec)
		if err := os.WriteFile(filepath.Join(s.Dir(), mountsDir, recordFile("localhost:5000")), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Another live process (init) owns it: not handed out.
	write(1)
	if got := s.Holders("localhost:5000").Upload(repo, d); got != "" {
		t.Errorf("an upload of a live process was handed out: %q", got)
	}
	// Its owner was killed: resumable.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	write(cmd.Process.Pid)
	if got := s.Holders("localhost:5000").Upload(repo, d); got == "" {
		t.Error("the upload of a dead process is not resumable")
	}
}
