package release

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/task"
)

// TestAlternatives: a task folder's stubs and variant patches become runs
// whose patches are copies in the verification folder, with what the
// variant renamed; a patch that is a symlink out of the folder, or larger
// than a fix can be, is refused with a failed finding and not run.
func TestAlternatives(t *testing.T) {
	root := t.TempDir()
	mk := func(id string, files map[string]string) *task.Task {
		dir := filepath.Join(root, id)
		for name, content := range files {
			p := filepath.Join(dir, filepath.FromSlash(name))
			os.MkdirAll(filepath.Dir(p), 0o755)
			if target, ok := strings.CutPrefix(content, "->"); ok {
				if err := os.Symlink(target, p); err != nil {
					t.Fatal(err)
				}
				continue
			}
			os.WriteFile(p, []byte(content), 0o644)
		}
		return &task.Task{ID: id, Dir: dir}
	}
	secret := filepath.Join(root, "secret")
	os.WriteFile(secret, []byte("the answer\n"), 0o600)
	good := mk("good", map[string]string{
		task.StubsFile:   "diff --git a/s.go b/s.go\n",
		task.VariantFile: "Another author's fix.\n" + task.VariantNote + "example.com/m.scrub\n\ndiff --git a/m.go b/m.go\n",
	})
	linked := mk("linked", map[string]string{task.VariantFile: "->" + secret})
	huge := mk("huge", map[string]string{})
	os.MkdirAll(filepath.Join(huge.Dir, "sse/diffs"), 0o755)
	f, _ := os.Create(filepath.Join(huge.Dir, task.StubsFile))
	f.Truncate(maxAlternativePatch + 1)
	f.Close()
	none := mk("none", map[string]string{"sse/config.yaml": "id: none\n"})

	out := filepath.Join(t.TempDir(), "verify-x")
	jobs, alts, refused, err := alternatives([]*task.Task{good, linked, huge, none}, out, true)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, j := range jobs {
		keys = append(keys, j.Key())
	}
	if strings.Join(keys, " ") != "good/stubs/1 good/variant/1" {
		t.Fatalf("jobs %q, want good's stubs and variant only", keys)
	}
	v := alts["good/variant/1"]
	if v.renamed != "example.com/m.scrub" || !strings.HasPrefix(v.pred.PatchFile, out+string(filepath.Separator)) {
		t.Errorf("variant: renamed %q, patch %s", v.renamed, v.pred.PatchFile)
	}
	if b, _ := os.ReadFile(v.pred.PatchFile); !strings.Contains(string(b), "diff --git a/m.go") {
		t.Errorf("the variant's copy holds %q", b)
	}
	if len(refused) != 2 {
		t.Fatalf("refused %+v, want the symlink and the huge file", refused)
	}
	for _, f := range refused {
		switch {
		case f.OK:
			t.Errorf("a refused patch passed: %+v", f)
		case f.Task == "linked" && !strings.Contains(f.Why, "symlink out of its folder"),
			f.Task == "huge" && !strings.Contains(f.Why, "more than"):
			t.Errorf("refused %+v", f)
		}
	}
	// Without the variant (--write-tests), only the stubs run.
	jobs, _, _, _ = alternatives([]*task.Task{good}, t.TempDir(), false)
	if len(jobs) != 1 || jobs[0].Agent != StubsAgent {
		t.Errorf("without the variant: %+v", jobs)
	}
}
