package task

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCaseImageRef(t *testing.T) {
	files := map[string]string{"Dockerfile": strings.Repeat("0", 64)}
	m := &Manifest{Dataset: "pilot", Version: "pilot-v1", Tasks: []ManifestTask{
		{ID: "gjson-196-bf4efcb", Image: "case/pilot/gjson-196-bf4efcb", Files: files},
		{ID: "RUSTSEC-2019-0009", Image: "case/pilot/rustsec-2019-0009"},
	}}
	digest := "sha256:" + strings.Repeat("d", 64)
	lock := func(dataset, version, filesSHA string) *Lock {
		return &Lock{Dataset: dataset, Version: version, Images: map[string]LockedImage{
			"gjson-196-bf4efcb": {Digest: digest, FilesSHA256: filesSHA, Revision: "abc"},
			"RUSTSEC-2019-0009": {Digest: digest, FilesSHA256: DigestFiles(files), Revision: "abc"},
		}}
	}
	const reg = "localhost:5000/ssebench"
	byTag := reg + "/case/pilot/gjson-196-bf4efcb:pilot-v1"
	tests := []struct {
		name     string
		id       string
		lock     *Lock
		want     string
		byDigest bool
	}{
		{"lock matches", "gjson-196-bf4efcb", lock("pilot", "pilot-v1", DigestFiles(files)), reg + "/case/pilot/gjson-196-bf4efcb@" + digest, true},
		{"no lock", "gjson-196-bf4efcb", nil, byTag, false},
		{"lock of another dataset", "gjson-196-bf4efcb", lock("other", "pilot-v1", DigestFiles(files)), byTag, false},
		{"lock of another version", "gjson-196-bf4efcb", lock("pilot", "pilot-v2", DigestFiles(files)), byTag, false},
		{"task files changed since", "gjson-196-bf4efcb", lock("pilot", "pilot-v1", strings.Repeat("e", 64)), byTag, false},
		{"task not in the lock", "gjson-196-bf4efcb", &Lock{Dataset: "pilot", Version: "pilot-v1"}, byTag, false},
		{"entry without files", "RUSTSEC-2019-0009", lock("pilot", "pilot-v1", DigestFiles(files)), reg + "/case/pilot/rustsec-2019-0009:pilot-v1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, byDigest, err := CaseImageRef(reg+"/", m, tt.id, tt.lock)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || byDigest != tt.byDigest {
				t.Errorf("CaseImageRef() = %q, %v; want %q, %v", got, byDigest, tt.want, tt.byDigest)
			}
		})
	}
	if _, _, err := CaseImageRef(reg, m, "nope", nil); err == nil {
		t.Errorf("CaseImageRef(unknown task) succeeded")
	}
}

func TestLockRoundTrip(t *testing.T) {
	dir := t.TempDir()
	l := &Lock{Dataset: "pilot", Version: "pilot-v1", Images: map[string]LockedImage{
		"b": {Digest: "sha256:" + strings.Repeat("1", 64), FilesSHA256: strings.Repeat("2", 64), Revision: "r"},
		"a": {Digest: "sha256:" + strings.Repeat("3", 64), FilesSHA256: strings.Repeat("4", 64), Revision: "r"},
	}}
	if err := WriteLock(dir, l); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, LockFile))
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "dataset": "pilot",
  "version": "pilot-v1",
  "images": {
    "a": {
      "digest": "sha256:3333333333333333333333333333333333333333333333333333333333333333",
      "files_sha256": "4444444444444444444444444444444444444444444444444444444444444444",
      "revision": "r"
    },
    "b": {
      "digest": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
      "files_sha256": "2222222222222222222222222222222222222222222222222222222222222222",
      "revision": "r"
    }
  }
}
`
	if diff := cmp.Diff(want, string(data)); diff != "" {
		t.Errorf("WriteLock() mismatch (-want +got):\n%s", diff)
	}
	back, err := ReadLock(filepath.Join(dir, LockFile))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(l, back); diff != "" {
		t.Errorf("ReadLock() mismatch (-want +got):\n%s", diff)
	}
}

func TestReadLockErrors(t *testing.T) {
	tests := []struct{ name, json, want string }{
		{"unknown field", `{"dataset":"d","version":"v","images":{},"x":1}`, `not a valid images lock: json: unknown field "x"`},
		{"bad digest", `{"dataset":"d","version":"v","images":{"a":{"digest":"sha256:12","files_sha256":"` + strings.Repeat("0", 64) + `","revision":""}}}`, `images[a].digest: "sha256:12" is not a sha256 digest`},
		{"bad files digest", `{"dataset":"d","version":"v","images":{"a":{"digest":"sha256:` + strings.Repeat("0", 64) + `","files_sha256":"x","revision":""}}}`, `images[a].files_sha256: "x" is not a SHA-256`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), LockFile)
			if err := os.WriteFile(path, []byte(tt.json), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadLock(path); err == nil || err.Error() != path+": "+tt.want {
				t.Errorf("ReadLock() = %v, want %q", err, path+": "+tt.want)
			}
		})
	}
	if _, err := ReadLock(filepath.Join(t.TempDir(), LockFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadLock(missing) = %v, want fs.ErrNotExist", err)
	}
}
