package task

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// validTaskFiles is a complete, valid task folder named gjson-196-bf4efcb.
func validTaskFiles() map[string]string {
	return map[string]string{
		"Dockerfile":            validDockerfile,
		"sse/config.yaml":       validConfig,
		"sse/scripts/build.sh":  "#!/bin/sh\n",
		"sse/scripts/run.sh":    "#!/bin/sh\n",
		"sse/scripts/test.sh":   "#!/bin/sh\n",
		"sse/diffs/patch.diff":  "--- a\n+++ b\n",
		"sse/diffs/test.diff":   "--- a\n+++ b\n",
		"sse/pocs/poc.go":       "package main\n",
		"sse/reports/crash.txt": "panic\n",
		"vendor/modules.txt":    "# vendored\n",
		".dockerignore":         "",
	}
}

// makeTask writes a task folder named id under parent from files,
// after applying changes (a nil value deletes the file).
func makeTask(t *testing.T, parent, id string, changes map[string]*string) string {
	t.Helper()
	dir := filepath.Join(parent, id)
	files := validTaskFiles()
	for name, content := range changes {
		if content == nil {
			delete(files, name)
		} else {
			files[name] = *content
		}
	}
	writeFiles(t, dir, files)
	return dir
}

func ptr(s string) *string { return &s }

func TestLoadValid(t *testing.T) {
	dir := makeTask(t, t.TempDir(), "gjson-196-bf4efcb", nil)
	task, err := Load(dir)
	if err != nil {
		t.Fatalf("Load() = %v", err)
	}
	if task.ID != "gjson-196-bf4efcb" || task.Base != "base-generic-go:1.0.0" || task.Config.Project != "gjson" {
		t.Errorf("Load() = ID %q, Base %q, Project %q", task.ID, task.Base, task.Config.Project)
	}
	if got, want := task.ConfigFile, filepath.Join(dir, "sse", "config.yaml"); got != want {
		t.Errorf("ConfigFile = %q, want %q", got, want)
	}
	if got, want := task.Image("Pilot"), "case/pilot/gjson-196-bf4efcb"; got != want {
		t.Errorf("Image() = %q, want %q", got, want)
	}
	if ps := Validate(dir); ps != nil {
		t.Errorf("Validate() = %v, want nil", ps)
	}
}

func TestValidateTask(t *testing.T) {
	tests := []struct {
		name    string
		id      string
		changes map[string]*string
		want    []string // with "$D" for the task folder
	}{{
		name: "id differs from the folder",
		id:   "gjson-196",
		want: []string{`$D/sse/config.yaml:1: id: "gjson-196-bf4efcb" must equal the folder name "gjson-196"`},
	}, {
		name:    "named files missing from sse",
		changes: map[string]*string{"sse/pocs/poc.go": nil, "sse/scripts/test.sh": nil},
		want: []string{
			"$D/sse/config.yaml:13: scripts.test: sse/scripts/test.sh does not exist in the task folder",
			"$D/sse/config.yaml:17: files.poc[0]: sse/pocs/poc.go does not exist in the task folder",
		},
	}, {
		name:    "crash report missing",
		changes: map[string]*string{"sse/reports/crash.txt": nil, "reports/crash.txt": ptr("not under sse")},
		want:    []string{"$D/sse/config.yaml:8: task_description.crash_report[0]: sse/reports/crash.txt does not exist in the task folder"},
	}, {
		name:    "script is a directory",
		changes: map[string]*string{"sse/scripts/build.sh": nil, "sse/scripts/build.sh/x": ptr("")},
		want:    []string{"$D/sse/config.yaml:11: scripts.build: sse/scripts/build.sh is a directory, not a script"},
	}, {
		name:    "config missing",
		changes: map[string]*string{"sse/config.yaml": nil},
		want:    []string{"$D/sse/config.yaml: missing"},
	}, {
		name:    "config at the top of the folder",
		changes: map[string]*string{"sse/config.yaml": nil, "config.yaml": ptr(validConfig)},
	}, {
		name:    "sse/config.yaml wins over config.yaml",
		changes: map[string]*string{"config.yaml": ptr("junk: 1\n")},
	}, {
		name:    "Dockerfile missing",
		changes: map[string]*string{"Dockerfile": nil},
		want:    []string{"$D/Dockerfile: missing"},
	}, {
		name: "config and Dockerfile problems together",
		changes: map[string]*string{
			"sse/config.yaml": ptr(strings.Replace(validConfig, "language: go\n", "language: go\nlang: go\n", 1)),
			"Dockerfile":      ptr("ARG SSEBENCH_REGISTRY\nFROM ${SSEBENCH_REGISTRY}/base-generic-go\nCOPY sse /ssebench\n"),
		},
		want: []string{
			`$D/sse/config.yaml:5: unknown key "lang"`,
			"$D/Dockerfile:2: the base image base-generic-go is not pinned: add a version tag (such as :1.0.0) or a digest",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := tt.id
			if id == "" {
				id = "gjson-196-bf4efcb"
			}
			dir := makeTask(t, t.TempDir(), id, tt.changes)
			var want []string
			for _, w := range tt.want {
				want = append(want, strings.ReplaceAll(w, "$D", dir))
			}
			if diff := cmp.Diff(want, problemStrings(Validate(dir))); diff != "" {
				t.Errorf("Validate() mismatch (-want +got):\n%s", diff)
			}
			task, err := Load(dir)
			var ps Problems
			switch {
			case len(want) == 0 && err != nil:
				t.Errorf("Load() = %v, want no error", err)
			case len(want) == 0 && task == nil:
				t.Errorf("Load() = nil task")
			case len(want) > 0 && !errors.As(err, &ps):
				t.Errorf("Load() error = %v, want Problems", err)
			case len(want) > 0 && len(ps) != len(want):
				t.Errorf("Load() gave %d problems, want %d", len(ps), len(want))
			}
		})
	}
}

func TestValidateNotAFolder(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope")
	if diff := cmp.Diff([]string{missing + ": missing"}, problemStrings(Validate(missing))); diff != "" {
		t.Errorf("Validate(missing) mismatch (-want +got):\n%s", diff)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{file + ": is not a directory"}, problemStrings(Validate(file))); diff != "" {
		t.Errorf("Validate(file) mismatch (-want +got):\n%s", diff)
	}
}
