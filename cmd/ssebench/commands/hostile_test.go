package commands_test

import (
	"archive/tar"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// TestHostileTaskFlag: a --task that is not an id is refused before it
// becomes part of an image name or a path.
func TestHostileTaskFlag(t *testing.T) {
	c := newCLI(t)
	for _, args := range [][]string{
		{"names", "--task", "../../etc"},
		{"names", "--task", "a/b"},
		{"run", "--task", "..", "--agent", "dummy"},
		{"assemble", "tool", "--case", "localhost:5000/x/case/ds/ok", "--task", "x/../y", "--source", "/src"},
		{"assemble", "agent", "--tool", "localhost:5000/x/tool/ok:1", "--agent", "dummy", "--task", "../runtime"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			hostile.Case(t, "names: ids")
			_, _, err := c.run(t, args...)
			oneLine(t, err)
			if err == nil || !strings.Contains(err.Error(), "--task") || !strings.Contains(err.Error(), "is not a valid id") {
				t.Errorf("error = %v, want --task ... is not a valid id", err)
			}
		})
	}
}

// TestHostileAssembleTool: `assemble tool` on a hostile case image fails
// with one line, tags nothing, and leaves nothing in the store's temporary
// space or anywhere else the test can see.
func TestHostileAssembleTool(t *testing.T) {
	const (
		rt  = "localhost:5000/ssebench/runtime:1.0.0"
		ref = "localhost:5000/ssebench/case/ds/proj-1"
	)
	runnerRoot := tarLayer(t, folder("etc", 0o755),
		file("etc/passwd", 0o644, "root:x:0:0:root:/root:/bin/bash\nsse-runner:x:0:0::/:/bin/sh\n"), file("etc/group", 0o644, "root:x:0:\n"))
	linkedTask := tarLayer(t, entry{name: "etc/shadow", typ: tar.TypeSymlink, mode: 0o777})
	deep := tarLayer(t, file(strings.Repeat("d/", 2100)+"f", 0o644, "x"))
	for _, tc := range []struct {
		name  string
		layer v1.Layer
		arch  string
		want  string
	}{
		{"sse-runner with uid 0", runnerRoot, "", "sse-runner has uid 0"},
		{"symlinked /etc/shadow", linkedTask, "", "/etc/shadow in"},
		{"name beyond PATH_MAX", deep, "", "beyond PATH_MAX"},
		{"runtime of another platform", nil, "s390x", "is for linux/s390x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "nothing tagged")
			c := newCLI(t)
			img := caseImage(t)
			if tc.layer != nil {
				var err error
				if img, err = mutate.AppendLayers(img, tc.layer); err != nil {
					t.Fatal(err)
				}
			}
			rimg := runtimeImage(t)
			if tc.arch != "" {
				cf, _ := rimg.ConfigFile()
				cf = cf.DeepCopy()
				cf.Architecture = tc.arch
				rimg, _ = mutate.ConfigFile(rimg, cf)
			}
			c.storeImage(t, ref, img)
			c.storeImage(t, rt, rimg)
			before := snapshot(t, c.root)
			_, _, err := c.run(t, "assemble", "tool", "--case", ref, "--source", "/src/proj", "--runtime", rt, "--pull=never", "--registry", "localhost:5000/ssebench")
			oneLine(t, err)
			if err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
			if after := snapshot(t, c.root); !slices.Equal(before, after) {
				t.Errorf("the failed assembly left files:\nbefore %q\nafter  %q", before, after)
			}
			s, err := store.Open(c.store)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			es, _ := s.List()
			for _, e := range es {
				if strings.Contains(e.Name, "/tool/") {
					t.Errorf("the store has %s", e.Name)
				}
			}
		})
	}
}

// snapshot lists the files under root, the store's blobs and the facts
// cache aside (a failed assembly may keep what it learnt about layers).
func snapshot(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && (strings.HasSuffix(rel, filepath.Join("store", "blobs")) || rel == "cache" || strings.HasPrefix(rel, "user/cache")) {
			return fs.SkipDir
		}
		if !d.IsDir() {
			out = append(out, rel)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// TestHostileCatalogList: `tasks list` of a catalog whose ids are not ids
// fails in one line and prints no task; free text of a catalog (language,
// project) that holds a newline, an escape or a right-to-left override is
// printed escaped, not as given.
func TestHostileCatalogList(t *testing.T) {
	edit := func(t *testing.T, c *cli, f func(m map[string]any)) string {
		t.Helper()
		dir := exampleDataset(t, c)
		p := filepath.Join(dir, task.ManifestFile)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		if b, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	first := func(m map[string]any) map[string]any { return m["tasks"].([]any)[0].(map[string]any) }
	for _, id := range []string{"../../../../x", "a/b", "a\nb", "a\u202eb", strings.Repeat("a", 200)} {
		t.Run("id "+id, func(t *testing.T) {
			hostile.Case(t, "names: catalog ids")
			c := newCLI(t)
			dir := edit(t, c, func(m map[string]any) {
				first(m)["id"] = id
				first(m)["image"] = "case/examples/" + strings.ToLower(id)
			})
			out, _, err := c.run(t, "tasks", "list", "--catalog", dir)
			if err == nil || strings.ContainsAny(err.Error(), "\n\u202e") || !strings.Contains(err.Error(), "is not a valid id") {
				t.Errorf("tasks list = %v, want one escaped line refusing the id", err)
			}
			if strings.Contains(out, "case/examples") {
				t.Errorf("tasks list printed tasks of a refused catalog:\n%s", out)
			}
		})
	}
	for _, text := range []string{"go\nkvconf-12-afb9ee1  examples examples-v1  go  amd64  forged", "go\u202e", "go\x1b]0;title\x07"} {
		t.Run("language "+text, func(t *testing.T) {
			hostile.Case(t, "names: catalog ids")
			c := newCLI(t)
			dir := edit(t, c, func(m map[string]any) { first(m)["language"] = text })
			out, _ := c.mustRun(t, "tasks", "list", "--catalog", dir)
			if strings.Contains(out, text) || strings.ContainsAny(out, "\u202e\x1b\x07") || strings.Count(out, "\n") != 4 {
				t.Errorf("tasks list printed the catalog's language as given:\n%s", out)
			}
		})
	}
}
