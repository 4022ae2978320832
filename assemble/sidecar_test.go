package assemble

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// sidecarRuntime is a runtime image with the MCP server too.
func sidecarRuntime(t *testing.T) v1.Image {
	t.Helper()
	l := layer(t,
		dir("ssebench", 0o755),
		reg("ssebench/ssebench-daemon", 0o755, "daemon"),
		dir("ssebench/mcp", 0o755),
		reg("ssebench/mcp/ssebench-mcp", 0o755, "mcp"),
		dir("usr", 0o755), dir("usr/local", 0o755), dir("usr/local/bin", 0o755),
		reg("usr/local/bin/entrypoint", 0o777, "entrypoint"),
	)
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// osImage is a small Debian-like OS image with a uid-1000 user to replace.
func osImage(t *testing.T) v1.Image {
	return image(t, []string{"PATH=/usr/bin", "SSE_RUNNER_USER=root"}, layer(t,
		dir("etc", 0o755),
		reg("etc/passwd", 0o644, passwd),
		reg("etc/group", 0o644, group),
		own(reg("etc/shadow", 0o640, shadow), 0, 42),
		own(reg("etc/gshadow", 0o640, gshadow), 0, 42),
		reg("etc/login.defs", 0o644, "SYS_UID_MIN 100\nSYS_UID_MAX 999\n"),
		dir("tmp", 0o1777),
		dir("home", 0o755),
		own(dir("home/ubuntu", 0o750), 1000, 1000),
		dir("usr", 0o755), dir("usr/bin", 0o755),
		reg("usr/bin/tool", 0o777, "#!/bin/sh\necho tool\n"),
	))
}

func TestSidecarTask(t *testing.T) {
	ti, err := SidecarTask(context.Background(), caseImage(t), sidecarRuntime(t),
		WithSourceDir("/src/proj"), WithTempDir(t.TempDir()), WithTime(time.Unix(1760000000, 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer ti.Close()
	if err := validate.Image(ti); err != nil {
		t.Fatalf("validate.Image() = %v", err)
	}
	f := flatten(t, ti)
	for _, w := range []struct {
		path string
		mode int64
		uid  int
	}{
		{"ssebench", 0o700, 0},
		{"ssebench-repo", 0o700, 0},
		{"src/proj", 0o775, 1000},
		{"home/model", 0o755, 1000},
		{"var/lib/ssebench", 0o700, 0},
		{"ssebench/ssebench-daemon", 0o700, 0},
		{"ssebench/ssebench-entrypoint", 0o700, 0},
		{"usr/local/bin/entrypoint.sh", 0o700, 0},
	} {
		n := f.node(t, w.path)
		if n.Header.Mode&0o7777 != w.mode || n.Header.Uid != w.uid {
			t.Errorf("/%s: mode %04o uid %d, want %04o %d", w.path, n.Header.Mode&0o7777, n.Header.Uid, w.mode, w.uid)
		}
	}
	if got := f.files["usr/local/bin/entrypoint.sh"]; got != SidecarScript {
		t.Errorf("entrypoint.sh = %q", got)
	}
	for _, s := range []string{"mkdir -p /run/ssebench/agent", "chmod 0755 /run/ssebench /run/ssebench/agent", "SSE_DAEMON_SOCKET=/run/ssebench/agent/sse.sock", "SSE_ADMIN_SOCKET=/run/ssebench/admin.sock", `${SSE_RESULTS:-${SSE_ARCHIVE:-/tmp}}`, "/daemon.log"} {
		if !strings.Contains(SidecarScript, s) {
			t.Errorf("the script lacks %q", s)
		}
	}
	// The MCP server is the agent container's; the sandbox entrypoint is
	// not there.
	for _, p := range []string{"ssebench/mcp/ssebench-mcp", "usr/local/bin/entrypoint"} {
		if _, ok := f.view.Lookup(p); ok {
			t.Errorf("/%s is in tool-sidecar", p)
		}
	}
	cf, _ := ti.ConfigFile()
	if !slices.Equal(cf.Config.Entrypoint, []string{contract.SidecarScript}) || cf.Config.Cmd != nil {
		t.Errorf("entrypoint %q cmd %q", cf.Config.Entrypoint, cf.Config.Cmd)
	}
}

func TestSidecarAgent(t *testing.T) {
	build := func() *ToolImage {
		ti, err := SidecarAgent(context.Background(), osImage(t), sidecarRuntime(t), WithTempDir(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ti.Close() })
		return ti
	}
	ti := build()
	if err := validate.Image(ti); err != nil {
		t.Fatalf("validate.Image() = %v", err)
	}
	f := flatten(t, ti)
	if !strings.Contains(f.files["etc/passwd"], "model:x:1000:1000::/home/model:/bin/bash\n") || strings.Contains(f.files["etc/passwd"], "ubuntu") {
		t.Errorf("/etc/passwd:\n%s", f.files["etc/passwd"])
	}
	if !strings.Contains(f.files["home/model/.gitconfig"], "email = agent@ssebench.invalid") {
		t.Errorf(".gitconfig = %q", f.files["home/model/.gitconfig"])
	}
	for _, w := range []struct {
		path string
		mode int64
		uid  int
	}{
		{"home/model", 0o755, 1000},
		{"home/model/.gitconfig", 0o644, 1000},
		{"var/lib/ssebench", 0o700, 0},
		{"usr/local/bin/entrypoint", 0o755, 0},
		{contract.Rel(contract.SidecarMCPDir), 0o700, 0},
		{contract.Rel(contract.SidecarMCP), 0o700, 0},
		{"usr/bin/tool", 0o775, 0},
		{"tmp", 0o1777, 0},
	} {
		n := f.node(t, w.path)
		if n.Header.Mode&0o7777 != w.mode || n.Header.Uid != w.uid {
			t.Errorf("/%s: mode %04o uid %d, want %04o %d", w.path, n.Header.Mode&0o7777, n.Header.Uid, w.mode, w.uid)
		}
	}
	for _, p := range []string{"ssebench", "ssebench-repo", "home/ubuntu"} {
		if _, ok := f.view.Lookup(p); ok {
			t.Errorf("/%s is in tool-sidecar-agent", p)
		}
	}
	for p := range f.files {
		if strings.HasSuffix(p, "ssebench-daemon") {
			t.Errorf("a daemon at /%s", p)
		}
	}
	cf, _ := ti.ConfigFile()
	if !slices.Equal(cf.Config.Entrypoint, SidecarAgentEntrypoint) || cf.Config.User != "" || slices.Contains(cf.Config.Env, "SSE_RUNNER_USER=root") {
		t.Errorf("config: entrypoint %q user %q env %q", cf.Config.Entrypoint, cf.Config.User, cf.Config.Env)
	}
	d1, _ := ti.Digest()
	d2, _ := build().Digest()
	if d1 != d2 {
		t.Errorf("two builds: %s and %s", d1, d2)
	}
}
