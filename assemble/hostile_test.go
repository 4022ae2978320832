package assemble

import (
	"context"
	"os"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/internal/hostile"
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
