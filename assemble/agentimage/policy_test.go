package agentimage

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// rawLayer is a layer of exactly these headers (a regular file gets the
// content "x"), as a hostile builder could write it.
func rawLayer(t testing.TB, hdrs ...*tar.Header) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		h := *h
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = 1
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte("x"))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func reg(name string) *tar.Header { return &tar.Header{Typeflag: tar.TypeReg, Name: name} }
func dirH(name string, mode int64, uid int) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: uid}
}

// policyTool is the stand-in tool image with a toolchain variable.
func policyTool(t testing.TB) v1.Image {
	t.Helper()
	tool := toolImage(t)
	cf, err := tool.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Config.Env = append(cf.Config.Env, "GOPATH=/go")
	tool, err = mutate.ConfigFile(tool, cf)
	if err != nil {
		t.Fatal(err)
	}
	// A symlink of the tool image's own that leads to /etc.
	tool, err = mutate.AppendLayers(tool, rawLayer(t, &tar.Header{Typeflag: tar.TypeSymlink, Name: "cfg", Linkname: "etc"}))
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// TestHostileAgentLayers: what an agent's build may add to the tool image
// is checked entry by entry before it is grafted; each refusal is one line
// naming the layer, the entry and the rule.
func TestHostileAgentLayers(t *testing.T) {
	pol, err := NewPolicy(policyTool(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		hdrs []*tar.Header
		want string
	}{
		{"a file under /ssebench", []*tar.Header{reg("ssebench/config.yaml")}, "/ssebench/config.yaml"},
		{"a whiteout of /ssebench", []*tar.Header{reg(".wh.ssebench")}, "/.wh.ssebench"},
		{"a whiteout of /ssebench-repo", []*tar.Header{reg(".wh.ssebench-repo")}, "/ssebench-repo is the runtime's"},
		{"an opaque /var/lib/ssebench", []*tar.Header{reg("var/lib/ssebench/.wh..wh..opq")}, "/var/lib/ssebench"},
		{"a replaced entrypoint", []*tar.Header{dirH("usr/local/bin/", 0o755, 0), reg("usr/local/bin/entrypoint")}, "/usr/local/bin/entrypoint"},
		{"a replaced daemon", []*tar.Header{reg("ssebench/ssebench-daemon")}, "/ssebench/ssebench-daemon"},
		{"the sidecar MCP server", []*tar.Header{reg("usr/local/libexec/ssebench/ssebench-mcp")}, "/usr/local/libexec/ssebench"},
		{"a setuid shell", []*tar.Header{{Typeflag: tar.TypeReg, Name: "opt/rootsh", Mode: 0o4755}}, "setuid"},
		{"a setgid file", []*tar.Header{{Typeflag: tar.TypeReg, Name: "opt/g", Mode: 0o2755}}, "setgid"},
		{"file capabilities", []*tar.Header{{Typeflag: tar.TypeReg, Name: "opt/cap", PAXRecords: map[string]string{"SCHILY.xattr.security.capability": "\x01"}}}, "capabilities"},
		{"a hard link to /etc/shadow", []*tar.Header{{Typeflag: tar.TypeLink, Name: "opt/shadow", Linkname: "etc/shadow"}}, "hard link to /etc/shadow"},
		{"a hard link to a lower file", []*tar.Header{{Typeflag: tar.TypeLink, Name: "opt/p", Linkname: "/opt/keep/old"}}, "hard link"},
		{"a device", []*tar.Header{{Typeflag: tar.TypeChar, Name: "opt/mem", Devmajor: 1, Devminor: 1}}, "device"},
		{"ld.so.preload", []*tar.Header{reg("etc/ld.so.preload")}, "/etc/ld.so.preload"},
		{"a loader path", []*tar.Header{reg("etc/ld.so.conf.d/agent.conf")}, "/etc/ld.so.conf.d"},
		{"the loader", []*tar.Header{reg("lib64/ld-linux-x86-64.so.2")}, "dynamic loader"},
		{"a PAM module", []*tar.Header{reg("usr/lib/x86_64-linux-gnu/security/pam_permit.so")}, "PAM"},
		{"PAM config", []*tar.Header{reg("etc/pam.d/su")}, "/etc/pam.d"},
		{"sudoers", []*tar.Header{reg("etc/sudoers.d/agent")}, "/etc/sudoers.d"},
		{"an account file", []*tar.Header{reg("etc/passwd")}, "/etc/passwd"},
		{"a toolchain tree", []*tar.Header{reg("go/bin/go")}, "toolchain"},
		{"a replaced command", []*tar.Header{reg("usr/bin/sh")}, "command /usr/bin/sh"},
		{"a command through the /bin symlink", []*tar.Header{reg("bin/sh")}, "command"},
		{"a command shadowed earlier in PATH", []*tar.Header{reg("usr/local/bin/sh")}, "command /usr/bin/sh"},
		{"a whiteout of a command", []*tar.Header{reg("usr/bin/.wh.sh")}, "command /usr/bin/sh"},
		{"a whiteout of a PATH directory", []*tar.Header{reg("usr/local/.wh.bin")}, "whiteout"},
		{"an opaque PATH directory", []*tar.Header{reg("usr/bin/.wh..wh..opq")}, "whiteout"},
		{"a PATH directory made writable", []*tar.Header{dirH("usr/local/bin/", 0o777, 0)}, "mode 0777"},
		{"a PATH directory given to model", []*tar.Header{dirH("usr/local/bin/", 0o755, 1000)}, "uid 1000"},
		{"a PATH directory as a symlink", []*tar.Header{{Typeflag: tar.TypeSymlink, Name: "usr/local/bin", Linkname: "/tmp"}}, "symlink"},
		{"the root made writable", []*tar.Header{dirH("./", 0o777, 0)}, "mode 0777"},
		{"a name that climbs", []*tar.Header{reg("opt/../../etc/x")}, "climbs"},
		{"through its own symlink", []*tar.Header{{Typeflag: tar.TypeSymlink, Name: "opt/x", Linkname: "/usr/local/bin"}, reg("opt/x/entrypoint")}, "/opt/x/entrypoint: its parent /opt/x is a symlink"},
		{"through the tool's symlink", []*tar.Header{reg("cfg/passwd")}, "/etc/passwd is the runtime's or the accounts'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "agent layers: graft policy")
			err := pol.CheckLayer(context.Background(), "agent layer 1 (sha256:test)", rawLayer(t, tc.hdrs...))
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "agent layer 1 (sha256:test): /") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("CheckLayer() = %v, want one line naming the layer, the entry and %q", err, tc.want)
			}
		})
	}
}

// TestHostileAgentLayersLinkAcross: a symlink made by one agent layer
// does not carry the next layer's entry into a protected path.
func TestHostileAgentLayersLinkAcross(t *testing.T) {
	hostile.Case(t, "agent layers: graft policy")
	pol, err := NewPolicy(policyTool(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := pol.CheckLayer(ctx, "agent layer 1", rawLayer(t, &tar.Header{Typeflag: tar.TypeSymlink, Name: "opt/x", Linkname: "../ssebench"})); err != nil {
		t.Fatalf("CheckLayer(1) = %v, want nil", err)
	}
	if err := pol.CheckLayer(ctx, "agent layer 2", rawLayer(t, reg("opt/x/patch.diff"))); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "agent layer 2: /opt/x/patch.diff: its parent /opt/x is a symlink") {
		t.Fatalf("CheckLayer(2) = %v, want a refusal of the entry through the link", err)
	}
}

// TestAgentLayersAllowed: what real agents add passes.
func TestAgentLayersAllowed(t *testing.T) {
	pol, err := NewPolicy(policyTool(t))
	if err != nil {
		t.Fatal(err)
	}
	l := rawLayer(t,
		dirH("usr/", 0o755, 0), dirH("usr/local/", 0o755, 0), dirH("usr/local/bin/", 0o755, 0),
		&tar.Header{Typeflag: tar.TypeReg, Name: "usr/local/bin/sse-loop", Mode: 0o755},
		&tar.Header{Typeflag: tar.TypeSymlink, Name: "usr/local/bin/codex", Linkname: "../lib/node_modules/codex/bin/codex.js"},
		dirH("opt/", 0o755, 0), dirH("opt/agent/", 0o755, 0), reg("opt/agent/run.sh"),
		&tar.Header{Typeflag: tar.TypeLink, Name: "opt/agent/run2.sh", Linkname: "opt/agent/run.sh"},
		reg("etc/ld.so.cache"), reg("var/lib/apt/lists/.wh.partial"), dirH("tmp/", 0o1777, 0),
		&tar.Header{Typeflag: tar.TypeFifo, Name: "opt/agent/fifo"},
		reg("root/.wh..npm"),
		// A symlink, then a directory in its place and a file in it.
		&tar.Header{Typeflag: tar.TypeSymlink, Name: "opt/agent/lib", Linkname: "/usr/lib"},
		dirH("opt/agent/lib/", 0o755, 0), reg("opt/agent/lib/x.so"),
	)
	if err := pol.CheckLayer(context.Background(), "agent layer 1", l); err != nil {
		t.Fatalf("CheckLayer() = %v, want nil", err)
	}
}

// TestHostileAgentPolicyConfig: the grader's scripts inherit the agent
// image's ENV, so only an allow-list passes; USER is the tool's or model.
func TestHostileAgentPolicyConfig(t *testing.T) {
	tool := policyTool(t)
	pol, err := NewPolicy(tool)
	if err != nil {
		t.Fatal(err)
	}
	tcf, err := tool.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	base := tcf.Config
	with := func(f func(c *v1.Config)) v1.Config {
		c := *base.DeepCopy()
		f(&c)
		return c
	}
	env := func(kv ...string) v1.Config { return with(func(c *v1.Config) { c.Env = append(c.Env, kv...) }) }
	setPath := func(p string) v1.Config {
		return with(func(c *v1.Config) {
			for i, kv := range c.Env {
				if strings.HasPrefix(kv, "PATH=") {
					c.Env[i] = "PATH=" + p
				}
			}
		})
	}
	for _, tc := range []struct {
		name  string
		agent v1.Config
		want  string
	}{
		{"ENV LD_PRELOAD", env("LD_PRELOAD=/opt/evil.so"), "ENV LD_PRELOAD"},
		{"ENV LD_LIBRARY_PATH", env("LD_LIBRARY_PATH=/opt"), "ENV LD_LIBRARY_PATH"},
		{"ENV GOFLAGS", env("GOFLAGS=-toolexec=/opt/x"), "ENV GOFLAGS"},
		{"ENV CARGO_HOME", env("CARGO_HOME=/opt/cargo"), "ENV CARGO_HOME"},
		{"ENV RUSTFLAGS", env("RUSTFLAGS=-Cx"), "ENV RUSTFLAGS"},
		{"ENV TMPDIR", env("TMPDIR=/opt/tmp"), "ENV TMPDIR"},
		{"ENV BASH_ENV", env("BASH_ENV=/opt/rc"), "ENV BASH_ENV"},
		{"a changed GOPATH", setPathVar("GOPATH", "/home/model/go", base), "ENV GOPATH"},
		{"PATH before the toolchain", setPath("/opt/bin:/usr/local/bin:/usr/bin:/bin"), "ENV PATH"},
		{"PATH replaced", setPath("/opt/bin"), "ENV PATH"},
		{"PATH with a relative directory", setPath("/usr/local/bin:/usr/bin:/bin:bin"), "not an absolute"},
		{"a dropped variable", with(func(c *v1.Config) { c.Env = c.Env[1:] }), "drops it"},
		{"USER root", with(func(c *v1.Config) { c.User = "root" }), "USER root"},
		{"USER 0", with(func(c *v1.Config) { c.User = "0:0" }), "USER 0:0"},
		{"USER of another account", with(func(c *v1.Config) { c.User = "sse-runner" }), "USER sse-runner"},
		{"VOLUME /ssebench", with(func(c *v1.Config) { c.Volumes = map[string]struct{}{"/ssebench": {}} }), "VOLUME /ssebench"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "agent config: graft policy")
			err := pol.CheckConfig(tc.agent)
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("CheckConfig() = %v, want one line with %q", err, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name  string
		agent v1.Config
	}{
		{"unchanged", base},
		{"AGENT_ and allowed names", env("AGENT_HOME=/opt/a", "NO_UPDATE_NOTIFIER=1", "NO_COLOR=1")},
		{"PATH lengthened at its end", setPath("/usr/local/bin:/usr/bin:/bin:/opt/agent/bin")},
		{"USER model", with(func(c *v1.Config) { c.User = "model" })},
		{"USER 1000:1000", with(func(c *v1.Config) { c.User = "1000:1000" })},
		{"CMD, WORKDIR and labels", with(func(c *v1.Config) {
			c.Cmd, c.WorkingDir, c.Labels = []string{"run"}, "/opt/agent", map[string]string{"a": "b"}
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := pol.CheckConfig(tc.agent); err != nil {
				t.Fatalf("CheckConfig() = %v, want nil", err)
			}
		})
	}
}

func setPathVar(k, v string, c v1.Config) v1.Config {
	c = *c.DeepCopy()
	for i, kv := range c.Env {
		if strings.HasPrefix(kv, k+"=") {
			c.Env[i] = k + "=" + v
		}
	}
	return c
}

// TestGraftDeterministic: the same agent folder grafted twice, each time
// from a fresh workspace copy, gives the same digest; the grafted image is
// the tool image's layers plus the agent's, with the tool image as its
// base annotation.
func TestGraftDeterministic(t *testing.T) {
	tool := toolImage(t)
	root := repoRoot(t)
	dir := filepath.Join(root, "agents", "files-demo")
	plan, err := LoadPlan(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	build := func() v1.Hash {
		blind, err := Blind(tool)
		if err != nil {
			t.Fatal(err)
		}
		ws, err := Workspace(root, dir, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		img, err := Assemble(context.Background(), blind, plan, dir, ws, WithTempDir(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		defer img.Close()
		pol, err := NewPolicy(tool)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Graft(context.Background(), tool, blind, img, pol)
		if err != nil {
			t.Fatalf("Graft() = %v", err)
		}
		// The blind layer stays: the agent's container must not see the
		// answers the tool image holds.
		added := newLayers(t, out, tool)
		if n, want := len(added), 5; n != want {
			t.Errorf("grafted image adds %d layers to the tool image, want %d (the blind layer, WORKDIR and three COPY)", n, want)
		} else {
			bl, _ := blind.Layers()
			wantD, _ := bl[len(bl)-1].Digest()
			if d, _ := added[0].Digest(); d != wantD {
				t.Errorf("first added layer = %s, want the blind layer %s", d, wantD)
			}
		}
		m, err := out.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if td, _ := tool.Digest(); m.Annotations[AnnotationBaseDigest] != td.String() {
			t.Errorf("base annotation = %q, want the tool image's %s", m.Annotations[AnnotationBaseDigest], td)
		}
		d, err := out.Digest()
		if err != nil {
			t.Fatal(err)
		}
		// Not on the blind image: refused.
		if _, err := Graft(context.Background(), tool, blind, tool, pol); !errors.Is(err, ErrNotOnBase) {
			t.Errorf("Graft() of an image not built on the blind one = %v, want ErrNotOnBase", err)
		}
		return d
	}
	if a, b := build(), build(); a != b {
		t.Errorf("two grafts of the same folder: %s and %s", a, b)
	}
}

// TestWorkspace: the workspace context holds VERSION and the agent's own
// folder, nothing else of the home.
func TestWorkspace(t *testing.T) {
	home, dir := answersHome(t, "FROM ssebench-agent\n", map[string]string{"run.sh": "#!/bin/sh\n"})
	writeTree(t, home, map[string]string{"agents/other/secret": "other agent\n", "runs/x/final.patch": "a run\n"})
	ws, err := Workspace(home, dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			r, _ := filepath.Rel(ws, p)
			got = append(got, filepath.ToSlash(r))
		}
		return nil
	})
	want := []string{"VERSION", "agents/hostile/Dockerfile", "agents/hostile/agent.yaml", "agents/hostile/run.sh"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("workspace holds %q, want %q", got, want)
	}
}
