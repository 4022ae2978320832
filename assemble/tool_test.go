package assemble

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"log"
	"net/http/httptest"

	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/registry/trust"
)

// fe is a file entry of a test layer.
type fe struct {
	name     string
	typ      byte
	mode     int64
	uid, gid int
	body     string
	link     string
}

func reg(name string, mode int64, body string) fe {
	return fe{name: name, typ: tar.TypeReg, mode: mode, body: body}
}
func dir(name string, mode int64) fe { return fe{name: name, typ: tar.TypeDir, mode: mode} }
func own(e fe, uid, gid int) fe      { e.uid, e.gid = uid, gid; return e }
func symlink(name, target string) fe {
	return fe{name: name, typ: tar.TypeSymlink, mode: 0o777, link: target}
}
func hardlink(name, target string, mode int64) fe {
	return fe{name: name, typ: tar.TypeLink, mode: mode, link: target}
}

// layer writes a test layer in tar order as given (not sorted), the way a
// real build might.
func layer(t *testing.T, entries ...fe) v1.Layer {
	t.Helper()
	w, err := oci.NewLayerWriter(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		h := &tar.Header{Typeflag: e.typ, Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid, Linkname: e.link,
			Size: int64(len(e.body)), ModTime: time.Unix(1700000000, 0)}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := w.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := io.WriteString(w, e.body); err != nil {
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

func image(t *testing.T, env []string, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	img, err = mutate.Config(img, v1.Config{Env: env, WorkingDir: "/src/proj", Cmd: []string{"bash"}, Labels: map[string]string{"ssebench.task-files": "abc"}})
	if err != nil {
		t.Fatal(err)
	}
	img, err = mutate.CreatedAt(img, v1.Time{Time: time.Unix(1750000000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

const (
	passwd = "root:x:0:0:root:/root:/bin/bash\n" +
		"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n" +
		"ubuntu:x:1000:1000:Ubuntu:/home/ubuntu:/bin/bash\n" +
		"model:x:1001:1001::/home/model:/bin/sh\n"
	group  = "root:x:0:\nadm:x:4:syslog,ubuntu\nsudo:x:27:ubuntu\nubuntu:x:1000:\nmodel:x:1001:\n"
	shadow = "root:*:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n" +
		"ubuntu:!:19000:0:99999:7:::\nmodel:!:19000:0:99999:7:::\n"
	gshadow = "root:*::\nadm:*::syslog,ubuntu\nsudo:*::ubuntu\nubuntu:!::\nmodel:!::\n"
)

// caseImage is a small Debian-like case image with everything the tool layer
// has to deal with.
func caseImage(t *testing.T) v1.Image {
	base := layer(t,
		dir("etc", 0o755),
		reg("etc/passwd", 0o644, passwd),
		reg("etc/group", 0o644, group),
		own(reg("etc/shadow", 0o640, shadow), 0, 42),
		own(reg("etc/gshadow", 0o640, gshadow), 0, 42),
		reg("etc/login.defs", 0o644, "SYS_UID_MIN 100\nSYS_UID_MAX 999\n"),
		dir("tmp", 0o1777),
		dir("home", 0o755),
		own(dir("home/ubuntu", 0o750), 1000, 1000),
		own(reg("home/ubuntu/.bashrc", 0o644, "# hi\n"), 1000, 1000),
		own(dir("home/model", 0o755), 1001, 1001),
		own(reg("home/model/secret", 0o600, "old model's file\n"), 1001, 1001),
		dir("usr", 0o755), dir("usr/bin", 0o755),
		reg("usr/bin/tool", 0o777, "#!/bin/sh\necho tool\n"),
		hardlink("usr/bin/tool2", "usr/bin/tool", 0o777),
		dir("opt", 0o777),
		dir("go", 0o777), dir("go/pkg", 0o750), reg("go/pkg/x.go", 0o640, "package x\n"),
		symlink("usr/bin/gofmt", "/go/bin/gofmt"),
		// A merged-/usr root: a symlink that sorts before /src.
		symlink("bin", "usr/bin"),
		dir("var", 0o755), dir("var/mail", 0o2775),
		own(reg("var/mail/ubuntu", 0o660, "mail\n"), 1000, 8),
		reg("var/mail/zz-shared", 0o666, "shared\n"),
	)
	source := layer(t,
		dir("src", 0o755),
		dir("src/proj", 0o775),
		reg("src/proj/main.go", 0o644, "package main\n\nfunc main() {}\n"),
		reg("src/proj/.gitignore", 0o644, "*.log\nbuild/\n"),
		reg("src/proj/app.log", 0o666, "log\n"),
		dir("src/proj/build", 0o755), reg("src/proj/build/out.bin", 0o755, "binary"),
		dir("src/proj/sub", 0o755),
		reg("src/proj/sub/.gitignore", 0o644, "!keep.log\n"),
		reg("src/proj/sub/keep.log", 0o644, "kept\n"),
		reg("src/proj/run.sh", 0o775, "#!/bin/sh\nexit 0\n"),
		reg("src/proj/file with space.txt", 0o644, "space\n"),
		reg("src/proj/naïve.txt", 0o644, "unicode\n"),
		symlink("src/proj/link", "main.go"),
		hardlink("src/proj/hl.go", "src/proj/main.go", 0o644),
		dir("src/proj/.git", 0o755), reg("src/proj/.git/HEAD", 0o644, "ref: refs/heads/main\n"),
		reg("src/proj/.git/FIX", 0o644, "the answer\n"),
		dir("src/proj/vendor", 0o755), dir("src/proj/vendor/mod", 0o755),
		reg("src/proj/vendor/mod/.git", 0o644, "gitdir: ../../.git/modules/mod\n"),
		reg("src/proj/vendor/mod/mod.go", 0o644, "package mod\n"),
		dir("src/proj/vendor/mod/inner", 0o755), dir("src/proj/vendor/mod/inner/.git", 0o755),
		reg("src/proj/vendor/mod/inner/.git/HEAD", 0o644, "x\n"),
		dir("ssebench", 0o755), reg("ssebench/config.yaml", 0o644, "id: x\n"),
	)
	fix := layer(t,
		reg("src/proj/world.txt", 0o666, "world-writable\n"),
		reg("usr/bin/.wh.gone", 0, ""),
	)
	return image(t, []string{"PATH=/usr/bin", "GOPATH=/go"}, base, source, fix)
}

func runtimeImage(t *testing.T) v1.Image {
	t.Helper()
	l := layer(t,
		dir("ssebench", 0o755),
		reg("ssebench/ssebench-daemon", 0o755, "daemon"),
		dir("usr", 0o755), dir("usr/local", 0o755), dir("usr/local/bin", 0o755),
		reg("usr/local/bin/entrypoint", 0o777, "entrypoint"),
	)
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func assembleTool(t *testing.T, caseImg, rt v1.Image, opts ...ToolOption) *ToolImage {
	t.Helper()
	opts = append([]ToolOption{WithSourceDir("/src/proj"), WithTempDir(t.TempDir())}, opts...)
	ti, err := Tool(context.Background(), caseImg, rt, opts...)
	if err != nil {
		t.Fatalf("Tool() = %v", err)
	}
	t.Cleanup(func() { ti.Close() })
	return ti
}

// flat is the merged filesystem of an image with file contents.
type flat struct {
	view  *oci.View
	files map[string]string
}

func flatten(t *testing.T, img v1.Image) *flat {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	view, err := (*Facts)(nil).View(context.Background(), ls)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []oci.Node
	view.Walk(func(n oci.Node) error {
		if n.Header.Typeflag == tar.TypeReg && !n.Implicit {
			nodes = append(nodes, n)
		}
		return nil
	})
	files := map[string]string{}
	err = oci.ReadFiles(context.Background(), ls, nodes, func(n oci.Node, r io.Reader) error {
		b, err := io.ReadAll(r)
		files[n.Path] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return &flat{view: view, files: files}
}

func (f *flat) node(t *testing.T, p string) oci.Node {
	t.Helper()
	n, ok := f.view.Lookup(p)
	if !ok {
		t.Fatalf("/%s is missing", p)
	}
	return n
}

func TestToolContract(t *testing.T) {
	ti := assembleTool(t, caseImage(t), runtimeImage(t), WithTime(time.Unix(1760000000, 0)))
	if err := validate.Image(ti); err != nil {
		t.Fatalf("validate.Image() = %v", err)
	}
	f := flatten(t, ti)

	type want struct {
		path     string
		mode     int64
		uid, gid int
	}
	for _, w := range []want{
		{"ssebench", 0o700, 0, 0},
		{"ssebench-repo", 0o700, 0, 0},
		{"ssebench-repo/app.log", 0o664, 0, 0},
		{"ssebench-repo/.git/FIX", 0o644, 0, 0},
		{"src/proj", 0o775, 1000, 1000},
		{"src/proj/run.sh", 0o775, 1000, 1000},
		{"src/proj/app.log", 0o664, 1000, 1000},
		{"src/proj/world.txt", 0o664, 1000, 1000},
		{"src/proj/vendor/mod/.git", 0o644, 1000, 1000},
		{"home/model", 0o755, 1000, 1000},
		{"home/model/.gitconfig", 0o644, 1000, 1000},
		{"var/lib/ssebench", 0o700, 0, 0},
		{"usr/local/bin/entrypoint", 0o775, 0, 0},
		{"usr/bin/tool", 0o775, 0, 0},
		{"usr/bin/tool2", 0o775, 0, 0},
		{"tmp", 0o1777, 0, 0},
		{"opt", 0o775, 0, 0},
		{"go", 0o775, 0, 0},
		{"go/pkg", 0o755, 0, 0},
		{"go/pkg/x.go", 0o644, 0, 0},
		{"etc/shadow", 0o640, 0, 42},
		{"var/mail/zz-shared", 0o664, 0, 0},
	} {
		n := f.node(t, w.path)
		if n.Header.Mode != w.mode || n.Header.Uid != w.uid || n.Header.Gid != w.gid {
			t.Errorf("/%s: mode %04o owner %d:%d, want %04o %d:%d", w.path, n.Header.Mode, n.Header.Uid, n.Header.Gid, w.mode, w.uid, w.gid)
		}
	}
	for _, gone := range []string{"var/mail/ubuntu", "home/ubuntu", "home/model/secret", "src/proj/.git/FIX", "src/proj/vendor/mod/inner/.git", "usr/bin/gone"} {
		if _, ok := f.view.Lookup(gone); ok {
			t.Errorf("/%s is still there", gone)
		}
	}
	if got := f.files["ssebench-repo/.git/FIX"]; got != "the answer\n" {
		t.Errorf("/ssebench-repo/.git/FIX = %q, want the original", got)
	}
	if got := f.files["src/proj/hl.go"]; got != "package main\n\nfunc main() {}\n" {
		t.Errorf("hard link content = %q", got)
	}
	// Every entry of SOURCE_DIR belongs to model; nothing is other-writable.
	f.view.Walk(func(n oci.Node) error {
		if under(n.Path, "src/proj") && (n.Header.Uid != 1000 || n.Header.Gid != 1000) {
			t.Errorf("/%s owned by %d:%d, want 1000:1000", n.Path, n.Header.Uid, n.Header.Gid)
		}
		sticky := n.Header.IsDir() && n.Header.Mode&0o1000 != 0
		if n.Header.Typeflag != tar.TypeSymlink && !sticky && n.Header.Mode&0o002 != 0 {
			t.Errorf("/%s is other-writable (%04o)", n.Path, n.Header.Mode)
		}
		return nil
	})

	pw := f.files["etc/passwd"]
	for _, line := range []string{"model:x:1000:1000::/home/model:/bin/bash\n", "sse-runner:x:"} {
		if !strings.Contains(pw, line) {
			t.Errorf("/etc/passwd lacks %q:\n%s", line, pw)
		}
	}
	if strings.Contains(pw, "ubuntu") || strings.Contains(pw, "1001") {
		t.Errorf("/etc/passwd still has the old users:\n%s", pw)
	}
	if g := f.files["etc/group"]; strings.Contains(g, "ubuntu") || !strings.Contains(g, "model:x:1000:\n") {
		t.Errorf("/etc/group =\n%s", g)
	}
	if !strings.Contains(f.files["home/model/.gitconfig"], "email = agent@ssebench.invalid") {
		t.Errorf(".gitconfig = %q", f.files["home/model/.gitconfig"])
	}

	cf, err := ti.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Entrypoint; len(got) != 1 || got[0] != "/usr/local/bin/entrypoint" || cf.Config.Cmd != nil {
		t.Errorf("entrypoint %q cmd %q, want [/usr/local/bin/entrypoint] and no cmd", got, cf.Config.Cmd)
	}
	if cf.Config.WorkingDir != "/src/proj" || cf.Config.Labels["ssebench.task-files"] != "abc" || cf.Config.Env[1] != "GOPATH=/go" {
		t.Errorf("config not inherited: %+v", cf.Config)
	}
	m, _ := ti.Manifest()
	caseM, _ := caseImage(t).Manifest()
	if len(m.Layers) != len(caseM.Layers)+3+1+1 {
		t.Errorf("%d layers, want case (3) + system, repo, source + runtime (1) + seal", len(m.Layers))
	}

	// The repository's tree is what git itself makes of the same files.
	if _, err := exec.LookPath("git"); err == nil {
		dir := t.TempDir()
		for p, body := range f.files {
			if !strings.HasPrefix(p, "src/proj/") || strings.HasPrefix(p, "src/proj/.git/") {
				continue
			}
			fp := filepath.Join(dir, strings.TrimPrefix(p, "src/proj/"))
			os.MkdirAll(filepath.Dir(fp), 0o755)
			n := f.node(t, p)
			os.WriteFile(fp, []byte(body), os.FileMode(n.Header.Mode&0o777))
		}
		os.Symlink("main.go", filepath.Join(dir, "link"))
		git := func(args ...string) string {
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
			return strings.TrimSpace(string(out))
		}
		git("init", "-q")
		git("add", "-A")
		if want := git("write-tree"); ti.TreeID != want {
			t.Errorf("tree %s, git write-tree says %s", ti.TreeID, want)
		}
	}
}

func TestToolDeterministic(t *testing.T) {
	c, rt := caseImage(t), runtimeImage(t)
	a := assembleTool(t, c, rt)
	b := assembleTool(t, c, rt, WithFacts(mustFacts(t)))
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Errorf("two assemblies differ: %s and %s", da, db)
	}
}

func mustFacts(t *testing.T) *Facts {
	t.Helper()
	f, err := NewFacts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestToolFactsCache(t *testing.T) {
	facts := mustFacts(t)
	c, rt := caseImage(t), runtimeImage(t)
	assembleTool(t, c, rt, WithFacts(facts))
	first := facts.Indexed()
	if first != 4 {
		t.Errorf("first assembly indexed %d layers, want 4 (3 case + 1 runtime)", first)
	}
	// A second task on the same base: only its own layers are read.
	ls, _ := c.Layers()
	other := image(t, []string{"GOPATH=/go"}, ls[0], layer(t, dir("src", 0o755), dir("src/proj", 0o755), reg("src/proj/a.c", 0o644, "int x;\n")))
	assembleTool(t, other, rt, WithFacts(facts))
	if got := facts.Indexed() - first; got != 1 {
		t.Errorf("second assembly indexed %d layers, want 1", got)
	}
}

func TestToolBadInput(t *testing.T) {
	c, rt := caseImage(t), runtimeImage(t)
	noEntry, _ := mutate.AppendLayers(empty.Image, layer(t, dir("ssebench", 0o755), reg("ssebench/ssebench-daemon", 0o755, "d")))
	fileSrc := image(t, nil, layer(t, reg("etc/passwd", 0o644, passwd), reg("etc/group", 0o644, group), dir("src", 0o755), reg("src/proj", 0o644, "x")))
	linkSrc := image(t, nil, layer(t, reg("etc/passwd", 0o644, passwd), reg("etc/group", 0o644, group), dir("src", 0o755), dir("real", 0o755), symlink("src/proj", "/real")))
	tests := []struct {
		name    string
		img, rt v1.Image
		src     string
		want    string
	}{
		{"missing source", c, rt, "/src/other", "has no SOURCE_DIR /src/other"},
		{"source is a file", fileSrc, rt, "/src/proj", "is a file, not a folder"},
		{"source is a symlink", linkSrc, rt, "/src/proj", "is a symlink"},
		{"relative source", c, rt, "src/proj", "is not absolute"},
		{"runtime without entrypoint", c, noEntry, "/src/proj", "has no /usr/local/bin/entrypoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			_, err := Tool(context.Background(), tt.img, tt.rt, WithSourceDir(tt.src), WithTempDir(tmp))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Tool() error = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("left %d files in the temporary directory", len(left))
			}
		})
	}
}

var _ = bytes.NewReader

func TestVerify(t *testing.T) {
	ti := assembleTool(t, caseImage(t), runtimeImage(t))
	fails, err := Verify(context.Background(), ti, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(fails) != 0 {
		t.Errorf("Verify(assembled tool image) = %v, want no failure", fails)
	}
	// The case image itself breaks most of the contract.
	fails, err = Verify(context.Background(), caseImage(t), "/src/proj")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fails {
		got = append(got, f.String())
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		`entrypoint: ENTRYPOINT is []`,
		`mode: /ssebench: a directory with mode 0755 owned by 0:0, want a directory with mode 0700 owned by 0:0`,
		`mode: /var/lib/ssebench: missing`,
		`other-write: /usr/bin/tool: mode 0777`,
		`owner: /src/proj/main.go: owned by 0:0, want 1000:1000`,
		`git: /src/proj/vendor/mod/inner/.git: a .git directory other than SOURCE_DIR's own`,
		`accounts: /etc/passwd: user "ubuntu" also has uid 1000`,
		`accounts: /etc/passwd: no user sse-runner`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("Verify(case image) lacks %q; got:\n%s", want, all)
		}
	}
}

func TestToolReusesPreviousLayers(t *testing.T) {
	facts := mustFacts(t)
	c, rt := caseImage(t), runtimeImage(t)
	first := assembleTool(t, c, rt, WithFacts(facts))
	indexed := facts.Indexed()

	// A runtime bump: one more runtime layer. The case layers are not read
	// again, the own layers are the same, and the result equals a fresh
	// assembly with the new runtime.
	rt2, err := mutate.AppendLayers(rt, layer(t, dir("usr", 0o755), dir("usr/local", 0o755), dir("usr/local/bin", 0o755), reg("usr/local/bin/helper", 0o755, "v2")))
	if err != nil {
		t.Fatal(err)
	}
	second := assembleTool(t, c, rt2, WithFacts(facts), WithPrevious(first))
	if !second.Reused {
		t.Fatal("the previous tool image's layers were not reused")
	}
	if got := facts.Indexed() - indexed; got != 1 {
		t.Errorf("indexed %d layers, want 1 (the new runtime layer only)", got)
	}
	fresh := assembleTool(t, c, rt2)
	d2, _ := second.Digest()
	df, _ := fresh.Digest()
	if d2 != df {
		t.Errorf("reused assembly %s differs from a fresh one %s", d2, df)
	}
	if err := validate.Image(second); err != nil {
		t.Errorf("validate.Image() = %v", err)
	}

	// Another time means other commit bytes: no reuse.
	third := assembleTool(t, c, rt2, WithPrevious(first), WithTime(time.Unix(1800000000, 0)))
	if third.Reused {
		t.Error("layers of another build time were reused")
	}
}

func TestFactsThroughRegistry(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo, err := name.NewRepository(strings.TrimPrefix(srv.URL, "http://")+"/ssebench/facts", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	c, rt := caseImage(t), runtimeImage(t)
	ci, other := testKey(t), testKey(t)
	signing := &trust.Policy{Signer: ci, Key: &ci.PublicKey}
	verifying := &trust.Policy{Key: &ci.PublicKey}

	// A first machine reads every layer and publishes (and signs) what
	// it learnt.
	first := mustFacts(t)
	if err := first.WithRemote(repo, true, signing); err != nil {
		t.Fatal(err)
	}
	a := assembleTool(t, c, rt, WithFacts(first))
	if first.Indexed() != 4 || first.Fetched() != 0 {
		t.Fatalf("first machine indexed %d and fetched %d layers, want 4 and 0", first.Indexed(), first.Fetched())
	}

	// A fresh machine with the CI's public key reads no layer to index
	// it: the facts come from the registry, and the image is the same.
	fresh := mustFacts(t)
	if err := fresh.WithRemote(repo, false, verifying); err != nil {
		t.Fatal(err)
	}
	b := assembleTool(t, c, rt, WithFacts(fresh))
	if fresh.Indexed() != 0 || fresh.Fetched() != 4 {
		t.Errorf("fresh machine indexed %d and fetched %d layers, want 0 and 4", fresh.Indexed(), fresh.Fetched())
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Errorf("with fetched facts the image is %s, want %s", db, da)
	}
	// So does one that names the registry trusted.
	named := mustFacts(t)
	if err := named.WithRemote(repo, false, &trust.Policy{Registries: []string{repo.RegistryStr()}}); err != nil {
		t.Fatal(err)
	}
	assembleTool(t, c, rt, WithFacts(named))
	if named.Fetched() != 4 {
		t.Errorf("a machine trusting the registry fetched %d layers' facts, want 4", named.Fetched())
	}

	// Without trust, or with another key, nothing is believed: the layers
	// are read, and the image is the same.
	for what, p := range map[string]*trust.Policy{"no trust": nil, "another key": {Key: &other.PublicKey}} {
		m := mustFacts(t)
		if err := m.WithRemote(repo, false, p); err != nil {
			t.Fatal(err)
		}
		img := assembleTool(t, c, rt, WithFacts(m))
		if m.Indexed() != 4 || m.Fetched() != 0 {
			t.Errorf("%s: indexed %d and fetched %d layers, want 4 and 0", what, m.Indexed(), m.Fetched())
		}
		if d, _ := img.Digest(); d != da {
			t.Errorf("%s: the image is %s, want %s", what, d, da)
		}
	}

	// Without the artifacts, a machine reads the layers as before.
	none := mustFacts(t)
	if err := none.WithRemote(repo.Registry.Repo("ssebench", "nothing"), false, verifying); err != nil {
		t.Fatal(err)
	}
	assembleTool(t, c, rt, WithFacts(none))
	if none.Indexed() != 4 {
		t.Errorf("with no artifacts the machine indexed %d layers, want 4", none.Indexed())
	}
}

// TestForgedFactsNeverReachAnImage: someone who can push to the facts
// repository replaces a layer's facts with ones whose /etc/passwd holds a
// passwordless second root. A machine that verifies signatures refuses
// them, reads the layer itself, and makes the true image; nothing of the
// lie lands in its cache.
func TestForgedFactsNeverReachAnImage(t *testing.T) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo, err := name.NewRepository(strings.TrimPrefix(srv.URL, "http://")+"/ssebench/facts", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	c, rt := caseImage(t), runtimeImage(t)
	ci := testKey(t)
	honest := mustFacts(t)
	if err := honest.WithRemote(repo, true, &trust.Policy{Signer: ci}); err != nil {
		t.Fatal(err)
	}
	want, _ := assembleTool(t, c, rt, WithFacts(honest)).Digest()

	// The forger rewrites the facts of every layer that carries account
	// files, unsigned (or signed with a key of its own: the same).
	ls, err := c.Layers()
	if err != nil {
		t.Fatal(err)
	}
	forger := &remoteFacts{repo: repo, publish: true, policy: &trust.Policy{Signer: testKey(t)}}
	forged := 0
	for _, l := range ls {
		d, _ := l.Digest()
		lf, ok := (&remoteFacts{repo: repo, policy: &trust.Policy{Registries: []string{repo.RegistryStr()}}}).fetch(d)
		if !ok {
			t.Fatalf("no published facts for layer %s", d)
		}
		files := map[string][]byte{}
		for k, v := range lf.Files {
			b, _ := base64.StdEncoding.DecodeString(v)
			files[k] = b
		}
		if _, ok := files["etc/passwd"]; !ok {
			continue
		}
		files["etc/passwd"] = append(files["etc/passwd"], []byte("toor::0:0::/root:/bin/bash\n")...)
		forger.push(d, lf.Index, files)
		forged++
	}
	if forged == 0 {
		t.Fatal("no layer of the case image carries /etc/passwd: the test forges nothing")
	}

	victim := mustFacts(t)
	if err := victim.WithRemote(repo, false, &trust.Policy{Key: &ci.PublicKey}); err != nil {
		t.Fatal(err)
	}
	got, _ := assembleTool(t, c, rt, WithFacts(victim)).Digest()
	if got != want {
		t.Errorf("with forged facts in the registry the image is %s, want %s", got, want)
	}
	if victim.Refused() != forged {
		t.Errorf("refused %d artifacts, want the %d forged ones", victim.Refused(), forged)
	}
	// A second run on the same cache still makes the true image.
	again := assembleTool(t, c, rt, WithFacts(victim))
	if d, _ := again.Digest(); d != want {
		t.Errorf("the second run made %s, want %s: the lie was cached", d, want)
	}
}

func testKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
