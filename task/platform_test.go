package task

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRunArch(t *testing.T) {
	tests := []struct {
		name         string
		arches       []string
		host         string
		want         string
		wantEmulated bool
	}{
		{"host listed", []string{"amd64", "arm64"}, "arm64", "arm64", false},
		{"host not listed", []string{"amd64"}, "arm64", "amd64", true},
		{"first listed wins", []string{"arm64", "amd64"}, "riscv64", "arm64", true},
		{"native", []string{"amd64"}, "amd64", "amd64", false},
		{"no arches means both", nil, "arm64", "arm64", false},
		{"no arches, foreign host", nil, "s390x", "amd64", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, emulated := RunArch(tt.arches, tt.host)
			if got != tt.want || emulated != tt.wantEmulated {
				t.Errorf("RunArch(%v, %q) = %q, %v; want %q, %v", tt.arches, tt.host, got, emulated, tt.want, tt.wantEmulated)
			}
		})
	}
	if got := Platform("arm64"); got != "linux/arm64" {
		t.Errorf("Platform(arm64) = %q, want linux/arm64", got)
	}
}

func TestArches(t *testing.T) {
	m := &Manifest{Tasks: []ManifestTask{{ID: "a", Arch: []string{"amd64"}}}}
	tests := []struct {
		name string
		m    *Manifest
		id   string
		want []string
	}{
		{"entry", m, "a", []string{"amd64"}},
		{"no entry", m, "b", []string{"amd64", "arm64"}},
		{"no manifest", nil, "a", []string{"amd64", "arm64"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.m.Arches(tt.id)); diff != "" {
				t.Errorf("Arches(%q) mismatch (-want +got):\n%s", tt.id, diff)
			}
		})
	}
	// The result is the caller's to change.
	m.Arches("a")[0] = "arm64"
	if m.Tasks[0].Arch[0] != "amd64" {
		t.Errorf("changing Arches() changed the manifest")
	}
}

func TestTaskArches(t *testing.T) {
	dir := makeDataset(t)
	got, err := TaskArches(dir, "gjson-196-bf4efcb")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"amd64", "arm64"}, got); diff != "" {
		t.Errorf("TaskArches(no manifest) mismatch (-want +got):\n%s", diff)
	}
	writeFiles(t, dir, map[string]string{ManifestFile: `{"dataset":"pilot","version":"pilot-v1","tasks":[{"id":"gjson-196-bf4efcb","language":"go","project":"p","repository":"r","base":"b","image":"case/pilot/gjson-196-bf4efcb","arch":["arm64"],"checks":[],"files":{},"metadata":{}}]}`})
	got, err = TaskArches(dir, "gjson-196-bf4efcb")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"arm64"}, got); diff != "" {
		t.Errorf("TaskArches(manifest) mismatch (-want +got):\n%s", diff)
	}
	writeFiles(t, dir, map[string]string{ManifestFile: `{`})
	if _, err := TaskArches(dir, "gjson-196-bf4efcb"); err == nil {
		t.Errorf("TaskArches(broken manifest) succeeded")
	}
	if _, err := TaskArches(filepath.Join(dir, "none"), "x"); err != nil {
		t.Errorf("TaskArches(no dataset folder) = %v, want defaults", err)
	}
}

func TestCheckArches(t *testing.T) {
	for _, ok := range [][]string{{"amd64"}, {"arm64", "amd64"}} {
		if err := CheckArches(ok); err != nil {
			t.Errorf("CheckArches(%v) = %v", ok, err)
		}
	}
	for _, bad := range [][]string{nil, {"x86_64"}, {"amd64", "amd64"}} {
		if err := CheckArches(bad); err == nil {
			t.Errorf("CheckArches(%v) succeeded", bad)
		}
	}
}
