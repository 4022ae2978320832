package runtimebin

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func TestNPMRange(t *testing.T) {
	for _, c := range []struct {
		spec string
		in   []string
		out  []string
	}{
		{"^1.2.3", []string{"1.2.3", "1.9.0"}, []string{"1.2.2", "2.0.0", "2.0.0-rc.1", "1.3.0-beta"}},
		{"^0.2.7", []string{"0.2.7", "0.2.99"}, []string{"0.3.0", "0.2.6"}},
		{"^0.0.3", []string{"0.0.3"}, []string{"0.0.4"}},
		{"~1.2.3", []string{"1.2.9"}, []string{"1.3.0"}},
		{"4.0.0-beta.83", []string{"4.0.0-beta.83"}, []string{"4.0.0"}},
		{">=1.0.0 <2", []string{"1.5.0"}, []string{"2.0.0", "0.9.0"}},
		{"1.x || ^3.0.0", []string{"1.0.1", "3.4.0"}, []string{"2.0.0"}},
		{"*", []string{"7.0.0"}, []string{"7.0.0-pre"}},
	} {
		r, err := parseNPMRange(c.spec)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		for _, v := range c.in {
			if !r.matches(v) {
				t.Errorf("%q does not match %s", c.spec, v)
			}
		}
		for _, v := range c.out {
			if r.matches(v) {
				t.Errorf("%q matches %s", c.spec, v)
			}
		}
	}
}

// tgz makes an npm tarball of files under package/.
func tgz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	for _, name := range sortedKeys(files) {
		mode := int64(0o644)
		if strings.HasPrefix(name, "bin/") {
			mode = 0o777 // as some packages ship it: the layer must not keep o+w
		}
		tw.WriteHeader(&tar.Header{Name: "package/" + name, Mode: mode, Size: int64(len(files[name])), Typeflag: tar.TypeReg, ModTime: time.Now()})
		tw.Write([]byte(files[name]))
	}
	tw.Close()
	zw.Close()
	return b.Bytes()
}

func integrity(b []byte) string {
	s := sha512.Sum512(b)
	return "sha512-" + base64.StdEncoding.EncodeToString(s[:])
}

// fakeNPM is a registry holding opencode-ai, its linux packages and a
// plugin SDK with one dependency through a caret range.
type fakeNPM struct {
	*httptest.Server
	tarballs map[string][]byte // path → bytes
	docs     map[string]any    // path → document
	hits     atomic.Int32
}

func newFakeNPM(t *testing.T, version string) *fakeNPM {
	f := &fakeNPM{tarballs: map[string][]byte{}, docs: map[string]any{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		p := strings.TrimPrefix(r.URL.EscapedPath(), "/")
		if b, ok := f.tarballs[p]; ok {
			w.Write(b)
			return
		}
		if d, ok := f.docs[p]; ok {
			json.NewEncoder(w).Encode(d)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(f.Close)
	published := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	add := func(name, ver string, files map[string]string, deps map[string]string, extra map[string]any) {
		f.add(t, name, ver, files, deps, extra)
	}
	add("opencode-ai", version, map[string]string{"package.json": "{}"}, nil, map[string]any{
		"optionalDependencies": map[string]string{"opencode-linux-x64": version, "opencode-linux-arm64": version}})
	f.docs["opencode-ai"] = map[string]any{"versions": map[string]any{version: map[string]any{}}, "time": map[string]any{version: published}}
	add("opencode-linux-x64", version, map[string]string{"bin/opencode": "opencode for x64", "package.json": "{}"}, nil, nil)
	add("opencode-linux-arm64", version, map[string]string{"bin/opencode": "opencode for arm64", "package.json": "{}"}, nil, nil)
	add("@opencode-ai/plugin", version, map[string]string{"package.json": `{"name":"@opencode-ai/plugin"}`, "dist/index.js": "export {}"}, map[string]string{"zod": "^4.1.0"}, nil)
	// zod 4.1.8 was out when OpenCode was; 4.2.0 came later and must
	// not be picked, or the same version would build differently later.
	add("zod", "4.1.8", map[string]string{"package.json": `{"name":"zod","version":"4.1.8"}`}, nil, nil)
	add("zod", "4.2.0", map[string]string{"package.json": `{"name":"zod","version":"4.2.0"}`}, nil, nil)
	f.docs["zod"] = map[string]any{
		"versions": map[string]any{"4.1.8": map[string]any{}, "4.2.0": map[string]any{}, "3.0.0": map[string]any{}},
		"time":     map[string]any{"4.1.8": published.Add(-time.Hour), "4.2.0": published.Add(time.Hour), "3.0.0": published.Add(-1000 * time.Hour)},
	}
	return f
}

// add publishes name@ver holding files, with deps and more fields of
// its document.
func (f *fakeNPM) add(t *testing.T, name, ver string, files map[string]string, deps map[string]string, extra map[string]any) {
	t.Helper()
	b := tgz(t, files)
	tp := "tarballs/" + strings.NewReplacer("/", "-", ".", "_").Replace(name) + "-" + ver + ".tgz"
	f.tarballs[tp] = b
	doc := map[string]any{"name": name, "version": ver, "dependencies": deps,
		"dist": map[string]string{"tarball": f.URL + "/" + tp, "integrity": integrity(b)}}
	for k, v := range extra {
		doc[k] = v
	}
	f.docs[escapeName(name)+"/"+ver] = doc
}

// pinned is the OpenCode lock of what f serves for version 1.2.3: the
// binaries, the plugin and zod 4.1.8, with the integrity f publishes.
func (f *fakeNPM) pinned(t *testing.T) []byte {
	t.Helper()
	pkg := func(path, name, ver string) map[string]string {
		doc := f.docs[escapeName(name)+"/"+ver].(map[string]any)
		var integrity string
		switch d := doc["dist"].(type) {
		case map[string]string:
			integrity = d["integrity"]
		case map[string]any:
			integrity, _ = d["integrity"].(string)
		}
		p := map[string]string{"name": name, "version": ver, "integrity": integrity}
		if path != "" {
			p["path"] = path
		}
		return p
	}
	lock := map[string]any{"versions": map[string]any{"1.2.3": map[string]any{
		"binaries": map[string]any{"amd64": pkg("", "opencode-linux-x64", "1.2.3"), "arm64": pkg("", "opencode-linux-arm64", "1.2.3")},
		"sdk":      []any{pkg("node_modules/@opencode-ai/plugin", "@opencode-ai/plugin", "1.2.3"), pkg("node_modules/zod", "zod", "4.1.8")},
	}}}
	b, err := json.Marshal(lock)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testFiles lists every layer of img, later layers last, as
// "name mode uid:gid" lines, and the content of the files named in want.
func testFiles(t *testing.T, img v1.Image, content map[string]string) []string {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, h.Name+" "+modeString(h.Mode)+" "+itoa(h.Uid)+":"+itoa(h.Gid))
			if _, ok := content[h.Name]; ok {
				b, _ := io.ReadAll(tr)
				content[h.Name] = string(b)
			}
		}
		rc.Close()
	}
	return out
}

func modeString(m int64) string { return "0" + strconvFormat(m, 8) }

func itoa(i int) string { return strconvFormat(int64(i), 10) }

func strconvFormat(i int64, base int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= int64(base) {
		b = append([]byte{byte('0' + i%int64(base))}, b...)
	}
	return string(b)
}

// TestBuildOpenCode builds the runtime with OpenCode from a fake registry:
// the binary and the SDK are where the entrypoint and OpenCode look, the
// range resolves to what was out when OpenCode was published, the label
// names the version, a rebuild with the registry gone gives the same
// digest from the cache, and a tarball that does not match its integrity
// stops the build.
func TestBuildOpenCode(t *testing.T) {
	ctx := context.Background()
	f := newFakeNPM(t, "1.2.3")
	pinned := f.pinned(t)
	cache := t.TempDir()
	var log bytes.Buffer
	build := func(reg string) (v1.ImageIndex, error) {
		return Build(ctx, WithModuleDir(moduleRoot), WithTempDir(t.TempDir()), withCompiler(fakeCompile),
			WithOpenCode("1.2.3"), withPinnedLock(pinned), WithNPMRegistry(reg), WithNPMCache(cache), WithLog(&log))
	}
	idx, err := build(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := idx.Digest()
	for _, p := range DefaultPlatforms {
		img, err := Platform("runtime", idx, p)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := img.ConfigFile()
		if got := cf.Config.Labels[LabelOpenCodeVersion]; got != "1.2.3" {
			t.Errorf("%s: label %s = %q, want 1.2.3", p, LabelOpenCodeVersion, got)
		}
		content := map[string]string{"usr/local/bin/opencode": "", "home/model/.config/opencode/package.json": "", "home/model/.config/opencode/node_modules/zod/package.json": ""}
		files := strings.Join(testFiles(t, img, content), "\n")
		arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[p.Architecture]
		if content["usr/local/bin/opencode"] != "opencode for "+arch {
			t.Errorf("%s: /usr/local/bin/opencode = %q, want the %s package's", p, content["usr/local/bin/opencode"], arch)
		}
		for _, want := range []string{
			"usr/local/bin/opencode 0755 0:0",
			"home/model/.config/opencode/node_modules/@opencode-ai/plugin/dist/index.js 0644 0:0",
			"home/model/.config/opencode/node_modules/zod/package.json 0644 0:0",
		} {
			if !strings.Contains(files, want+"\n") && !strings.HasSuffix(files, want) {
				t.Errorf("%s: no entry %q in\n%s", p, want, files)
			}
		}
		if !strings.Contains(content["home/model/.config/opencode/node_modules/zod/package.json"], "4.1.8") {
			t.Errorf("zod resolved to %s, want 4.1.8 (4.2.0 came after OpenCode)", content["home/model/.config/opencode/node_modules/zod/package.json"])
		}
		if !strings.Contains(content["home/model/.config/opencode/package.json"], `"@opencode-ai/plugin": "1.2.3"`) {
			t.Errorf("package.json = %s", content["home/model/.config/opencode/package.json"])
		}
	}

	// Offline: the registry is gone, the cache has it all.
	f.Close()
	idx2, err := build(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	if d2, _ := idx2.Digest(); d2 != d1 {
		t.Errorf("rebuilt offline from the cache: %s, first build %s", d2, d1)
	}
	if log.Len() != 0 {
		t.Errorf("log: %s", log.String())
	}
}

func TestBuildOpenCodeTampered(t *testing.T) {
	ctx := context.Background()
	f := newFakeNPM(t, "1.2.3")
	tp := "tarballs/opencode-linux-x64-1.2.3.tgz"
	f.tarballs[tp] = tgz(t, map[string]string{"bin/opencode": "a swapped binary"})
	_, err := Build(ctx, WithModuleDir(moduleRoot), WithTempDir(t.TempDir()), withCompiler(fakeCompile),
		WithOpenCode("1.2.3"), withPinnedLock(f.pinned(t)), WithNPMRegistry(f.URL), WithNPMCache(t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "sha512") {
		t.Fatalf("Build with a tarball that does not match its integrity = %v, want an error naming sha512", err)
	}
}

func TestBuildOpenCodeUnreachable(t *testing.T) {
	ctx := context.Background()
	f := newFakeNPM(t, "1.2.3")
	f.Close()
	var log bytes.Buffer
	idx, err := Build(ctx, WithModuleDir(moduleRoot), WithTempDir(t.TempDir()), withCompiler(fakeCompile),
		WithOpenCode("1.2.3"), withPinnedLock(f.pinned(t)), WithNPMRegistry(f.URL), WithNPMCache(t.TempDir()), WithLog(&log))
	if err != nil {
		t.Fatal(err)
	}
	if msg := log.String(); strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "without OpenCode 1.2.3") {
		t.Errorf("log = %q, want one line saying the image has no OpenCode", msg)
	}
	img, _ := Platform("runtime", idx, DefaultPlatforms[0])
	cf, _ := img.ConfigFile()
	if _, ok := cf.Config.Labels[LabelOpenCodeVersion]; ok {
		t.Errorf("an image without OpenCode has the label %s", LabelOpenCodeVersion)
	}
	if n := len(testFiles(t, img, nil)); n != 8 {
		t.Errorf("the image without OpenCode has %d entries, want the runtime's 8", n)
	}
}

// TestOpenCodeRealRegistry builds the runtime with the pinned OpenCode from
// the machine's npm registry twice: the same digest, and the binary in the
// image is byte for byte the one in the tarball whose sha512 the registry
// publishes (read here independently of the build).
func TestOpenCodeRealRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("downloads OpenCode (60 MB) once into the cache")
	}
	ctx := context.Background()
	regURL := NPMRegistryURL(os.Getenv)
	client, err := npmHTTPClient(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	reg := &npmRegistry{base: regURL, client: client}
	doc, err := reg.version(ctx, "opencode-linux-x64", DefaultOpenCodeVersion)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the npm registry is unreachable: %v", err)
		}
		t.Skipf("the npm registry is unreachable: %v", err)
	}
	cache := DefaultNPMCache(os.Getenv)
	p := v1.Platform{OS: "linux", Architecture: "amd64"}
	var digests []v1.Hash
	var img v1.Image
	for i := 0; i < 2; i++ {
		start := time.Now()
		idx, err := Build(ctx, WithModuleDir(moduleRoot), WithTempDir(t.TempDir()), withCompiler(fakeCompile),
			WithPlatforms(p), WithOpenCode(DefaultOpenCodeVersion), WithNPMRegistry(regURL), WithNPMCache(cache))
		if err != nil {
			t.Fatal(err)
		}
		d, _ := idx.Digest()
		digests = append(digests, d)
		img, _ = Platform("runtime", idx, p)
		t.Logf("build %d: %s in %s", i+1, d, time.Since(start).Round(time.Millisecond))
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds: %s and %s", digests[0], digests[1])
	}
	if ls, err := img.Layers(); err == nil {
		for i, l := range ls {
			n, _ := l.Size()
			t.Logf("layer %d: %.1f MB compressed", i+1, float64(n)/1e6)
		}
	}

	// The tarball, checked here against the published integrity.
	want, _ := sha512Integrity(doc.Dist.Integrity)
	var inTarball string
	filepath.WalkDir(filepath.Join(cache, "tarballs"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), "opencode-linux-x64-"+DefaultOpenCodeVersion+"-") {
			return nil
		}
		if checkSHA512(p, want) != nil {
			return nil
		}
		f, _ := os.Open(p)
		defer f.Close()
		zr, _ := gzip.NewReader(f)
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			if h.Name == "package/bin/opencode" {
				s := sha256.New()
				io.Copy(s, tr)
				inTarball = string(s.Sum(nil))
			}
		}
		return nil
	})
	if inTarball == "" {
		t.Fatal("no cached tarball of opencode-linux-x64 matches the registry's integrity")
	}
	layers, _ := img.Layers()
	rc, _ := layers[1].Uncompressed()
	defer rc.Close()
	tr := tar.NewReader(rc)
	var inImage string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		if h.Name == OpenCodeBinary[1:] {
			s := sha256.New()
			io.Copy(s, tr)
			inImage = string(s.Sum(nil))
		}
	}
	if inImage == "" || inImage != inTarball {
		t.Errorf("the image's %s (sha256 %x) is not the tarball's (sha256 %x)", OpenCodeBinary, inImage, inTarball)
	}
}
