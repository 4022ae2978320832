package assemble

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// hostileCase is a small case image: accounts (passwd and group as given),
// SOURCE_DIR /src/proj, and the extra entries, in a second layer.
func hostileCase(t *testing.T, pw, gr string, env []string, extra ...fe) v1.Image {
	t.Helper()
	base := layer(t,
		dir("etc", 0o755),
		reg("etc/passwd", 0o644, pw),
		reg("etc/group", 0o644, gr),
		reg("etc/login.defs", 0o644, "SYS_UID_MIN 100\nSYS_UID_MAX 999\n"),
		dir("src", 0o755), dir("src/proj", 0o755),
		reg("src/proj/main.go", 0o644, "package main\n"),
	)
	if len(extra) == 0 {
		return image(t, env, base)
	}
	return image(t, env, base, layer(t, extra...))
}

const (
	okPasswd = "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
	okGroup  = "root:x:0:\ndaemon:x:1:\nsudo:x:27:\nshadow:x:42:\ndocker:x:990:\n"
)

// TestHostileContract: whatever the case image says, the paths of
// SPEC.md section 12 end as the contract says, or the assembly is refused
// with one line and nothing left behind.
func TestHostileContract(t *testing.T) {
	type check struct {
		path     string
		mode     int64
		uid, gid int
	}
	owned := []struct {
		name  string
		extra []fe
		want  []check
	}{
		{"SOURCE_DIR owned by 1000", []fe{own(dir("src/proj", 0o755), 1000, 1000)}, []check{{"ssebench-repo", 0o700, 0, 0}, {"src/proj", 0o755, 1000, 1000}}},
		{"SOURCE_DIR owned by 1000, mode 0777", []fe{own(dir("src/proj", 0o777), 1000, 1000)}, []check{{"ssebench-repo", 0o700, 0, 0}}},
		{"SOURCE_DIR owned by a deleted user", []fe{own(dir("src/proj", 0o750), 1001, 1001)}, []check{{"ssebench-repo", 0o700, 0, 0}}},
		{"SOURCE_DIR setgid, group 1000", []fe{own(dir("src/proj", 0o2775), 0, 1000)}, []check{{"ssebench-repo", 0o2700, 0, 0}}},
		{"/ssebench owned by 1000", []fe{own(dir("ssebench", 0o755), 1000, 1000), reg("ssebench/config.yaml", 0o644, "id: x\n")}, []check{{"ssebench", 0o700, 0, 0}}},
		{"/ssebench owned by 1000, mode 0700", []fe{own(dir("ssebench", 0o700), 1000, 1000)}, []check{{"ssebench", 0o700, 0, 0}}},
		{"/ssebench without a directory entry", []fe{reg("ssebench/config.yaml", 0o644, "id: x\n")}, []check{{"ssebench", 0o700, 0, 0}}},
		{"/var/lib/ssebench owned by 1000", []fe{dir("var", 0o755), dir("var/lib", 0o755), own(dir("var/lib/ssebench", 0o777), 1000, 1000)}, []check{{"var/lib/ssebench", 0o700, 0, 0}}},
		{"/home/model owned by root 0700", []fe{dir("home", 0o755), dir("home/model", 0o700)}, []check{{"home/model", 0o755, 1000, 1000}}},
	}
	for _, tc := range owned {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "contract: owners of reserved paths")
			ti := assembleTool(t, hostileCase(t, okPasswd, okGroup, nil, tc.extra...), runtimeImage(t))
			f := flatten(t, ti)
			for _, w := range tc.want {
				n := f.node(t, w.path)
				if n.Header.Mode&0o7777 != w.mode || n.Header.Uid != w.uid || n.Header.Gid != w.gid {
					t.Errorf("/%s: mode %04o owner %d:%d, want %04o %d:%d", w.path, n.Header.Mode, n.Header.Uid, n.Header.Gid, w.mode, w.uid, w.gid)
				}
			}
			if fails, err := Verify(context.Background(), ti, ""); err != nil || len(fails) != 0 {
				t.Errorf("Verify() = %v, %v; want no failure", fails, err)
			}
		})
	}

	refused := []struct {
		name, passwd, group string
		extra               []fe
		want                string
	}{
		{"sse-runner uid 0", okPasswd + "sse-runner:x:0:999::/nonexistent:/usr/sbin/nologin\n", okGroup + "sse-runner:x:999:\n", nil, "sse-runner has uid 0"},
		{"sse-runner gid 0", okPasswd + "sse-runner:x:999:0::/nonexistent:/usr/sbin/nologin\n", okGroup, nil, "primary group 0"},
		{"sse-runner in sudo as primary", okPasswd + "sse-runner:x:999:27::/nonexistent:/usr/sbin/nologin\n", okGroup, nil, "primary group 27"},
		{"sse-runner in docker as primary", okPasswd + "sse-runner:x:999:990::/nonexistent:/usr/sbin/nologin\n", okGroup, nil, `is "docker"`},
		{"sse-runner shares daemon's uid", okPasswd + "sse-runner:x:1:999::/nonexistent:/usr/sbin/nologin\n", okGroup + "sse-runner:x:999:\n", nil, `shares uid 1 with "daemon"`},
		{"sse-runner twice", okPasswd + "sse-runner:x:998:998::/:/bin/sh\nsse-runner:x:0:0::/:/bin/sh\n", okGroup + "sse-runner:x:998:\n", nil, "second or malformed entry"},
		{"sse-runner malformed", okPasswd + "sse-runner:x:0:0::/:/bin/sh:extra\n", okGroup, nil, "second or malformed entry"},
		{"sse-runner as NIS line", okPasswd + "+sse-runner:x:0:0::/:/bin/sh\n", okGroup, nil, "second or malformed entry"},
		{"/ssebench a symlink into SOURCE_DIR", okPasswd, okGroup, []fe{symlink("ssebench", "src/proj")}, "/ssebench in case is a symlink"},
		{"/ssebench-repo a symlink", okPasswd, okGroup, []fe{symlink("ssebench-repo", "/tmp")}, "/ssebench-repo in case is a symlink"},
		{"/home a symlink", okPasswd, okGroup, []fe{symlink("home", "/ssebench")}, "/home in case is a symlink"},
		{"/var/lib a symlink", okPasswd, okGroup, []fe{dir("var", 0o755), symlink("var/lib", "/src/proj")}, "/var/lib in case is a symlink"},
		{"/usr/local/bin a symlink", okPasswd, okGroup, []fe{dir("usr", 0o755), dir("usr/local", 0o755), symlink("usr/local/bin", "/src/proj")}, "/usr/local/bin in case is a symlink"},
		{"/var/lib a file", okPasswd, okGroup, []fe{dir("var", 0o755), reg("var/lib", 0o644, "x")}, "/var/lib in case is a file"},
		{"/etc/shadow a symlink", okPasswd, okGroup, []fe{symlink("etc/shadow", "/src/proj/shadow")}, "/etc/shadow in case is a symlink"},
		{"/etc/group a symlink", okPasswd, okGroup, []fe{symlink("etc/group", "/src/proj/group")}, "/etc/group in case is a symlink"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "contract: refused case images")
			tmp := t.TempDir()
			_, err := Tool(context.Background(), hostileCase(t, tc.passwd, tc.group, nil, tc.extra...), runtimeImage(t),
				WithSourceDir("/src/proj"), WithTempDir(tmp), WithRefs("case", "runtime"))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Tool() = %v, want one line with %q", err, tc.want)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("left %d files in the temporary directory", len(left))
			}
		})
	}

	t.Run("sse-runner kept when unprivileged, without its groups", func(t *testing.T) {
		hostile.Case(t, "contract: refused case images")
		ti := assembleTool(t, hostileCase(t, okPasswd+"sse-runner:x:998:998::/nonexistent:/usr/sbin/nologin\n",
			"root:x:0:\nsudo:x:27:sse-runner\nsse-runner:x:998:\n", nil), runtimeImage(t))
		if ti.RunnerUID != 998 || ti.RunnerGID != 998 {
			t.Errorf("sse-runner is %d:%d, want 998:998", ti.RunnerUID, ti.RunnerGID)
		}
		if g := flatten(t, ti).files["etc/group"]; strings.Contains(g, "sudo:x:27:sse-runner") {
			t.Errorf("sse-runner is still in sudo:\n%s", g)
		}
	})
}

// TestHostileEnv: the case image's ENV does not steer the runtime.
func TestHostileEnv(t *testing.T) {
	for _, kv := range []string{"SSE_RUNNER_USER=root", "SSE_TASK_ROOT=/src/proj", "SSE_RESULTS=/tmp", "SSE_ADMIN_SOCKET=/tmp/a.sock", "TIMEOUT=0", "SOURCE_DIR=/", "SSE_WORK_DIR=/src/proj", "SSE_KEEP_ALIVE=1"} {
		t.Run(kv, func(t *testing.T) {
			hostile.Case(t, "contract: case ENV")
			ti := assembleTool(t, hostileCase(t, okPasswd, okGroup, []string{"PATH=/usr/bin", kv, "GOPATH=/go"}), runtimeImage(t))
			cf, err := ti.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(cf.Config.Env, " "); got != "PATH=/usr/bin GOPATH=/go" {
				t.Errorf("tool image ENV = %q, want the case's without %s", got, kv)
			}
		})
	}
}

// plant appends a layer to a tool image, keeping its manifest annotations,
// and optionally sets its ENV.
func plant(t *testing.T, ti v1.Image, env []string, entries ...fe) v1.Image {
	t.Helper()
	img := ti
	var err error
	if len(entries) > 0 {
		if img, err = mutate.AppendLayers(ti, layer(t, entries...)); err != nil {
			t.Fatal(err)
		}
	}
	if env != nil {
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		c.Env = env
		if img, err = mutate.Config(img, c); err != nil {
			t.Fatal(err)
		}
	}
	m, err := ti.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	return mutate.Annotations(img, m.Annotations).(v1.Image)
}

// TestHostileVerify: verify finds every planted violation, names the path
// and the rule, and says nothing about a clean tool image.
func TestHostileVerify(t *testing.T) {
	const pwModel1001 = okPasswd + "model:x:1001:1001::/home/model:/bin/sh\n"
	c := hostileCase(t, pwModel1001, okGroup+"model:x:1001:\n", []string{"PATH=/usr/local/bin:/usr/bin"},
		dir("opt", 0o755), own(reg("opt/old-model-file", 0o644, "x"), 1001, 1001),
		dir("usr", 0o755), dir("usr/bin", 0o755), reg("usr/bin/passwd", 0o4755, "suid passwd"))
	ti := assembleTool(t, c, runtimeImage(t))
	clean := assembleTool(t, hostileCase(t, okPasswd, okGroup, []string{"PATH=/usr/local/bin:/usr/bin"},
		dir("usr", 0o755), dir("usr/bin", 0o755), reg("usr/bin/passwd", 0o4755, "suid passwd"), own(reg("usr/bin/chage", 0o2755, "sgid"), 0, 42)), runtimeImage(t))
	if fails, err := Verify(context.Background(), clean, ""); err != nil || len(fails) != 0 {
		t.Fatalf("Verify(clean tool image) = %v, %v; want nothing", fails, err)
	}
	pw := "root:x:0:0:root:/root:/bin/bash\nmodel:x:1000:1000::/home/model:/bin/bash\nsse-runner:x:999:999::/nonexistent:/usr/sbin/nologin\n"
	for _, tc := range []struct {
		class, name string
		env         []string
		entries     []fe
		want        string // the finding, up to its rule
		rule        string
		warning     bool
	}{
		{"verify: owners", "model owns a toolchain file", nil, []fe{dir("usr", 0o755), dir("usr/bin", 0o755), own(reg("usr/bin/cc", 0o755, "cc"), 1000, 1000)}, "owner: /usr/bin/cc: owned by uid 1000 (model) outside SOURCE_DIR", "§12: model must not change a toolchain", false},
		{"verify: owners", "model owns a directory", nil, []fe{own(dir("opt/go", 0o755), 1000, 0)}, "owner: /opt/go: owned by uid 1000", "§12", false},
		{"verify: owners", "model's group may write", nil, []fe{dir("etc", 0o755), own(reg("etc/profile", 0o664, "x"), 0, 1000)}, "owner: /etc/profile: group 1000 (model) may write it", "§12", false},
		{"verify: owners", "deleted user's file", nil, nil, `owner: /opt/old-model-file: owned by uid 1001 of the deleted user "model"`, "§12", false},
		{"verify: links", "/etc/shadow into SOURCE_DIR", nil, []fe{dir("etc", 0o755), symlink("etc/shadow", "/src/proj/shadow")}, `link: /etc/shadow: a symlink to "/src/proj/shadow", which model can write`, "§12", false},
		{"verify: links", "/etc/passwd into /tmp", nil, []fe{dir("tmp", 0o1777), dir("etc", 0o755), symlink("etc/passwd", "../tmp/passwd")}, `link: /etc/passwd: a symlink to "../tmp/passwd", which model can write`, "§12", false},
		{"verify: links", "/etc/gshadow elsewhere", nil, []fe{dir("etc", 0o755), symlink("etc/gshadow", "/usr/share/gshadow")}, `link: /etc/gshadow: a symlink to "/usr/share/gshadow"`, "§12", false},
		{"verify: links", "/ssebench into SOURCE_DIR", nil, []fe{symlink("ssebench", "src/proj")}, `link: /ssebench: a symlink to "src/proj", which model can write`, "§12: model must not read /ssebench", false},
		{"verify: links", "/var/lib/ssebench through /var/lib", nil, []fe{dir("var", 0o755), symlink("var/lib", "/home/model")}, `link: /var/lib/ssebench: reached through the symlink /var/lib to "/home/model", which model can write`, "§12", false},
		{"verify: setuid", "setuid root shell", nil, []fe{dir("usr", 0o755), dir("usr/local", 0o755), dir("usr/local/bin", 0o755), reg("usr/local/bin/rootsh", 0o4755, "sh")}, "setuid: /usr/local/bin/rootsh: a setuid or setgid program (mode 4755, owner 0:0)", "§12: model must not become another user", false},
		{"verify: setuid", "setgid shadow", nil, []fe{dir("opt", 0o755), own(reg("opt/peek", 0o2755, "x"), 0, 42)}, "setuid: /opt/peek: a setuid or setgid program (mode 2755, owner 0:42)", "§12", false},
		{"verify: setuid", "known name, not root's", nil, []fe{dir("usr", 0o755), dir("usr/bin", 0o755), own(reg("usr/bin/su", 0o4755, "x"), 2, 2)}, "setuid: /usr/bin/su: a setuid or setgid program (mode 4755, owner 2:2)", "§12", false},
		{"verify: accounts", "second root", nil, []fe{dir("etc", 0o755), reg("etc/passwd", 0o644, pw+"toor:x:0:0::/root:/bin/sh\n")}, `accounts: /etc/passwd: user "toor" has uid 0: a second root`, "§12", false},
		{"verify: accounts", "passwordless in passwd", nil, []fe{dir("etc", 0o755), reg("etc/passwd", 0o644, pw+"guest::1500:1500::/:/bin/sh\n")}, `accounts: /etc/passwd: user "guest" has no password`, "§12", false},
		{"verify: accounts", "empty shadow password", nil, []fe{dir("etc", 0o755), own(reg("etc/shadow", 0o640, "root::19000:0:99999:7:::\n"), 0, 42)}, `accounts: /etc/shadow: user "root" has an empty password`, "§12", false},
		{"verify: accounts", "model has root's uid", nil, []fe{dir("etc", 0o755), reg("etc/passwd", 0o644, "root:x:0:0:root:/root:/bin/bash\nmodel:x:0:0::/home/model:/bin/bash\nsse-runner:x:999:999::/nonexistent:/usr/sbin/nologin\n")}, `accounts: /etc/passwd: model is`, "§12", false},
		{"verify: env", "runner user in ENV", []string{"PATH=/usr/bin", "SSE_RUNNER_USER=root"}, nil, "env: ENV sets SSE_RUNNER_USER, which only the run may set", "§16", false},
		{"verify: env", "TIMEOUT in ENV", []string{"TIMEOUT=0"}, nil, "env: ENV sets TIMEOUT", "§16", false},
		{"verify: PATH", "/tmp first in PATH", []string{"PATH=/tmp:/usr/bin"}, []fe{dir("tmp", 0o1777)}, "path: /tmp: model can add programs to this directory, entry 1 of PATH", "§12", false},
		{"verify: PATH", "SOURCE_DIR in PATH", []string{"PATH=/src/proj:/usr/bin"}, nil, "path: /src/proj: model can add programs", "§12", false},
		{"verify: PATH", "home bin in PATH", []string{"PATH=/usr/local/bin:/home/model/bin:/usr/bin"}, []fe{own(dir("home/model/bin", 0o755), 1000, 1000)}, "path: /home/model/bin: model can add programs to this directory, entry 2 of PATH", "§12", false},
		{"verify: PATH", "sticky GOPATH/bin first in PATH", []string{"PATH=/go/bin:/usr/bin", "GOPATH=/go"}, []fe{dir("go", 0o755), dir("go/bin", 0o1777)}, "path: /go/bin: model can add programs to this directory, entry 1 of PATH", "§12: model must not change a toolchain", false},
		{"verify: PATH", "last PATH entry sticky", []string{"PATH=/usr/bin:/opt/last"}, []fe{dir("opt", 0o755), dir("opt/last", 0o1777)}, "path: /opt/last: model can add programs to this directory, entry 2 of PATH", "§12", false},
		{"verify: PATH", "relative PATH entry", []string{"PATH=/usr/bin:."}, nil, `path: entry 2 of PATH is ".", not an absolute path`, "§12", false},
		{"verify: PATH", "empty PATH entry", []string{"PATH=/usr/bin::/bin"}, nil, `path: entry 2 of PATH is "", not an absolute path`, "§12", false},
		{"verify: PATH", "sticky module cache directory", []string{"PATH=/usr/bin", "GOMODCACHE=/go/pkg/mod"}, []fe{dir("go", 0o755), dir("go/pkg", 0o755), dir("go/pkg/mod", 0o755), dir("go/pkg/mod/github.com", 0o1777)}, "path: /go/pkg/mod/github.com: model can add files to this directory under GOMODCACHE", "§12", false},
		{"verify: PATH", "sticky CARGO_HOME", []string{"PATH=/usr/bin", "CARGO_HOME=/usr/local/cargo"}, []fe{dir("usr", 0o755), dir("usr/local", 0o755), dir("usr/local/cargo", 0o1777)}, "path: /usr/local/cargo: model can write CARGO_HOME", "§12", false},
		{"task files that point outside", "task script into SOURCE_DIR", nil, []fe{dir("ssebench/scripts", 0o700), symlink("ssebench/scripts/build.sh", "/src/proj/build.sh")}, `task-files: /ssebench/scripts/build.sh: a symlink to "/src/proj/build.sh", out of /ssebench, which model can write`, "§12: nothing model can write", false},
		{"task files that point outside", "task script relative into SOURCE_DIR", nil, []fe{dir("ssebench/scripts", 0o700), symlink("ssebench/scripts/test.sh", "../../src/proj/t.sh")}, `task-files: /ssebench/scripts/test.sh: a symlink to "../../src/proj/t.sh", out of /ssebench, which model can write`, "§12", false},
		{"task files that point outside", "config into /home/model", nil, []fe{symlink("ssebench/config.yaml", "/home/model/c.yaml")}, `task-files: /ssebench/config.yaml: a symlink to "/home/model/c.yaml", out of /ssebench, which model can write`, "§12", false},
		{"task files that point outside", "poc into /tmp", nil, []fe{dir("tmp", 0o1777), dir("ssebench/pocs", 0o700), symlink("ssebench/pocs/poc", "/tmp/poc")}, `task-files: /ssebench/pocs/poc: a symlink to "/tmp/poc", out of /ssebench, which model can write`, "§12", false},
		{"task files that point outside", "task script to /etc/shadow", nil, []fe{dir("ssebench/scripts", 0o700), symlink("ssebench/scripts/run.sh", "/etc/shadow")}, `task-files: /ssebench/scripts/run.sh: a symlink to "/etc/shadow", out of /ssebench`, "§12", false},
		{"task files that point outside", "scripts folder a symlink into SOURCE_DIR", nil, []fe{symlink("ssebench/scripts", "/src/proj")}, `task-files: /ssebench/scripts: a symlink to "/src/proj", out of /ssebench, which model can write`, "§12", false},
		{"task files that point outside", "hard link to a SOURCE_DIR file", nil, []fe{own(reg("src/proj/h.sh", 0o755, "x"), 1000, 1000), hardlink("ssebench/h.sh", "src/proj/h.sh", 0o755)}, `task-files: /ssebench/h.sh: a hard link to /src/proj/h.sh, out of /ssebench`, "§12", false},
		{"task files that point outside", "task file owned by model", nil, []fe{own(reg("ssebench/extra.sh", 0o755, "x"), 1000, 1000)}, `task-files: /ssebench/extra.sh: a file with mode 0755 owned by 1000:1000: model can write it`, "§12", false},
		{"verify: PATH", "GOPATH in SOURCE_DIR", []string{"PATH=/usr/bin", "GOPATH=/src/proj/gopath"}, []fe{dir("src/proj/gopath", 0o755)}, "path: /src/proj/gopath: model can write GOPATH", "§12", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, tc.class)
			img := plant(t, ti, tc.env, tc.entries...)
			fails, err := Verify(context.Background(), img, "")
			if err != nil {
				t.Fatal(err)
			}
			var all []string
			for _, f := range fails {
				s := f.String()
				all = append(all, s)
				if strings.HasPrefix(s, tc.want) {
					if !strings.Contains(f.Rule, tc.rule) || f.Warning != tc.warning {
						t.Errorf("%q: rule %q (want %q), warning %v (want %v)", s, f.Rule, tc.rule, f.Warning, tc.warning)
					}
					return
				}
			}
			t.Errorf("Verify() lacks %q; got:\n%s", tc.want, strings.Join(all, "\n"))
		})
	}
}

// lying is an image whose metadata says what the test wants; its layers
// are the real ones.
type lying struct {
	v1.Image
	mt  types.MediaType
	man func(*v1.Manifest)
	cfg func(*v1.ConfigFile)
}

func (l *lying) MediaType() (types.MediaType, error) {
	if l.mt != "" {
		return l.mt, nil
	}
	return l.Image.MediaType()
}

func (l *lying) Manifest() (*v1.Manifest, error) {
	m, err := l.Image.Manifest()
	if err != nil || l.man == nil {
		return m, err
	}
	m = m.DeepCopy()
	l.man(m)
	return m, nil
}

func (l *lying) ConfigFile() (*v1.ConfigFile, error) {
	cf, err := l.Image.ConfigFile()
	if err != nil || l.cfg == nil {
		return cf, err
	}
	cf = cf.DeepCopy()
	l.cfg(cf)
	return cf, nil
}

func withPlatform(t *testing.T, img v1.Image, arch, variant string) v1.Image {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = "linux", arch, variant
	out, err := mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHostileMetadata: broken metadata in a case or runtime image is
// refused before any layer is written, with one line naming the image and
// the layer.
func TestHostileMetadata(t *testing.T) {
	c, rt := caseImage(t), runtimeImage(t)
	bogus := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("ab", 32)}
	many := func(n int) func(*v1.Manifest) {
		return func(m *v1.Manifest) {
			for len(m.Layers) < n {
				m.Layers = append(m.Layers, m.Layers[0])
			}
		}
	}
	manyDiffs := func(n int) func(*v1.ConfigFile) {
		return func(cf *v1.ConfigFile) {
			for len(cf.RootFS.DiffIDs) < n {
				cf.RootFS.DiffIDs = append(cf.RootFS.DiffIDs, cf.RootFS.DiffIDs[0])
			}
		}
	}
	for _, tc := range []struct {
		class, name string
		c, rt       v1.Image
		want        string
	}{
		{"metadata: diffID", "case layer 1 diffID", &lying{Image: c, cfg: func(cf *v1.ConfigFile) { cf.RootFS.DiffIDs[1] = bogus }}, rt, "case: layer 1 (sha256:"},
		{"metadata: diffID", "case layer 0 diffID", &lying{Image: c, cfg: func(cf *v1.ConfigFile) { cf.RootFS.DiffIDs[0] = bogus }}, rt, "but the config's diff_id says sha256:abab"},
		{"metadata: diffID", "diffIDs swapped", &lying{Image: c, cfg: func(cf *v1.ConfigFile) {
			d := cf.RootFS.DiffIDs
			d[0], d[2] = d[2], d[0]
		}}, rt, "case: layer 0"},
		{"metadata: diffID", "runtime layer diffID", c, &lying{Image: rt, cfg: func(cf *v1.ConfigFile) { cf.RootFS.DiffIDs[0] = bogus }}, "runtime: layer 0 (sha256:"},
		{"metadata: diff_ids count", "one diff_id missing", &lying{Image: c, cfg: func(cf *v1.ConfigFile) { cf.RootFS.DiffIDs = cf.RootFS.DiffIDs[:2] }}, rt, "case has 3 layers but its config lists 2 diff_ids"},
		{"metadata: diff_ids count", "one diff_id too many", &lying{Image: c, cfg: func(cf *v1.ConfigFile) { cf.RootFS.DiffIDs = append(cf.RootFS.DiffIDs, bogus) }}, rt, "case has 3 layers but its config lists 4 diff_ids"},
		{"metadata: diff_ids count", "runtime without diff_ids", c, &lying{Image: rt, cfg: func(cf *v1.ConfigFile) { cf.RootFS.DiffIDs = nil }}, "runtime has 1 layers but its config lists 0 diff_ids"},
		{"metadata: media types", "manifest is an index", &lying{Image: c, mt: types.OCIImageIndex}, rt, `case has manifest media type "application/vnd.oci.image.index.v1+json"`},
		{"metadata: media types", "schema 1 manifest", &lying{Image: c, mt: types.DockerManifestSchema1Signed}, rt, "not an OCI or Docker image manifest"},
		{"metadata: media types", "garbled manifest type", c, &lying{Image: rt, mt: "application/vnd.oci.image.manifest.v1+jsoN"}, `runtime has manifest media type "application/vnd.oci.image.manifest.v1+jsoN"`},
		{"metadata: media types", "manifest says another type", &lying{Image: c, man: func(m *v1.Manifest) { m.MediaType = types.OCIManifestSchema1 }}, rt, "says its manifest is"},
		{"metadata: media types", "unknown config type", &lying{Image: c, man: func(m *v1.Manifest) { m.Config.MediaType = "application/octet-stream" }}, rt, `config media type "application/octet-stream"`},
		{"metadata: media types", "foreign layer", &lying{Image: c, man: func(m *v1.Manifest) { m.Layers[1].MediaType = types.DockerForeignLayer }}, rt, "case: layer 1 (sha256:"},
		{"metadata: media types", "garbled layer type", c, &lying{Image: rt, man: func(m *v1.Manifest) { m.Layers[0].MediaType = "application/vnd.oci.image.layer.v1.tar+gzip\x00" }}, "runtime: layer 0"},
		{"metadata: media types", "helm chart as a layer", &lying{Image: c, man: func(m *v1.Manifest) { m.Layers[2].MediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip" }}, rt, "which no tool image may carry"},
		{"metadata: layer count", "497 case layers", &lying{Image: c, man: many(497), cfg: manyDiffs(497)}, rt, "would have 502 layers"},
		{"metadata: layer count", "496 runtime layers", c, &lying{Image: rt, man: many(496), cfg: manyDiffs(496)}, "would have 503 layers"},
		{"metadata: platform", "arm64 runtime on an amd64 case", withPlatform(t, c, "amd64", ""), withPlatform(t, rt, "arm64", ""), "runtime is for linux/arm64 but case is for linux/amd64"},
		{"metadata: platform", "amd64 runtime on an arm64 case", withPlatform(t, c, "arm64", "v8"), withPlatform(t, rt, "amd64", ""), "runtime is for linux/amd64"},
		{"metadata: platform", "arm v6 runtime on an arm v7 case", withPlatform(t, c, "arm", "v7"), withPlatform(t, rt, "arm", "v6"), "runtime is for linux/arm/v6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, tc.class)
			tmp := t.TempDir()
			_, err := Tool(context.Background(), tc.c, tc.rt, WithSourceDir("/src/proj"), WithTempDir(tmp), WithRefs("case", "runtime"))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Tool() = %v, want one line with %q", err, tc.want)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("left %d files in the temporary directory", len(left))
			}
		})
	}
	t.Run("same platform passes", func(t *testing.T) {
		hostile.Case(t, "metadata: platform")
		assembleTool(t, withPlatform(t, c, "arm64", "v8"), withPlatform(t, rt, "arm64", ""))
	})
}

// TestHostileConfigsAndAccounts: huge configs and odd account files are
// refused with one line, or assembled into a tool image verify passes.
func TestHostileConfigsAndAccounts(t *testing.T) {
	c, rt := caseImage(t), runtimeImage(t)
	t.Run("config of 9 MiB", func(t *testing.T) {
		hostile.Case(t, "huge configs")
		big := &lying{Image: c, man: func(m *v1.Manifest) { m.Config.Size = 9 << 20 }}
		_, err := Tool(context.Background(), big, rt, WithSourceDir("/src/proj"), WithTempDir(t.TempDir()), WithRefs("case", "runtime"))
		if err == nil || !strings.Contains(err.Error(), "case has a config of 9437184 bytes") {
			t.Fatalf("Tool() = %v", err)
		}
	})
	t.Run("config with 100,000 ENV entries", func(t *testing.T) {
		hostile.Case(t, "huge configs")
		env := make([]string, 100000)
		for i := range env {
			env[i] = "SSE_X" + strings.Repeat("x", i%7) + "=" + strings.Repeat("v", 50)
		}
		ti := assembleTool(t, hostileCase(t, okPasswd, okGroup, env), rt)
		cf, _ := ti.ConfigFile()
		if len(cf.Config.Env) != 0 {
			t.Errorf("%d run-only variables kept", len(cf.Config.Env))
		}
	})

	refused := []struct{ name, passwd, group, want string }{
		{"NUL byte in passwd", okPasswd + "x:x:5:5::/:/bin/sh\x00\n", okGroup, "NUL byte"},
		{"passwd of 17 MiB", okPasswd + strings.Repeat("#\n", 17<<19), okGroup, "larger than"},
		{"two model users to edit", okPasswd + "model:x:1001:1001::/:/bin/sh\nmodel:x:1002:1002::/:/bin/sh\n", okGroup, "model"},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "account-file oddities")
			tmp := t.TempDir()
			_, err := Tool(context.Background(), hostileCase(t, tc.passwd, tc.group, nil), rt, WithSourceDir("/src/proj"), WithTempDir(tmp), WithRefs("case", "runtime"))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Tool() = %v, want one line with %q", err, tc.want)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("left %d files in the temporary directory", len(left))
			}
		})
	}
	// Oddities shadow-utils copes with: the result must still verify.
	for _, tc := range []struct{ name, passwd, group string }{
		{"CRLF lines", strings.ReplaceAll(okPasswd, "\n", "\r\n"), okGroup},
		{"no final newline", strings.TrimSuffix(okPasswd, "\n"), strings.TrimSuffix(okGroup, "\n")},
		{"NIS lines", okPasswd + "+::::::\n", okGroup + "+:::\n"},
		{"garbage lines", okPasswd + "garbage\n::::\n:x:5:5::/:/bin/sh\n", okGroup + "nocolons\n"},
		{"uid overflow", okPasswd + "big:x:99999999999:5::/:/bin/sh\n", okGroup},
		{"model in many groups", okPasswd + "model:x:1001:1001::/home/model:/bin/sh\n", okGroup + "model:x:1001:\nadm:x:4:model,model\n"},
		{"ubuntu at 1000 with sudo", okPasswd + "ubuntu:x:1000:1000::/home/ubuntu:/bin/bash\n", "root:x:0:\nsudo:x:27:ubuntu\nubuntu:x:1000:\n"},
		{"empty group file", okPasswd, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "account-file oddities")
			tmp := t.TempDir()
			ti, err := Tool(context.Background(), hostileCase(t, tc.passwd, tc.group, nil), rt, WithSourceDir("/src/proj"), WithTempDir(tmp), WithRefs("case", "runtime"))
			if err != nil {
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error is not one line: %q", err)
				}
				return // refused with one line is fine too
			}
			defer ti.Close()
			fails, err := Verify(context.Background(), ti, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fails {
				if f.Check == "accounts" && !f.Warning {
					t.Errorf("Verify() = %s", f)
				}
			}
		})
	}
}

// TestHostileVerifyMetadata: verify reports broken metadata of an image it
// is given, instead of calling it ok.
func TestHostileVerifyMetadata(t *testing.T) {
	ti := assembleTool(t, caseImage(t), runtimeImage(t))
	bogus := v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("cd", 32)}
	for _, tc := range []struct {
		name string
		img  v1.Image
		want string
	}{
		{"garbled manifest media type", &lying{Image: ti, mt: "application/vnd.oci.image.manifest.v1+jsoX"}, `manifest media type "application/vnd.oci.image.manifest.v1+jsoX"`},
		{"garbled layer media type", &lying{Image: ti, man: func(m *v1.Manifest) { m.Layers[4].MediaType = "application/x-garbage" }}, `layer 4`},
		{"diff_id of the source layer", &lying{Image: ti, cfg: func(cf *v1.ConfigFile) { cf.RootFS.DiffIDs[5] = bogus }}, "layer 5"},
		{"diff_ids short", &lying{Image: ti, cfg: func(cf *v1.ConfigFile) { cf.RootFS.DiffIDs = cf.RootFS.DiffIDs[1:] }}, "lists 7 diff_ids"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "verify: metadata")
			fails, err := Verify(context.Background(), tc.img, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fails {
				if f.Check == "metadata" && strings.Contains(f.Msg, tc.want) && strings.Contains(f.Rule, "SPEC.md") {
					return
				}
			}
			t.Errorf("Verify() lacks a metadata failure with %q: %v", tc.want, fails)
		})
	}
}

// TestHostileVerifyAgentConfig: an image whose config bypasses the
// entrypoint is reported.
func TestHostileVerifyAgentConfig(t *testing.T) {
	ti := assembleTool(t, caseImage(t), runtimeImage(t))
	for _, tc := range []struct {
		name string
		edit func(*v1.Config)
		want string
	}{
		{"a shell as ENTRYPOINT", func(c *v1.Config) { c.Entrypoint = []string{"/bin/sh", "-c"} }, `entrypoint: ENTRYPOINT is ["/bin/sh" "-c"]`},
		{"no ENTRYPOINT", func(c *v1.Config) { c.Entrypoint = nil }, "entrypoint: ENTRYPOINT is []"},
		{"ENV SSE_TASK_ROOT", func(c *v1.Config) { c.Env = append(c.Env, "SSE_TASK_ROOT=/src/proj") }, "env: ENV sets SSE_TASK_ROOT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "verify: env")
			cf, err := ti.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			c := *cf.Config.DeepCopy()
			tc.edit(&c)
			img, err := mutate.Config(ti, c)
			if err != nil {
				t.Fatal(err)
			}
			fails, err := Verify(context.Background(), img, "/src/proj")
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fails {
				if strings.HasPrefix(f.String(), tc.want) {
					return
				}
			}
			t.Errorf("Verify() lacks %q: %v", tc.want, fails)
		})
	}
}

// TestHostileSourceDir: a SOURCE_DIR on or around a reserved path is
// refused whoever passes it (--source, a config that skipped validation).
func TestHostileSourceDir(t *testing.T) {
	for _, src := range []string{"/", "/usr", "/usr/local", "/proc/self", "/sys", "/dev", "/run", "/var", "/var/lib", "/home", "/ssebench/x", "/etc/x", "/tmp/sse-archive"} {
		t.Run(src, func(t *testing.T) {
			hostile.Case(t, "names: reserved source")
			_, err := Tool(context.Background(), caseImage(t), runtimeImage(t), WithSourceDir(src), WithTempDir(t.TempDir()))
			if err == nil || !strings.Contains(err.Error(), "SOURCE_DIR") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Tool(source %s) = %v, want a one-line SOURCE_DIR error", src, err)
			}
		})
	}
}

// TestHostileAccountFiles: a case's deleted uid-1000 user takes along only
// a home that is its own (a real folder it owns with everything in it),
// and the account files the tool layer writes get their standard owner and
// mode whatever the case had.
func TestHostileAccountFiles(t *testing.T) {
	old := func(home string) string { return okPasswd + "old:x:1000:1000::" + home + ":/bin/sh\n" }
	system := []fe{reg("etc/hostname", 0o644, "case\n"), dir("usr", 0o755), dir("usr/bin", 0o755), reg("usr/bin/cc", 0o755, "cc"), dir("opt", 0o755), reg("opt/tool", 0o755, "t")}
	for _, tc := range []struct {
		name, home string
		extra      []fe
		kept       []string // must survive
	}{
		{"home /etc owned by the user", "/etc", []fe{own(dir("etc", 0o755), 1000, 1000)}, []string{"etc/hostname", "etc/login.defs"}},
		{"home /usr owned by the user", "/usr", []fe{own(dir("usr", 0o755), 1000, 1000)}, []string{"usr/bin/cc"}},
		{"home /opt with a root file in it", "/opt", []fe{own(dir("opt", 0o755), 1000, 1000), own(reg("opt/mine", 0o644, "m"), 1000, 1000)}, []string{"opt/tool"}},
		{"home /usr/bin, a toolchain folder", "/usr/bin", []fe{own(dir("usr/bin", 0o755), 1000, 1000)}, []string{"usr/bin/cc"}},
		{"home /etc/.. spelled", "/etc/../usr", []fe{own(dir("usr", 0o755), 1000, 1000)}, []string{"usr/bin/cc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "account files a case can still bend")
			c := hostileCase(t, old(tc.home), okGroup+"old:x:1000:\n", nil, append(append([]fe{}, system...), tc.extra...)...)
			f := flatten(t, assembleTool(t, c, runtimeImage(t)))
			for _, p := range tc.kept {
				if _, ok := f.view.Lookup(p); !ok {
					t.Errorf("/%s is gone: removing the old user's home %s took the system along", p, tc.home)
				}
			}
		})
	}
	t.Run("a private home still goes", func(t *testing.T) {
		hostile.Case(t, "account files a case can still bend")
		c := hostileCase(t, old("/home/old"), okGroup+"old:x:1000:\n", nil, dir("home", 0o755), own(dir("home/old", 0o700), 1000, 1000), own(reg("home/old/.bashrc", 0o644, "x"), 1000, 1000))
		f := flatten(t, assembleTool(t, c, runtimeImage(t)))
		if _, ok := f.view.Lookup("home/old/.bashrc"); ok {
			t.Errorf("the deleted user's private home /home/old is still there")
		}
		// and its home made of the system is kept (the case above)
		c = hostileCase(t, old("/etc"), okGroup+"old:x:1000:\n", nil, own(dir("etc", 0o755), 1000, 1000), reg("etc/hostname", 0o644, "x"))
		if _, ok := flatten(t, assembleTool(t, c, runtimeImage(t))).view.Lookup("etc/hostname"); !ok {
			t.Errorf("/etc/hostname is gone with the old user's home /etc")
		}
	})
	for _, tc := range []struct {
		name     string
		file     fe
		uid, gid int
		mode     int64
	}{
		{"shadow 0644 with root's hash", reg("etc/shadow", 0o644, "root:$6$HASH:19000:0:99999:7:::\n"), 0, 0, 0o640},
		{"shadow 0644 in group shadow", own(reg("etc/shadow", 0o644, "root:$6$HASH:19000:0:99999:7:::\n"), 0, 42), 0, 42, 0o640},
		{"shadow owned by model", own(reg("etc/shadow", 0o600, "root:$6$HASH:19000:0:99999:7:::\n"), 1000, 1000), 0, 0, 0o640},
		{"shadow in model's group", own(reg("etc/shadow", 0o640, "root:$6$HASH:19000:0:99999:7:::\n"), 0, 1000), 0, 0, 0o640},
		{"gshadow 0666", reg("etc/gshadow", 0o666, "root:*::\n"), 0, 0, 0o640},
		{"passwd owned by model", own(reg("etc/passwd", 0o644, okPasswd), 1000, 1000), 0, 0, 0o644},
		{"passwd setuid and group-writable", reg("etc/passwd", 0o4664, okPasswd), 0, 0, 0o644},
		{"group 0600 of a daemon", own(reg("etc/group", 0o600, okGroup), 1, 1), 0, 0, 0o644},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "account files a case can still bend")
			c := hostileCase(t, okPasswd, okGroup, nil, tc.file)
			f := flatten(t, assembleTool(t, c, runtimeImage(t)))
			n := f.node(t, tc.file.name)
			if h := n.Header; h.Uid != tc.uid || h.Gid != tc.gid || h.Mode&0o7777 != tc.mode {
				t.Errorf("/%s in the tool image: mode %04o owner %d:%d, want %04o %d:%d", tc.file.name, h.Mode&0o7777, h.Uid, h.Gid, tc.mode, tc.uid, tc.gid)
			}
		})
	}
}

// TestHostileTaskFilesReplaced: a case image whose /ssebench is not the
// task folder's sse/ (whited out, another config.yaml, a script added,
// removed or linked elsewhere) stops the tool build with one line, checked
// against the case's ssebench.task-sse label.
func TestHostileTaskFilesReplaced(t *testing.T) {
	cfg, build := "id: x\n", "#!/bin/sh\nmake\n"
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	label := task.DigestFiles(map[string]string{"config.yaml": sum(cfg), "scripts/build.sh": sum(build)})
	folder := []fe{dir("ssebench", 0o755), reg("ssebench/config.yaml", 0o644, cfg), dir("ssebench/scripts", 0o755), reg("ssebench/scripts/build.sh", 0o755, build)}
	labelled := func(t *testing.T, later ...fe) v1.Image {
		t.Helper()
		img := hostileCase(t, okPasswd, okGroup, nil, folder...)
		if len(later) > 0 {
			var err error
			if img, err = mutate.AppendLayers(img, layer(t, later...)); err != nil {
				t.Fatal(err)
			}
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		c.Labels = map[string]string{"ssebench.task-files": "abc", LabelTaskSSE: label}
		if img, err = mutate.Config(img, c); err != nil {
			t.Fatal(err)
		}
		return img
	}
	// The folder's own files assemble.
	assembleTool(t, labelled(t), runtimeImage(t))
	for _, tc := range []struct {
		name  string
		later []fe
	}{
		{"/ssebench whited out", []fe{reg(".wh.ssebench", 0, "")}},
		{"another config.yaml", []fe{reg("ssebench/config.yaml", 0o644, "id: x\nscripts:\n  test: /bin/true\n")}},
		{"a script whited out", []fe{reg("ssebench/scripts/.wh.build.sh", 0, "")}},
		{"a script added", []fe{reg("ssebench/scripts/test.sh", 0o755, "exit 0\n")}},
		{"/ssebench made opaque and only config.yaml again", []fe{reg("ssebench/.wh..wh..opq", 0, ""), reg("ssebench/config.yaml", 0o644, cfg)}},
		{"a script a symlink into SOURCE_DIR", []fe{symlink("ssebench/scripts/build.sh", "/src/proj/build.sh")}},
		{"a script a symlink to another task file", []fe{symlink("ssebench/scripts/build.sh", "../config.yaml")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "task files replaced by the case")
			_, err := Tool(context.Background(), labelled(t, tc.later...), runtimeImage(t), WithSourceDir("/src/proj"), WithTempDir(t.TempDir()), WithRefs("case", "runtime"))
			if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "/ssebench") {
				t.Fatalf("Tool() = %v, want one line refusing the case's /ssebench", err)
			}
		})
	}
}

// sparseLayer is a gzip layer holding one GNU sparse file of size bytes
// at name (and the directories above it).
func sparseLayer(t *testing.T, name string, size int64) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if err := hostile.WriteSparse(zw, tw, name, size, []byte("package main\n")); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestHostileSparseCase: a case layer of a few hundred bytes holding a
// sparse file of 8 EiB under SOURCE_DIR or /ssebench is refused in one line
// naming the layer and the path, at once; before, assembly copied (or
// hashed) zeros until the disk was full or for ever.
func TestHostileSparseCase(t *testing.T) {
	for _, tc := range []struct{ name, path string }{
		{"under SOURCE_DIR", "src/proj/huge.go"},
		{"under /ssebench", "ssebench/sse/scripts/test.sh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "sizes: sparse and huge entries")
			l := sparseLayer(t, tc.path, 1<<63-1)
			img, err := mutate.AppendLayers(hostileCase(t, okPasswd, okGroup, nil), l)
			if err != nil {
				t.Fatal(err)
			}
			d, _ := l.Digest()
			tmp := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err = Tool(ctx, img, runtimeImage(t), WithSourceDir("/src/proj"), WithTempDir(tmp), WithRefs("case", "runtime"))
			if err == nil || !strings.Contains(err.Error(), d.String()) || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), "more than any real image holds") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Tool() = %v, want one line naming layer %s and %q", err, d, tc.path)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("left %d files in the temporary directory", len(left))
			}
		})
	}
}

// TestHostileCancelInContent: a cancelled assembly stops inside the
// loops over content (the SOURCE_DIR copy, the task files' hashing), not
// once they are done. A sparse file of 1000 MiB (under the limits) is read
// as zeros that no read of the blob produces, so only a look at the
// context between reads stops it; before, it went on for seconds after
// SIGINT.
func TestHostileCancelInContent(t *testing.T) {
	for _, tc := range []struct{ name, path string }{
		{"copying SOURCE_DIR", "src/proj/zeros.bin"},
		{"hashing the task files", "ssebench/sse/data.bin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "signals: content loops and a second Ctrl-C")
			img, err := mutate.AppendLayers(hostileCase(t, okPasswd, okGroup, nil), sparseLayer(t, tc.path, 1000<<20))
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(tc.path, "ssebench/") {
				// The label makes the assembly hash /ssebench.
				cf, _ := img.ConfigFile()
				cfg := cf.Config
				cfg.Labels = map[string]string{LabelTaskSSE: strings.Repeat("0", 64)}
				if img, err = mutate.Config(img, cfg); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := Tool(ctx, img, runtimeImage(t), WithSourceDir("/src/proj"), WithTempDir(t.TempDir()), WithRefs("case", "runtime"))
				done <- err
			}()
			time.Sleep(200 * time.Millisecond)
			cancelled := time.Now()
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("Tool() = %v, want the context's error", err)
				}
				t.Logf("returned %s after the cancel", time.Since(cancelled))
				if d := time.Since(cancelled); d > 250*time.Millisecond {
					t.Errorf("Tool() returned %s after the cancel", d.Round(time.Millisecond))
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Tool() still runs 30 s after the cancel")
			}
		})
	}
}

// TestHostileMissingPathEntries: a PATH entry or toolchain directory that
// does not exist in the case image, under a directory model can write
// (its home, /tmp, SOURCE_DIR, a sticky directory, through a symlink), is
// refused by the assembly and fails verify as one that exists would: model
// creates it, and what it puts there runs in the grader's checks. One
// under a root-owned directory is fine.
func TestHostileMissingPathEntries(t *testing.T) {
	extra := []fe{dir("tmp", 0o1777), dir("opt", 0o755), dir("opt/scratch", 0o1777), symlink("opt/link", "/tmp"), dir("usr", 0o755), dir("usr/local", 0o755)}
	for _, tc := range []struct {
		name, env, want, verifyPath string
	}{
		{"/home/model/bin", "PATH=/home/model/bin:/usr/bin", "/home/model/bin, which does not exist yet, inside /home/model", "/home/model/bin"},
		{"/tmp/bin", "PATH=/usr/bin:/tmp/bin", "entry 2 of the PATH of case is /tmp/bin, which does not exist yet, inside /tmp", "/tmp/bin"},
		{"SOURCE_DIR/tools/bin", "PATH=/src/proj/tools/bin:/usr/bin", "/src/proj/tools/bin, which does not exist yet, inside /src/proj", "/src/proj/tools/bin"},
		{"GOPATH=/tmp/gopath", "GOPATH=/tmp/gopath", "GOPATH of case is /tmp/gopath, which does not exist yet, inside /tmp", "/tmp/gopath"},
		{"through a symlink to /tmp", "PATH=/opt/link/bin:/usr/bin", "/opt/link/bin, which does not exist yet, inside /tmp", "/opt/link/bin"},
		{"in a sticky directory", "CARGO_HOME=/opt/scratch/cargo", "CARGO_HOME of case is /opt/scratch/cargo, which does not exist yet, inside /opt/scratch, which every user can write (mode 1777)", "/opt/scratch/cargo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "paths: PATH entries that do not exist yet")
			c := hostileCase(t, okPasswd, okGroup, []string{tc.env}, extra...)
			ti, err := Tool(context.Background(), c, runtimeImage(t), WithSourceDir("/src/proj"), WithTempDir(t.TempDir()), WithRefs("case", ""))
			if err == nil {
				ti.Close()
				t.Fatalf("Tool() = nil error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Tool() = %q, want one line with %q", err, tc.want)
			}

			// A tool image whose ENV was set by hand fails verify.
			good := assembleTool(t, hostileCase(t, okPasswd, okGroup, []string{"PATH=/usr/bin"}, extra...), runtimeImage(t))
			cf, err := good.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			cfg := cf.Config
			cfg.Env = append(cfg.Env, tc.env)
			tampered, err := mutate.Config(good, cfg)
			if err != nil {
				t.Fatal(err)
			}
			fails, err := Verify(context.Background(), tampered, "/src/proj")
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, f := range fails {
				found = found || f.Check == "path" && f.Path == tc.verifyPath && strings.Contains(f.Msg, "does not exist, and model can create it")
			}
			if !found {
				t.Errorf("Verify() = %v, want a path failure for %s", fails, tc.verifyPath)
			}
		})
	}
	t.Run("under a root-owned directory", func(t *testing.T) {
		hostile.Case(t, "paths: PATH entries that do not exist yet")
		ti := assembleTool(t, hostileCase(t, okPasswd, okGroup, []string{"PATH=/usr/local/sbin:/usr/local/go/bin:/usr/bin", "GOPATH=/opt/go"}, extra...), runtimeImage(t))
		fails, err := Verify(context.Background(), ti, "")
		if err != nil || len(fails) != 0 {
			t.Errorf("Verify() = %v, %v; want no failure", fails, err)
		}
	})
}

// TestHostileRepoOwners: whatever owners the case gives SOURCE_DIR's
// entries (uid 1000, model's after the accounts change; a user the
// accounts change deletes), their copies in /ssebench-repo are root's, so
// the tool image passes verify. Before, a file owned by 1000 kept its
// owner there and verify failed the image ("owned by uid 1000 (model)
// outside SOURCE_DIR").
func TestHostileRepoOwners(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []fe
	}{
		{"a file owned by 1000", []fe{own(reg("src/proj/owned.go", 0o644, "package main\n"), 1000, 1000)}},
		{"a directory and its file owned by 1000", []fe{own(dir("src/proj/pkg", 0o755), 1000, 1000), own(reg("src/proj/pkg/a.go", 0o644, "package pkg\n"), 1000, 1000)}},
		{"a symlink owned by 1000", []fe{own(symlink("src/proj/link", "main.go"), 1000, 1000)}},
		{"a file of a deleted user", []fe{own(reg("src/proj/old.go", 0o644, "package main\n"), 1001, 1001)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "contract: owners of reserved paths")
			pw := okPasswd + "old:x:1001:1001::/home/old:/bin/sh\n"
			ti := assembleTool(t, hostileCase(t, pw, okGroup+"old:x:1001:\n", nil, tc.extra...), runtimeImage(t))
			f := flatten(t, ti)
			f.view.Walk(func(n oci.Node) error {
				if under(n.Path, repoDir) && (n.Header.Uid != 0 || n.Header.Gid != 0) {
					t.Errorf("/%s is owned by %d:%d, want root's", n.Path, n.Header.Uid, n.Header.Gid)
				}
				return nil
			})
			if fails, err := Verify(context.Background(), ti, ""); err != nil || len(fails) != 0 {
				t.Errorf("Verify() = %v, %v; want no failure", fails, err)
			}
		})
	}
}

// treeLayer writes a case layer of files files of size bytes under prefix
// (a directory per 1,000, of dirMode; the files of fileMode), streamed to
// disk, never held.
func treeLayer(t *testing.T, prefix string, files, size int, dirMode, fileMode int64) v1.Layer {
	t.Helper()
	w, err := oci.NewLayerWriter(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	hdr := func(h *tar.Header) {
		h.ModTime = time.Unix(1700000000, 0)
		if err := w.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	hdr(&tar.Header{Typeflag: tar.TypeDir, Name: prefix + "/", Mode: 0o755})
	body := []byte(strings.Repeat("data\n", size/5+1)[:size])
	for d := 0; d*1000 < files; d++ {
		hdr(&tar.Header{Typeflag: tar.TypeDir, Name: fmt.Sprintf("%s/d%04d/", prefix, d), Mode: dirMode})
		for i := d * 1000; i < min(files, (d+1)*1000); i++ {
			hdr(&tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("%s/d%04d/f%06d", prefix, d, i), Mode: fileMode, Size: int64(size)})
			if _, err := w.Write(body); err != nil {
				t.Fatal(err)
			}
		}
	}
	l, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestHostileFilesOutsideSource: 200,000 files outside SOURCE_DIR that the
// tool layer must copy (other-writable, so they lose the bit) cost the
// assembly little memory beyond their view. Before, each copy took a
// buffer of its own, and the heap grew with the file count: 200,000 such
// files took 127-139 MB in `assemble tool` where SOURCE_DIR's took 83-85
// MB.
func TestHostileFilesOutsideSource(t *testing.T) {
	hostile.Case(t, "memory: files outside SOURCE_DIR")
	if !hostile.InChild(t) {
		hostile.RunChild(t, memoryOutsideLimitMiB, 5*time.Minute)
		return
	}
	img, err := mutate.AppendLayers(hostileCase(t, okPasswd, okGroup, nil), treeLayer(t, "opt/data", 200_000, 100, 0o777, 0o666))
	if err != nil {
		t.Fatal(err)
	}
	assembleTool(t, img, runtimeImage(t))
}

// memoryOutsideLimitMiB bounds TestHostileFilesOutsideSource's child:
// it peaked at 63-64 MiB, and at 92-93 MiB with a buffer per copy.
const memoryOutsideLimitMiB = 76
