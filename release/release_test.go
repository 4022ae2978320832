package release_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/release"
	"github.com/42-b3yond-6ug/ssebench/results"
	"github.com/42-b3yond-6ug/ssebench/task"
	"github.com/42-b3yond-6ug/ssebench/task/catalog"
)

const id = "kvconf-12-afb9ee1"

// runDir writes a run folder as the pipeline leaves it.
func runDir(t *testing.T, agent string, r *contract.RunResult, logs map[string]string) *results.Run {
	t.Helper()
	dir := t.TempDir()
	s := results.Summary{RunID: "r", Task: id, Agent: agent, Status: "ok"}
	b, _ := json.Marshal(s)
	if err := os.WriteFile(filepath.Join(dir, results.SummaryFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := contract.WriteRunResult(dir, r); err != nil {
		t.Fatal(err)
	}
	for n, c := range logs {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func ok() *contract.Check  { return &contract.Check{OK: true} }
func bad() *contract.Check { return &contract.Check{Exit: 1, Log: "x.log"} }

func failed(fs []release.Finding) []string {
	var out []string
	for _, f := range fs {
		if !f.OK {
			out = append(out, f.Agent+" "+f.Check)
		}
	}
	return out
}

func TestJudge(t *testing.T) {
	checks := []string{"build", "poc", "function_test", "intent_test"}
	pocs := []string{"pocs/a.conf", "pocs/b.conf"}
	tests := []struct {
		name string
		ref  *contract.RunResult
		logs map[string]string
		// dummy, when set, is judged instead of ref.
		dummy *contract.RunResult
		want  []string
	}{
		{name: "reference passes", ref: &contract.RunResult{Build: ok(), Test: ok(), PoC: ok(), IntentTest: ok(), Passed: true}},
		{name: "patch does not apply", ref: &contract.RunResult{AgentExit: 1, Build: ok(), Test: ok(), PoC: bad(), IntentTest: bad()},
			logs: map[string]string{"agent.log": "Hunk #1 FAILED at 31.\n"},
			want: []string{"reference apply", "reference poc", "reference intent_test"}},
		{name: "a listed check the grade lacks", ref: &contract.RunResult{Build: ok(), Test: ok(), PoC: ok(), Passed: true},
			want: []string{"reference intent_test"}},
		{name: "not graded", ref: &contract.RunResult{GradeError: "no daemon"}, want: []string{"reference grade"}},
		{name: "dummy as it should be", dummy: &contract.RunResult{Build: ok(), Test: ok(), PoC: &contract.Check{Exit: 2, Log: "poc.log"}, IntentTest: bad()},
			logs: map[string]string{"poc.log": "=== pocs/a.conf: exit 2\npanic\n=== pocs/b.conf: exit 2\n"}},
		{name: "one PoC no longer triggers", dummy: &contract.RunResult{Build: ok(), Test: ok(), PoC: &contract.Check{Exit: 2, Log: "poc.log"}},
			logs: map[string]string{"poc.log": "=== pocs/a.conf: exit 0\n=== pocs/b.conf: exit 2\n"},
			want: []string{"dummy poc pocs/a.conf"}},
		{name: "no PoC triggers", dummy: &contract.RunResult{Build: ok(), Test: ok(), PoC: ok()},
			logs: map[string]string{"poc.log": "=== pocs/a.conf: exit 0\n=== pocs/b.conf: exit 0\n"},
			want: []string{"dummy poc pocs/a.conf", "dummy poc pocs/b.conf"}},
		{name: "buggy tree does not build", dummy: &contract.RunResult{Build: bad(), Test: &contract.Check{Exit: -1, Skipped: "the build failed"}, PoC: &contract.Check{Exit: -1, Skipped: "the build failed"}},
			want: []string{"dummy build", "dummy function_test", "dummy poc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fs []release.Finding
			if tt.dummy != nil {
				fs = release.JudgeDummy(runDir(t, "dummy", tt.dummy, tt.logs), pocs)
			} else {
				fs = release.JudgeReference(runDir(t, "reference", tt.ref, tt.logs), checks)
			}
			if diff := cmp.Diff(tt.want, failed(fs)); diff != "" {
				t.Errorf("failed findings (-want +got):\n%s\n%+v", diff, fs)
			}
		})
	}
}

// TestJudgeReferenceCheckNames checks that a reference run's checks are
// found by the manifest's names and result.json's alike, and that a name
// the grader does not know is said to be one, not a missing check.
func TestJudgeReferenceCheckNames(t *testing.T) {
	run := runDir(t, "reference", &contract.RunResult{Build: ok(), Test: ok(), Passed: true}, nil)
	fs := release.JudgeReference(run, []string{"build", "function_test", "test", "intent_test", "fuzz"})
	var got []string
	for _, f := range fs {
		got = append(got, fmt.Sprintf("%s %v %s", f.Check, f.OK, f.Why))
	}
	want := []string{
		"apply true ",
		"build true ",
		"function_test true ",
		"test true ",
		"intent_test false the manifest lists it, but the grade has no such check",
		"fuzz false the manifest lists a check the grader does not know",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JudgeReference findings (-want +got):\n%s", diff)
	}
}

// dataset copies the example task into a dataset folder of its own, with
// its manifest.
func dataset(t *testing.T) *task.Dataset {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "examples")
	if err := os.CopyFS(filepath.Join(dir, id), os.DirFS(filepath.Join(testenv.ModuleRoot(), "datasets", "examples", id))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, task.DatasetFile), []byte("version: examples-v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := task.LoadDataset(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := ds.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if err := task.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestPublish publishes a verified image to an in-memory registry: tags,
// lock, catalog; and refuses what publishing must not do.
func TestPublish(t *testing.T) {
	ctx := context.Background()
	ds := dataset(t)
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	prefix := strings.TrimPrefix(srv.URL, "http://") + "/pub"
	st, err := store.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	img, _ := random.Image(256, 2)
	d, _ := img.Digest()
	local := "local.invalid/ssebench/case/examples/" + id
	ref, _ := name.ParseReference(local, name.WeakValidation)
	if err := st.Write(ctx, ref, img); err != nil {
		t.Fatal(err)
	}
	files, _ := ds.Tasks[0].FilesDigest()
	rec := &release.Record{Dataset: "examples", Version: "examples-v1", Tasks: map[string]release.VerifiedTask{
		id: {Image: local, Digest: d.String(), FilesSHA256: files},
	}}
	rev := "0123456789abcdef0123456789abcdef01234567"
	o := release.PublishOptions{Registry: prefix, Revision: rev, Store: st}

	lock, pub, err := release.Publish(ctx, ds.Dir, rec, o)
	if err != nil {
		t.Fatal(err)
	}
	caseRepo := prefix + "/case/examples/" + id
	if len(pub) != 1 || pub[0].Immutable != caseRepo+":examples-v1-0123456" || !pub[0].Pushed {
		t.Errorf("published %+v", pub)
	}
	for _, tag := range []string{":examples-v1", ":examples-v1-0123456"} {
		r, _ := name.ParseReference(caseRepo+tag, name.Insecure)
		if got, err := ggremote.Head(r); err != nil || got.Digest != d {
			t.Errorf("%s = %v (%v), want %s", r, got, err, d)
		}
	}
	want := task.LockedImage{Digest: d.String(), FilesSHA256: files, Revision: rev}
	if lock.Images[id] != want {
		t.Errorf("lock = %+v, want %+v", lock.Images[id], want)
	}
	onDisk, err := task.ReadLock(filepath.Join(ds.Dir, task.LockFile))
	if err != nil || onDisk.Images[id] != want {
		t.Errorf("images.lock.json = %+v (%v)", onDisk, err)
	}
	c, err := catalog.Open(ctx, "oci://"+release.CatalogRef(prefix, "examples", "examples-v1"))
	if err != nil {
		t.Fatal(err)
	}
	if got, pinned, _, _ := c.CaseRef("unused.invalid", id); !pinned || got != caseRepo+"@"+d.String() {
		t.Errorf("the catalog's case image = %s (pinned %v), want %s@%s", got, pinned, caseRepo, d)
	}

	// Again: nothing to push, the same lock.
	if _, pub, err := release.Publish(ctx, ds.Dir, rec, o); err != nil || pub[0].Pushed {
		t.Errorf("publishing again = %+v, %v; want nothing pushed", pub, err)
	}

	// Another image under a revision's tag: refused, nothing moves.
	other, _ := random.Image(256, 1)
	r2, _ := name.ParseReference(caseRepo+":examples-v1-fedcba9", name.Insecure)
	if err := ggremote.Write(r2, other); err != nil {
		t.Fatal(err)
	}
	o2 := o
	o2.Revision = "fedcba9876"
	if _, _, err := release.Publish(ctx, ds.Dir, rec, o2); err == nil || !strings.Contains(err.Error(), "already names") {
		t.Errorf("Publish over another image's tag = %v, want a refusal", err)
	}

	// The store's image is not the one that verified: refused.
	stale := *rec
	stale.Tasks = map[string]release.VerifiedTask{id: {Image: local, Digest: "sha256:" + strings.Repeat("3", 64), FilesSHA256: files}}
	if _, _, err := release.Publish(ctx, ds.Dir, &stale, o); err == nil || !strings.Contains(err.Error(), "verified: verify it again") {
		t.Errorf("Publish of an image other than the verified one = %v, want a refusal", err)
	}

	// A folder changed since it verified: refused.
	if err := os.WriteFile(filepath.Join(ds.Dir, id, "src", "NEW"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := release.Publish(ctx, ds.Dir, rec, o); err == nil {
		t.Errorf("Publish of a changed task folder = nil, want a refusal")
	}
}

// TestLock writes the lock from the record and checks it.
func TestLock(t *testing.T) {
	ds := dataset(t)
	files, _ := ds.Tasks[0].FilesDigest()
	d := "sha256:" + strings.Repeat("4", 64)
	rec := &release.Record{Tasks: map[string]release.VerifiedTask{id: {Digest: d, FilesSHA256: files}}}
	l, unverified, err := release.Lock(ds, rec, nil, "abcdef0")
	if err != nil || len(unverified) != 0 || l.Images[id].Digest != d {
		t.Fatalf("Lock = %+v, %v, %v", l, unverified, err)
	}
	if diffs := release.CheckLock(l, l, nil); len(diffs) != 0 {
		t.Errorf("CheckLock(same) = %q", diffs)
	}
	old := *l
	old.Images = map[string]task.LockedImage{id: {Digest: d, FilesSHA256: strings.Repeat("5", 64)}}
	if diffs := release.CheckLock(&old, l, nil); len(diffs) != 1 || !strings.Contains(diffs[0], "(stale)") {
		t.Errorf("CheckLock(stale) = %q", diffs)
	}
	// Not verified with the folder as it is: left out, and said.
	rec.Tasks[id] = release.VerifiedTask{Digest: d, FilesSHA256: strings.Repeat("6", 64)}
	l, unverified, _ = release.Lock(ds, rec, nil, "abcdef0")
	if len(l.Images) != 0 || len(unverified) != 1 || !strings.Contains(unverified[0], "changed since it verified") {
		t.Errorf("Lock of a changed folder = %+v, %q", l, unverified)
	}
}
