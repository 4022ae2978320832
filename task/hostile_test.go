package task

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// secret is what a host file planted behind a symlink holds: it must never
// appear in a message.
const secret = "root:$6$SECRET-HASH:19000:0:99999:7:::"

func hostFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHostileTaskFolders: a task folder's config or Dockerfile that leaves
// the folder is refused without being read; so is one that is huge or not a
// regular file.
func TestHostileTaskFolders(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		file  string
		want  string
	}{
		{"config.yaml to a host file", func(t *testing.T, dir string) { relink(t, hostFile(t), filepath.Join(dir, "sse/config.yaml")) }, "sse/config.yaml", "symlink out of the task folder"},
		{"config.yaml relative out", func(t *testing.T, dir string) {
			h := hostFile(t)
			rel, _ := filepath.Rel(filepath.Join(dir, "sse"), h)
			relink(t, rel, filepath.Join(dir, "sse/config.yaml"))
		}, "sse/config.yaml", "symlink out of the task folder"},
		{"sse/ a symlink out", func(t *testing.T, dir string) {
			out := t.TempDir()
			os.WriteFile(filepath.Join(out, "config.yaml"), []byte(secret+"\n"), 0o644)
			os.RemoveAll(filepath.Join(dir, "sse"))
			relink(t, out, filepath.Join(dir, "sse"))
		}, "sse/config.yaml", "symlink out of the task folder"},
		{"legacy config.yaml to a host file", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "sse/config.yaml"))
			relink(t, hostFile(t), filepath.Join(dir, "config.yaml"))
		}, "config.yaml", "symlink out of the task folder"},
		{"Dockerfile to a host file", func(t *testing.T, dir string) { relink(t, hostFile(t), filepath.Join(dir, "Dockerfile")) }, "Dockerfile", "symlink out of the task folder"},
		{"Dockerfile to /proc/self/environ", func(t *testing.T, dir string) { relink(t, "/proc/self/environ", filepath.Join(dir, "Dockerfile")) }, "Dockerfile", "symlink out of the task folder"},
		{"huge config", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "sse/config.yaml"), []byte("id: x\n"+strings.Repeat("# padding\n", 200000)), 0o644)
		}, "sse/config.yaml", "more than the 1048576 bytes"},
		{"config a FIFO", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "sse/config.yaml")
			os.Remove(p)
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skip(err)
			}
		}, "sse/config.yaml", "not a regular file"},
		{"Dockerfile a directory", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "Dockerfile"))
			os.Mkdir(filepath.Join(dir, "Dockerfile"), 0o755)
		}, "Dockerfile", "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "hostile task folders")
			dir := makeTask(t, t.TempDir(), "gjson-196-bf4efcb", nil)
			tc.setup(t, dir)
			ps := Validate(dir)
			all := ps.Error()
			if strings.Contains(all, "SECRET") {
				t.Fatalf("the host file's content is in the problems:\n%s", all)
			}
			for _, p := range ps {
				if strings.HasSuffix(p.File, filepath.FromSlash(tc.file)) && strings.Contains(p.Msg, tc.want) {
					return
				}
			}
			t.Errorf("Validate() lacks %q for %s:\n%s", tc.want, tc.file, all)
		})
	}
}

func relink(t *testing.T, target, link string) {
	t.Helper()
	os.Remove(link)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestHostileNames: ids and image names from flags and files follow the
// grammar; `source` never names a reserved path.
func TestHostileNames(t *testing.T) {
	for _, id := range []string{"..", ".", "", "../etc", "a/b", "a/../b", "/abs", `a\b`, "a b", "a\nb", "-a", "a-", "a..b", "é", strings.Repeat("a", 129)} {
		t.Run("id "+id, func(t *testing.T) {
			hostile.Case(t, "names: ids")
			err := CheckID("--task", id)
			if err == nil || !strings.Contains(err.Error(), "--task") || strings.Contains(err.Error(), "\n") {
				t.Errorf("CheckID(%q) = %v, want a one-line error naming --task", id, err)
			}
		})
	}
	for _, id := range []string{"gjson-196-bf4efcb", "a.b_c__d--e", "X1"} {
		if err := CheckID("--task", id); err != nil {
			t.Errorf("CheckID(%q) = %v", id, err)
		}
	}
	for _, ref := range []string{
		"localhost:5000/ssebench/tool/../runtime:1.0.0", "ssebench/tool/..:1.0.0", "ssebench//tool:1", "../../etc/passwd",
		"ssebench/Tool/x:1", "ssebench/tool/x:../1", "ssebench/tool/x:1@sha256:zz", "ssebench/tool/x:1\n", "ssebench/tool/x y:1",
		"", "/ssebench/tool/x:1", "ssebench/tool/x/:1", "bad_host:5000/x:1", strings.Repeat("a/", 300) + "x",
	} {
		t.Run("ref "+ref, func(t *testing.T) {
			hostile.Case(t, "names: load archive refs")
			err := CheckImageName(ref)
			if err == nil || strings.Contains(err.Error(), "\n") {
				t.Errorf("CheckImageName(%q) = %v, want a one-line error", ref, err)
			}
		})
	}
	for _, ref := range []string{"localhost:5000/ssebench/tool/gjson-196-bf4efcb:1.0.0", "ghcr.io/a/b/agent-dummy/x:1.0.0-rc.1",
		"ssebench/runtime:1.0.0@sha256:" + strings.Repeat("0", 64), "127.0.0.1:5000/x"} {
		if err := CheckImageName(ref); err != nil {
			t.Errorf("CheckImageName(%q) = %v", ref, err)
		}
	}
	for _, src := range []string{"/ssebench", "/ssebench/src", "/ssebench-repo", "/var/lib/ssebench", "/var/lib/ssebench/results", "/usr/local/bin/entrypoint",
		"/proc/self", "/sys", "/dev/shm/x", "/etc", "/etc/app", "/home/model", "/home/model/src", "/tmp/sse-archive", "/usr", "/usr/local", "/var", "/home", "/var/lib", "/run/x"} {
		t.Run("source "+src, func(t *testing.T) {
			hostile.Case(t, "names: reserved source")
			c := ptr(strings.Replace(validConfig, "source: /src/gjson", "source: "+src, 1))
			dir := makeTask(t, t.TempDir(), "gjson-196-bf4efcb", map[string]*string{"sse/config.yaml": c})
			all := Validate(dir).Error()
			if !strings.Contains(all, "source: \""+src+"\"") {
				t.Errorf("Validate() with source %s lacks a source problem:\n%s", src, all)
			}
		})
	}
	for _, src := range []string{"/src/gjson", "/usr/src/app", "/opt/project", "/home/dev/proj", "/var/www/app", "/root/proj", "/tmp/build"} {
		if r := ReservedSource(src); r != "" {
			t.Errorf("ReservedSource(%q) = %q, want none", src, r)
		}
	}
}

// badIDs are task ids a hostile catalog, lock or record could carry.
var badIDs = []string{"../../../../x", "a/b", "../hijack", strings.Repeat("a", 200), "a\nb", "a\u202eb", "x\x1b[2Jy", "", "..", ".", "A B"}

// TestHostileCatalogIDs: ids and image names from a catalog manifest or an
// images lock go through the task folder's id grammar; the error is one
// line and shows the id escaped.
func TestHostileCatalogIDs(t *testing.T) {
	manifest := func(dataset string, tasks ...ManifestTask) []byte {
		for i := range tasks {
			tasks[i].Arch, tasks[i].Checks, tasks[i].Files = []string{"amd64"}, []string{}, map[string]string{}
		}
		b, err := json.Marshal(Manifest{Dataset: dataset, Version: "v1", Tasks: tasks})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	oneLine := func(t *testing.T, err error, want string) {
		t.Helper()
		if err == nil {
			t.Fatalf("got no error, want one saying %s", want)
		}
		if strings.ContainsAny(err.Error(), "\n\x1b\u202e") || !strings.Contains(err.Error(), want) {
			t.Errorf("error %q is not one escaped line saying %s", err, want)
		}
	}
	for _, id := range badIDs {
		t.Run("manifest id "+id, func(t *testing.T) {
			hostile.Case(t, "names: catalog ids")
			_, err := ParseManifest("catalog", manifest("ds", ManifestTask{ID: id, Image: CaseImage("ds", id)}))
			oneLine(t, err, "is not a valid id")
		})
		t.Run("lock id "+id, func(t *testing.T) {
			hostile.Case(t, "names: catalog ids")
			key, _ := json.Marshal(id)
			lock := `{"dataset":"ds","version":"v1","images":{` + string(key) + `:{"digest":"sha256:` + strings.Repeat("0", 64) + `","files_sha256":"` + strings.Repeat("0", 64) + `","revision":""}}}`
			_, err := ParseLock("lock", []byte(lock))
			oneLine(t, err, "is not a valid id")
		})
	}
	for _, ds := range []string{"../x", "a/b", "a\nb"} {
		t.Run("manifest dataset "+ds, func(t *testing.T) {
			hostile.Case(t, "names: catalog ids")
			_, err := ParseManifest("catalog", manifest(ds, ManifestTask{ID: "t1", Image: CaseImage(ds, "t1")}))
			oneLine(t, err, "is not a valid id")
		})
	}
	for _, img := range []string{"../../hijack", "case/ds/other", "case/other/t1", "case/ds/t1/../../x", "", "case/ds/t1:latest"} {
		t.Run("manifest image "+img, func(t *testing.T) {
			hostile.Case(t, "names: catalog ids")
			_, err := ParseManifest("catalog", manifest("ds", ManifestTask{ID: "t1", Image: img}))
			oneLine(t, err, "is not the task's case image case/ds/t1")
		})
	}
	if _, err := ParseManifest("catalog", manifest("ds", ManifestTask{ID: "T1", Image: "case/ds/t1"})); err != nil {
		t.Errorf("a valid catalog is refused: %v", err)
	}
}

// TestHostileTaskFileLinks: a task file that is a symlink out of the folder
// (to a host secret, to /proc, to the agent's SOURCE_DIR inside the image,
// climbing out relatively or through another link) is refused by Validate
// and by Files with its path named, and its target never hashed.
func TestHostileTaskFileLinks(t *testing.T) {
	for _, tc := range []struct {
		name, file, target string
	}{
		{"build.sh to /etc/shadow", "sse/scripts/build.sh", "/etc/shadow"},
		{"build.sh to /proc/kcore", "sse/scripts/build.sh", "/proc/kcore"},
		{"build.sh to a host file", "sse/scripts/build.sh", "HOST"},
		{"build.sh into SOURCE_DIR (absent on the host)", "sse/scripts/build.sh", "/src/gjson/build.sh"},
		{"a helper into /home/model", "sse/lib/helper.sh", "/home/model/helper.sh"},
		{"a poc climbing out", "sse/pocs/poc.go", "../../../../../../../../etc/passwd"},
		{"through a link to a folder outside", "sse/lib/x", "OUTDIR"},
		{"through an inner link that climbs", "sse/lib/y", "../up/passwd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "task files that point outside")
			dir := makeTask(t, t.TempDir(), "gjson-196-bf4efcb", nil)
			os.MkdirAll(filepath.Dir(filepath.Join(dir, tc.file)), 0o755)
			target := tc.target
			switch target {
			case "HOST":
				target = hostFile(t)
			case "OUTDIR":
				out := t.TempDir()
				os.WriteFile(filepath.Join(out, "f"), []byte(secret), 0o644)
				relink(t, out, filepath.Join(dir, "sse/lib/out"))
				target = "out/f"
			case "../up/passwd":
				relink(t, "/etc", filepath.Join(dir, "sse/up"))
			}
			relink(t, target, filepath.Join(dir, filepath.FromSlash(tc.file)))
			ps := Validate(dir)
			found := false
			for _, p := range ps {
				found = found || (strings.Contains(p.File, "sse") && strings.Contains(p.Msg, "symlink out of the task folder"))
			}
			if !found {
				t.Errorf("Validate() lacks a problem for %s:\n%s", tc.file, ps.Error())
			}
			files, err := Files(dir)
			if err == nil || !strings.Contains(err.Error(), "sse/") || !strings.Contains(err.Error(), "symlink out of the task folder") {
				t.Errorf("Files() = %v, want an error naming the link", err)
			}
			if _, ok := files[tc.file]; ok {
				t.Errorf("Files() hashed %s, a link out of the folder", tc.file)
			}
		})
	}
	t.Run("a link inside the folder is a task file", func(t *testing.T) {
		hostile.Case(t, "task files that point outside")
		dir := makeTask(t, t.TempDir(), "gjson-196-bf4efcb", nil)
		relink(t, "config.yaml", filepath.Join(dir, "sse/alias.yaml"))
		files, err := Files(dir)
		if err != nil || files["sse/alias.yaml"] != files["sse/config.yaml"] {
			t.Errorf("Files() = %v, %v; want the inner link hashed as its target", files["sse/alias.yaml"], err)
		}
		relink(t, "/etc/hostname", filepath.Join(dir, "sse/host"))
		if _, err := Files(dir); err == nil {
			t.Errorf("Files() hashed sse/host, a link to /etc/hostname")
		}
	})
}

// TestHostileCatalogCollisions: ids that differ only in case name one case
// image (image names are lower case), so a catalog or an images lock that
// holds two is refused, as a dataset folder is; and a task file whose name
// is not UTF-8 is refused by the manifest, which could only write it as
// "\ufffd" (two such files were one key, and --check never matched).
func TestHostileCatalogCollisions(t *testing.T) {
	t.Run("catalog ids that differ only in case", func(t *testing.T) {
		hostile.Case(t, "names: catalog ids")
		m := Manifest{Dataset: "ds", Version: "v1", Tasks: []ManifestTask{
			{ID: "GJSON-1", Image: "case/ds/gjson-1", Arch: []string{"amd64"}, Checks: []string{}, Files: map[string]string{}},
			{ID: "gjson-1", Image: "case/ds/gjson-1", Arch: []string{"amd64"}, Checks: []string{}, Files: map[string]string{}},
		}}
		b, _ := json.Marshal(m)
		_, err := ParseManifest("catalog", b)
		if err == nil || !strings.Contains(err.Error(), "GJSON-1 and gjson-1 differ only in case") || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseManifest() = %v, want one line saying GJSON-1 and gjson-1 differ only in case", err)
		}
	})
	t.Run("lock ids that differ only in case", func(t *testing.T) {
		hostile.Case(t, "names: catalog ids")
		img := `{"digest":"sha256:` + strings.Repeat("0", 64) + `","files_sha256":"` + strings.Repeat("0", 64) + `","revision":""}`
		_, err := ParseLock("lock", []byte(`{"dataset":"ds","version":"v1","images":{"Gjson-1":`+img+`,"gjson-1":`+img+`}}`))
		if err == nil || !strings.Contains(err.Error(), "differ only in case") {
			t.Errorf("ParseLock() = %v, want an error saying the ids differ only in case", err)
		}
	})
	t.Run("task file names that are not UTF-8", func(t *testing.T) {
		hostile.Case(t, "names: task files that are not UTF-8")
		dir := makeDataset(t)
		task := filepath.Join(dir, "gjson-196-bf4efcb")
		for _, n := range []string{"a\x80", "a\x81"} {
			if err := os.WriteFile(filepath.Join(task, "src", n), []byte(n), 0o644); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					os.MkdirAll(filepath.Join(task, "src"), 0o755)
					err = os.WriteFile(filepath.Join(task, "src", n), []byte(n), 0o644)
				}
				if err != nil {
					t.Skipf("this file system refuses non-UTF-8 names: %v", err)
				}
			}
		}
		d, err := LoadDataset(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.Manifest()
		if err == nil || !strings.Contains(err.Error(), `"src/a\x80" (and 1 more): its name is not UTF-8`) {
			t.Errorf("Manifest() = %v, want the file named and refused", err)
		}
	})
}
