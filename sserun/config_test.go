package sserun

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTaskConfig(t *testing.T) {
	data := `id: kvconf-12-afb9ee1
project: kvconf
language: go
source: /src/kvconf/
task_description:
  issue: " crash\n"
  crash_report: [reports//c.txt]
  bug_description:
scripts:
  build: scripts/build.sh
  run: ./scripts/run.sh
  test: scripts/test.sh
files:
  patch: diffs/patch.diff
  poc:
  - pocs/a.conf
  - pocs//b.conf
a_key_from_a_newer_ssebench: 1
`
	got, err := ParseTaskConfig([]byte(data))
	if err != nil {
		t.Fatalf("ParseTaskConfig() = %v", err)
	}
	want := &TaskConfig{ID: "kvconf-12-afb9ee1", Project: "kvconf", Language: "go", Source: "/src/kvconf"}
	want.TaskDescription.Issue = "crash"
	want.TaskDescription.CrashReport = []string{"reports/c.txt"}
	want.Scripts.Build, want.Scripts.Run, want.Scripts.Test = "scripts/build.sh", "scripts/run.sh", "scripts/test.sh"
	want.Files.PoC = []string{"pocs/a.conf", "pocs/b.conf"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseTaskConfig() (-want +got):\n%s", diff)
	}
}

func TestParseTaskConfigErrors(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"not yaml", "id: [", "yaml"},
		{"absolute script", "scripts:\n  build: /ssebench/build.sh\n", `scripts.build "/ssebench/build.sh" is not a path inside the task folder`},
		{"climbing poc", "files:\n  poc: [../etc/shadow]\n", `files.poc[0] "../etc/shadow"`},
		{"root as script", "scripts:\n  test: .\n", "scripts.test"},
		{"climbing crash report", "task_description:\n  crash_report: [/etc/shadow]\n", `task_description.crash_report[0] "/etc/shadow"`},
		{"relative source", "source: src/p\n", `source "src/p" is not an absolute path`},
		{"absolute protected path", "tests:\n  protected: [/etc/passwd]\n", `tests.protected[0]: "/etc/passwd" is not relative to SOURCE_DIR`},
		{"climbing protected path", "tests:\n  protected: ['a/../../b']\n", `tests.protected[0]: "a/../../b" has a ".." element`},
		{"malformed protected path", "tests:\n  protected: [ok/**, 'x/[']\n", `tests.protected[1]: "x/[" has a malformed element`},
		{"empty protected path", "tests:\n  protected: ['']\n", `tests.protected[0]: is empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseTaskConfig([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseTaskConfig() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestTaskConfigProtectedPaths: tests.protected, when present (even
// empty), replaces the language's defaults.
func TestTaskConfigProtectedPaths(t *testing.T) {
	goDefaults := []string{"**/*_test.go", "**/testdata/**", "vendor/**", "go.work", "go.work.sum"}
	for _, tt := range []struct {
		name, data string
		want       []string
	}{
		{"go defaults", "language: go\n", goDefaults},
		{"go defaults, tests without the key", "language: go\ntests: {format: go-test-json}\n", goDefaults},
		{"go defaults, null", "language: go\ntests:\n  protected:\n", goDefaults},
		{"rust defaults", "language: rust\n", []string{"tests/**", "benches/**"}},
		{"c: none", "language: c\n", nil},
		{"empty list: none", "language: go\ntests: {protected: []}\n", []string{}},
		{"own list, trimmed", "language: c\ntests: {protected: [' t/** ', fixtures/*.bin]}\n", []string{"t/**", "fixtures/*.bin"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseTaskConfig([]byte(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			got := c.ProtectedPaths()
			if diff := cmp.Diff(tt.want, got); diff != "" || (got == nil) != (tt.want == nil) {
				t.Errorf("ProtectedPaths() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadTaskConfig(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadTaskConfig(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadTaskConfig(empty dir) = %v, want a not-exist error", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigName), []byte("id: x\nsource: /src/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := ReadTaskConfig(dir)
	if err != nil || c.ID != "x" || c.Source != "/src/x" {
		t.Errorf("ReadTaskConfig() = %+v, %v; want id x, source /src/x", c, err)
	}
}
