package commands_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// exampleDataset copies the checkout's example dataset into the test's home
// and returns its folder.
func exampleDataset(t *testing.T, c *cli) string {
	t.Helper()
	dir := filepath.Join(c.home, "datasets", "examples")
	copyTree(t, "datasets/examples", dir)
	return dir
}

func TestDatasetValidate(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		// want are the starts of the problem lines, "$D" the dataset
		// folder and "*" any text; none means the dataset is valid.
		want []string
	}{{
		name:  "valid",
		setup: func(*testing.T, string) {},
	}, {
		name: "every problem at once",
		setup: func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]string{"dataset.yaml": "version: Examples V1\n"})
			if err := os.Remove(filepath.Join(dir, "libqs-3-b2a739e", "Dockerfile")); err != nil {
				t.Fatal(err)
			}
			cfg := filepath.Join(dir, "netstrings-7-bbfbbfe", "sse", "config.yaml")
			b, err := os.ReadFile(cfg)
			if err != nil {
				t.Fatal(err)
			}
			writeFiles(t, dir, map[string]string{"netstrings-7-bbfbbfe/sse/config.yaml": string(b) + "colour: blue\n"})
		},
		want: []string{
			`$D/dataset.yaml:1: version: "Examples V1" is not a valid version`,
			"$D/libqs-3-b2a739e/Dockerfile: missing",
			`$D/netstrings-7-bbfbbfe/sse/config.yaml:*: unknown key "colour"`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCLI(t)
			dir := exampleDataset(t, c)
			tt.setup(t, dir)
			out, stderr, err := c.run(t, "dataset", "validate", dir)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("dataset validate = %v\n%s%s", err, out, stderr)
				}
				if want := "ok " + dir + ": 3 tasks\n"; out != want {
					t.Errorf("dataset validate printed %q, want %q", out, want)
				}
				return
			}
			oneLine(t, err)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("dataset validate printed %d problems, want %d:\n%s", len(lines), len(tt.want), out)
			}
			for i, w := range tt.want {
				w = strings.ReplaceAll(w, "$D", dir)
				first, rest, _ := strings.Cut(w, "*")
				if !strings.HasPrefix(lines[i], first) || !strings.Contains(lines[i][len(first):], rest) {
					t.Errorf("problem %d = %q, want %q", i+1, lines[i], w)
				}
			}
			if want := dir + ": 3 problems\n"; stderr != want {
				t.Errorf("stderr = %q, want %q", stderr, want)
			}
		})
	}
}

func TestDatasetManifest(t *testing.T) {
	c := newCLI(t)
	dir := exampleDataset(t, c)
	mpath := filepath.Join(dir, "manifest.json")
	committed, err := os.ReadFile(mpath)
	if err != nil {
		t.Fatal(err)
	}

	// Written from scratch, it equals the committed file byte for byte.
	if err := os.Remove(mpath); err != nil {
		t.Fatal(err)
	}
	out, _ := c.mustRun(t, "dataset", "manifest", dir)
	if want := "wrote " + dir + "/manifest.json (3 tasks)\n"; out != want {
		t.Errorf("dataset manifest printed %q, want %q", out, want)
	}
	written, err := os.ReadFile(mpath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(written, committed) {
		t.Errorf("dataset manifest wrote another manifest.json than the committed one (-want +got):\n%s", cmp.Diff(string(committed), string(written)))
	}

	out, _ = c.mustRun(t, "dataset", "manifest", "--check", dir)
	if want := "ok " + dir + "/manifest.json\n"; out != want {
		t.Errorf("dataset manifest --check printed %q, want %q", out, want)
	}

	// A task file changes: --check names it, exits non-zero, writes
	// nothing.
	writeFiles(t, dir, map[string]string{"kvconf-12-afb9ee1/src/README.md": "changed\n"})
	out, stderr, err := c.run(t, "dataset", "manifest", "--check", dir)
	oneLine(t, err)
	want := mpath + `: tasks[kvconf-12-afb9ee1].files["src/README.md"]: the file has "`
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], want) {
		t.Errorf("dataset manifest --check printed:\n%s\nwant one line starting %q", out, want)
	}
	if !strings.Contains(stderr, "out of date (run `ssebench dataset manifest "+dir+"`)") {
		t.Errorf("stderr %q does not say how to fix it", stderr)
	}
	if after, _ := os.ReadFile(mpath); !bytes.Equal(after, committed) {
		t.Error("dataset manifest --check changed manifest.json")
	}

	// Writing it again makes --check pass.
	c.mustRun(t, "dataset", "manifest", dir)
	c.mustRun(t, "dataset", "manifest", "--check", dir)
}

// TestDatasetOneTask: a dataset of one task is "1 task", not "1 tasks".
func TestDatasetOneTask(t *testing.T) {
	c := newCLI(t)
	dir := exampleDataset(t, c)
	for _, id := range []string{"libqs-3-b2a739e", "netstrings-7-bbfbbfe"} {
		if err := os.RemoveAll(filepath.Join(dir, id)); err != nil {
			t.Fatal(err)
		}
	}
	if out, _ := c.mustRun(t, "dataset", "manifest", dir); out != "wrote "+dir+"/manifest.json (1 task)\n" {
		t.Errorf("dataset manifest printed %q", out)
	}
	if out, _ := c.mustRun(t, "dataset", "validate", dir); out != "ok "+dir+": 1 task\n" {
		t.Errorf("dataset validate printed %q", out)
	}
	// One problem is "1 problem", not "1 problem(s)".
	if err := os.Remove(filepath.Join(dir, "kvconf-12-afb9ee1", "Dockerfile")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := c.run(t, "dataset", "validate", dir); err == nil || stderr != dir+": 1 problem\n" {
		t.Errorf("dataset validate of one problem = %v, printed %q, want %q", err, stderr, dir+": 1 problem\n")
	}
}
