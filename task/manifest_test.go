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

// makeDataset writes a dataset folder named pilot with two valid tasks.
func makeDataset(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pilot")
	writeFiles(t, dir, map[string]string{DatasetFile: "# comment\nversion: pilot-v1\n"})
	makeTask(t, dir, "gjson-196-bf4efcb", nil)
	rust := strings.NewReplacer("gjson-196-bf4efcb", "RUSTSEC-2019-0009", "language: go", "language: rust", "  run: scripts/run.sh\n", "")
	makeTask(t, dir, "RUSTSEC-2019-0009", map[string]*string{
		"sse/config.yaml": ptr(rust.Replace(validConfig)),
		"Dockerfile":      ptr(strings.Replace(validDockerfile, "base-generic-go:1.0.0", "base-generic-rust:1.0.0", 1)),
	})
	return dir
}

func TestManifestGeneration(t *testing.T) {
	dir := makeDataset(t)
	d, err := LoadDataset(dir)
	if err != nil {
		t.Fatalf("LoadDataset() = %v", err)
	}
	if d.Name != "pilot" || d.Version != "pilot-v1" || len(d.Tasks) != 2 {
		t.Fatalf("LoadDataset() = %q %q with %d tasks", d.Name, d.Version, len(d.Tasks))
	}
	m, err := d.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	type summary struct {
		ID, Language, Base, Image string
		Arch, Checks              []string
	}
	var got []summary
	for _, e := range m.Tasks {
		got = append(got, summary{e.ID, e.Language, e.Base, e.Image, e.Arch, e.Checks})
	}
	want := []summary{
		{"RUSTSEC-2019-0009", "rust", "base-generic-rust:1.0.0", "case/pilot/rustsec-2019-0009", []string{"amd64"}, []string{"build", "function_test", "intent_test"}},
		{"gjson-196-bf4efcb", "go", "base-generic-go:1.0.0", "case/pilot/gjson-196-bf4efcb", []string{"amd64"}, []string{"build", "poc", "function_test", "intent_test"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Manifest() tasks mismatch (-want +got):\n%s", diff)
	}
	files, err := Files(filepath.Join(dir, "gjson-196-bf4efcb"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(files, m.Task("gjson-196-bf4efcb").Files); diff != "" {
		t.Errorf("manifest files differ from Files() (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(*d.Task("gjson-196-bf4efcb").Config, m.Task("gjson-196-bf4efcb").Metadata); diff != "" {
		t.Errorf("manifest metadata differs from the config (-want +got):\n%s", diff)
	}

	// Generating twice gives the same bytes.
	a, _ := m.Marshal()
	m2, _ := d.Manifest()
	b, _ := m2.Marshal()
	if string(a) != string(b) {
		t.Errorf("Manifest().Marshal() is not deterministic")
	}
}

// TestManifestFormat pins the rendering: the original's key order, every
// metadata key present (null when unset), 2-space indent, no HTML escaping,
// a final newline.
func TestManifestFormat(t *testing.T) {
	str := func(s string) *string { return &s }
	m := &Manifest{
		Dataset: "pilot",
		Version: "pilot-v1",
		Tasks: []ManifestTask{{
			ID: "a", Language: "go", Project: "p<&>", Repository: "https://x/y", Base: "base-generic-go:1.0.0",
			Image: "case/pilot/a", Arch: []string{"amd64"}, Checks: []string{},
			Files: map[string]string{"b": strings.Repeat("1", 64), "a": strings.Repeat("0", 64)},
			Metadata: Config{
				ID: "a", Project: "p<&>", Repository: "https://x/y", Language: "go", Source: "/src/é",
				TaskDescription: TaskDescription{Issue: str("")},
				Scripts:         Scripts{Build: str("b.sh"), Test: str("t.sh")},
				Files:           ConfigFiles{Poc: []string{}},
				Reference:       []string{"https://x/y"},
			},
		}},
	}
	want := `{
  "dataset": "pilot",
  "version": "pilot-v1",
  "tasks": [
    {
      "id": "a",
      "language": "go",
      "project": "p<&>",
      "repository": "https://x/y",
      "base": "base-generic-go:1.0.0",
      "image": "case/pilot/a",
      "arch": [
        "amd64"
      ],
      "checks": [],
      "files": {
        "a": "0000000000000000000000000000000000000000000000000000000000000000",
        "b": "1111111111111111111111111111111111111111111111111111111111111111"
      },
      "metadata": {
        "id": "a",
        "project": "p<&>",
        "repository": "https://x/y",
        "language": "go",
        "source": "/src/é",
        "task_description": {
          "issue": "",
          "crash_report": null,
          "bug_description": null
        },
        "scripts": {
          "build": "b.sh",
          "run": null,
          "test": "t.sh"
        },
        "files": {
          "patch": null,
          "future_test": null,
          "security_test": null,
          "intent_test": null,
          "poc": []
        },
        "sanitizer": null,
        "type": null,
        "binary": null,
        "trigger_commit": null,
        "patch_commit": null,
        "reference": [
          "https://x/y"
        ],
        "originality": null
      }
    }
  ]
}
`
	got, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("Marshal() mismatch (-want +got):\n%s", diff)
	}

	// And it reads back to the same manifest.
	path := filepath.Join(t.TempDir(), ManifestFile)
	if err := os.WriteFile(path, got, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := ReadManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, back); diff != "" {
		t.Errorf("ReadManifest(Marshal()) mismatch (-want +got):\n%s", diff)
	}
}

func TestCheckManifest(t *testing.T) {
	dir := makeDataset(t)
	mpath := filepath.Join(dir, ManifestFile)

	ps, err := CheckManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{mpath + ": missing: generate it"}, problemStrings(ps)); diff != "" {
		t.Errorf("CheckManifest(no manifest) mismatch (-want +got):\n%s", diff)
	}

	d, err := LoadDataset(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	if ps, err := CheckManifest(dir); err != nil || ps != nil {
		t.Fatalf("CheckManifest(fresh manifest) = %v, %v; want no problems", ps, err)
	}

	// Change the folders: a file edited, a file added, a task added.
	writeFiles(t, filepath.Join(dir, "gjson-196-bf4efcb"), map[string]string{
		"sse/pocs/poc.go": "package main // changed\n",
		"sse/new.txt":     "new",
	})
	makeTask(t, dir, "zz-1", map[string]*string{"sse/config.yaml": ptr(strings.Replace(validConfig, "gjson-196-bf4efcb", "zz-1", 1))})
	ps, err = CheckManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	newSum, _ := fileSHA256(filepath.Join(dir, "gjson-196-bf4efcb", "sse", "pocs", "poc.go"))
	oldSum := m.Task("gjson-196-bf4efcb").Files["sse/pocs/poc.go"]
	want := []string{
		mpath + `: tasks[gjson-196-bf4efcb].files["sse/new.txt"]: missing from the file (generated: "` + mustSum(t, "new") + `")`,
		mpath + `: tasks[gjson-196-bf4efcb].files["sse/pocs/poc.go"]: the file has "` + oldSum + `", the dataset gives "` + newSum + `"`,
		mpath + `: tasks[zz-1]: missing from the file`,
	}
	if diff := cmp.Diff(want, problemStrings(ps)); diff != "" {
		t.Errorf("CheckManifest(changed folders) mismatch (-want +got):\n%s", diff)
	}

	// Regenerate, then edit the file by hand.
	d, err = LoadDataset(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, _ = d.Manifest()
	m.Tasks[0].Project = "edited"
	m.Tasks[1].Metadata.Sanitizer = ptr("address")
	m.Tasks = append(m.Tasks, ManifestTask{ID: "zzz-gone", Image: "case/pilot/zzz-gone", Arch: []string{"amd64"}})
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	ps, err = CheckManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{
		mpath + `: tasks[zzz-gone]: in the file but not a task folder of the dataset`,
		mpath + `: tasks[RUSTSEC-2019-0009].project: the file has "edited", the dataset gives "gjson"`,
		mpath + `: tasks[gjson-196-bf4efcb].metadata.sanitizer: the file has "address", the dataset gives null`,
	}
	if diff := cmp.Diff(want, problemStrings(ps)); diff != "" {
		t.Errorf("CheckManifest(edited file) mismatch (-want +got):\n%s", diff)
	}

	// Same content, other formatting.
	m, _ = d.Manifest()
	data, _ := m.Marshal()
	if err := os.WriteFile(mpath, []byte(strings.ReplaceAll(string(data), "  ", "\t")), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, _ = CheckManifest(dir)
	if diff := cmp.Diff([]string{mpath + ": same content, but not formatted as generated: regenerate it"}, problemStrings(ps)); diff != "" {
		t.Errorf("CheckManifest(reformatted) mismatch (-want +got):\n%s", diff)
	}

	// An invalid dataset is an error, not a difference.
	writeFiles(t, dir, map[string]string{DatasetFile: "version: Pilot\n"})
	if _, err := CheckManifest(dir); err == nil {
		t.Errorf("CheckManifest(invalid dataset) succeeded")
	}
}

func mustSum(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := fileSHA256(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestManifestKeepsRecordedArch(t *testing.T) {
	dir := makeDataset(t)
	d, err := LoadDataset(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := d.Manifest()
	m.Task("gjson-196-bf4efcb").Arch = []string{"arm64", "amd64"}
	m.GeneratedFrom = "0123abc"
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	d, err = LoadDataset(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, _ = d.Manifest()
	if diff := cmp.Diff([]string{"arm64", "amd64"}, m.Task("gjson-196-bf4efcb").Arch); diff != "" {
		t.Errorf("regenerated arch mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"amd64"}, m.Task("RUSTSEC-2019-0009").Arch); diff != "" {
		t.Errorf("default arch mismatch (-want +got):\n%s", diff)
	}
	if ps, err := CheckManifest(dir); err != nil || ps != nil {
		t.Errorf("CheckManifest() = %v, %v; want the recorded arch and generated_from accepted", ps, err)
	}
}

func TestLoadDatasetProblems(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  []string // "$D" is the dataset folder
	}{{
		name: "version invalid",
		setup: func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]string{DatasetFile: "\nversion: Pilot V1\n"})
		},
		want: []string{`$D/dataset.yaml:2: version: "Pilot V1" is not a valid version: use lower-case letters and digits separated by '.', '_' or '-'`},
	}, {
		name:  "version missing, unknown key",
		setup: func(t *testing.T, dir string) { writeFiles(t, dir, map[string]string{DatasetFile: "name: pilot\n"}) },
		want:  []string{`$D/dataset.yaml:1: unknown key "name"`, "$D/dataset.yaml: version: is required"},
	}, {
		name: "dataset.yaml missing",
		setup: func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, DatasetFile)); err != nil {
				t.Fatal(err)
			}
		},
		want: []string{"$D/dataset.yaml: missing"},
	}, {
		name: "an invalid task",
		setup: func(t *testing.T, dir string) {
			makeTask(t, dir, "broken-1", map[string]*string{"Dockerfile": nil})
		},
		want: []string{
			`$D/broken-1/sse/config.yaml:1: id: "gjson-196-bf4efcb" must equal the folder name "broken-1"`,
			"$D/broken-1/Dockerfile: missing",
		},
	}, {
		name: "ids that differ only in case",
		setup: func(t *testing.T, dir string) {
			makeTask(t, dir, "GJSON-196-bf4efcb", map[string]*string{"sse/config.yaml": ptr(strings.Replace(validConfig, "gjson-196", "GJSON-196", 1))})
		},
		want: []string{"$D: tasks GJSON-196-bf4efcb and gjson-196-bf4efcb would share the case image case/pilot/gjson-196-bf4efcb"},
	}, {
		name: "hidden folders and files are not tasks",
		setup: func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]string{".cache/x": "", "README.md": ""})
		},
	}, {
		name: "manifest unreadable",
		setup: func(t *testing.T, dir string) {
			writeFiles(t, dir, map[string]string{ManifestFile: "{"})
		},
		want: []string{"$D/manifest.json: not a valid manifest: unexpected EOF (it records the tasks' arch: fix it, or delete it to start again)"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := makeDataset(t)
			tt.setup(t, dir)
			_, err := LoadDataset(dir)
			var ps Problems
			if err != nil && !errors.As(err, &ps) {
				t.Fatalf("LoadDataset() error %v is not Problems", err)
			}
			var want []string
			for _, w := range tt.want {
				want = append(want, strings.ReplaceAll(w, "$D", dir))
			}
			if diff := cmp.Diff(want, problemStrings(ps)); diff != "" {
				t.Errorf("LoadDataset() problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadDatasetEmpty(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "empty")
	writeFiles(t, dir, map[string]string{DatasetFile: "version: v1\n"})
	_, err := LoadDataset(dir)
	if err == nil || err.Error() != dir+": has no task folders" {
		t.Errorf("LoadDataset(empty) = %v, want %q", err, dir+": has no task folders")
	}
}

func TestReadManifestErrors(t *testing.T) {
	sum := strings.Repeat("a", 64)
	entry := func(id, arch, files string) string {
		return `{"id":"` + id + `","language":"go","project":"p","repository":"r","base":"b","image":"case/d/` + id + `","arch":` + arch +
			`,"checks":[],"files":` + files + `,"metadata":{}}`
	}
	tests := []struct {
		name, json, want string
	}{
		{"unknown field", `{"dataset":"d","version":"v1","tasks":[],"extra":1}`, `not a valid manifest: json: unknown field "extra"`},
		{"bad version", `{"dataset":"d","version":"V 1","tasks":[]}`, `version: "V 1" is not a valid dataset version`},
		{"unsorted", `{"dataset":"d","version":"v1","tasks":[` + entry("b", `["amd64"]`, `{}`) + `,` + entry("a", `["amd64"]`, `{}`) + `]}`, "tasks: not sorted by id, or a appears twice"},
		{"empty arch", `{"dataset":"d","version":"v1","tasks":[` + entry("a", `[]`, `{}`) + `]}`, "tasks[a].arch: must list at least one architecture"},
		{"unknown arch", `{"dataset":"d","version":"v1","tasks":[` + entry("a", `["riscv64"]`, `{}`) + `]}`, `tasks[a].arch: "riscv64" is not one of amd64, arm64`},
		{"bad sha", `{"dataset":"d","version":"v1","tasks":[` + entry("a", `["amd64"]`, `{"f":"`+strings.ToUpper(sum)+`"}`) + `]}`, `tasks[a].files["f"]: "` + strings.ToUpper(sum) + `" is not a SHA-256`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ManifestFile)
			if err := os.WriteFile(path, []byte(tt.json), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadManifest(path)
			if err == nil || err.Error() != path+": "+tt.want {
				t.Errorf("ReadManifest() = %v, want %q", err, path+": "+tt.want)
			}
		})
	}
	if _, err := ReadManifest(filepath.Join(t.TempDir(), "none.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadManifest(missing) = %v, want fs.ErrNotExist", err)
	}
}
