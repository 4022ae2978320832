package runtimebin

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/42-b3yond-6ug/ssebench/oci"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/mod/semver"
)

// OpenCode in the runtime image (SPEC.md section 4: "/usr/local/bin/opencode,
// the OpenCode server, which the entrypoint starts when present").
const (
	// DefaultOpenCodeVersion is the npm version of opencode-ai the runtime
	// carries unless told otherwise: pinned, so that a rebuild gives the
	// same image.
	DefaultOpenCodeVersion = "1.18.33"
	// OpenCodeBinary is the server's path in the image.
	OpenCodeBinary = "/usr/local/bin/opencode"
	// OpenCodeConfigDir is where the plugin SDK is seeded: OpenCode
	// installs @opencode-ai/plugin into each config directory at start
	// and waits for it before loading a plugin; the run has no network,
	// so the package and what it needs are there already.
	OpenCodeConfigDir = "/home/model/.config/opencode"
	// LabelOpenCodeVersion is the runtime image's label naming the
	// OpenCode version it carries (absent: it carries none).
	LabelOpenCodeVersion = "dev.ssebench.opencode.version"
	// openCodePackage is OpenCode on npm; its optionalDependencies name
	// one package per platform, holding the binary at bin/opencode.
	openCodePackage = "opencode-ai"
	// openCodeSDK is the plugin SDK package, versioned with OpenCode.
	openCodeSDK = "@opencode-ai/plugin"
)

// openCodePlatformPackages maps an architecture to OpenCode's npm package
// for linux on it (glibc, the default build; the baseline and musl builds
// are other packages).
var openCodePlatformPackages = map[string]string{
	"amd64": "opencode-linux-x64",
	"arm64": "opencode-linux-arm64",
}

// errNPMUnreachable marks a failure to reach the registry, after which
// the runtime is built without OpenCode; any other failure (a tarball
// that does not match its integrity) stops the build.
var errNPMUnreachable = errors.New("npm registry unreachable")

// openCodeLock is everything one OpenCode version's layers are made of,
// resolved once and then kept in the cache: a rebuild reads it instead of
// the registry, and so needs no network and gives the same bytes.
type openCodeLock struct {
	Version  string                `json:"version"`
	Binaries map[string]npmVersion `json:"binaries"` // by architecture
	SDK      []sdkPackage          `json:"sdk"`      // sorted by path
}

// sdkPackage is one package of the seeded SDK and where it goes under
// the config directory (node_modules/NAME, or nested under the package
// that needs a version of its own).
type sdkPackage struct {
	Path string `json:"path"`
	npmVersion
}

// npmVersionDoc adds what the opencode-ai document has beyond npmVersion.
type npmVersionDoc struct {
	npmVersion
	OptionalDependencies map[string]string `json:"optionalDependencies"`
}

func (r *npmRegistry) lockFile(version string) string {
	return filepath.Join(r.cache, "opencode", version+".json")
}

// resolveOpenCode returns the lock of version for archs: from the cache
// when it has one that covers them, else from the registry (and then
// cached).
func (r *npmRegistry) resolveOpenCode(ctx context.Context, version string, archs []string) (*openCodeLock, error) {
	var lock openCodeLock
	if b, err := os.ReadFile(r.lockFile(version)); err == nil && json.Unmarshal(b, &lock) == nil && lock.Version == version {
		missing := false
		for _, a := range archs {
			if _, ok := lock.Binaries[a]; !ok {
				missing = true
			}
		}
		if !missing {
			return &lock, nil
		}
	}
	pk, err := r.packument(ctx, openCodePackage)
	if err != nil {
		return nil, err
	}
	published, ok := pk.Time[version]
	if _, have := pk.Versions[version]; !have || !ok {
		return nil, fmt.Errorf("OpenCode %s is not on the npm registry %s: pass an existing version to --opencode-version (see `npm view opencode-ai versions`)", version, r.base)
	}
	var doc npmVersionDoc
	if err := r.getJSON(ctx, openCodePackage+"/"+version, &doc); err != nil {
		return nil, err
	}
	lock = openCodeLock{Version: version, Binaries: map[string]npmVersion{}}
	for _, a := range archs {
		pkg, ok := openCodePlatformPackages[a]
		if !ok {
			return nil, fmt.Errorf("OpenCode has no package for linux/%s", a)
		}
		pv, ok := doc.OptionalDependencies[pkg]
		if !ok {
			return nil, fmt.Errorf("opencode-ai@%s does not name %s: pick another --opencode-version", version, pkg)
		}
		if err := checkNPMVersion(pv); err != nil {
			return nil, fmt.Errorf("opencode-ai@%s names %s at %w", version, pkg, err)
		}
		v, err := r.version(ctx, pkg, pv)
		if err != nil {
			return nil, err
		}
		lock.Binaries[a] = *v
	}
	sdk, err := r.resolveTree(ctx, map[string]string{openCodeSDK: version}, published)
	if err != nil {
		return nil, err
	}
	lock.SDK = sdk
	if b, err := json.MarshalIndent(&lock, "", "  "); err == nil {
		_ = writeFileAtomic(r.lockFile(version), b)
	}
	return &lock, nil
}

// resolveTree resolves deps and what they depend on, npm style: a
// package goes to node_modules/NAME at the top unless another version is
// there, then under the package that needs it. A range resolves to the
// highest version published by before, so that the same OpenCode version
// resolves to the same packages on any day. Optional and peer
// dependencies are left out: they are native speed-ups and the host's UI.
func (r *npmRegistry) resolveTree(ctx context.Context, deps map[string]string, before time.Time) ([]sdkPackage, error) {
	type want struct{ parent, name, spec string }
	placed := map[string]string{} // path → version
	var out []sdkPackage
	packuments := map[string]*npmPackument{}
	queue := make([]want, 0, len(deps))
	for _, n := range sortedKeys(deps) {
		queue = append(queue, want{"", n, deps[n]})
	}
	for len(queue) > 0 {
		w := queue[0]
		queue = queue[1:]
		// The name goes into node_modules/NAME and the registry's URLs.
		if err := checkNPMName(w.name); err != nil {
			return nil, fmt.Errorf("%s needs %w", cmpOr(w.parent, "the SDK"), err)
		}
		rng, err := parseNPMRange(w.spec)
		if err != nil {
			return nil, fmt.Errorf("%s needs %s@%s: %w", cmpOr(w.parent, "the SDK"), w.name, w.spec, err)
		}
		top := path.Join("node_modules", w.name)
		if v, ok := placed[top]; ok && rng.matches(v) {
			continue
		}
		var version string
		if len(rng) == 1 && len(rng[0]) == 1 && rng[0][0].op == "=" {
			version = strings.TrimPrefix(rng[0][0].v, "v")
		} else {
			pk := packuments[w.name]
			if pk == nil {
				if pk, err = r.packument(ctx, w.name); err != nil {
					return nil, err
				}
				packuments[w.name] = pk
			}
			best := ""
			for v := range pk.Versions {
				t, ok := pk.Time[v]
				if !ok || t.After(before) || !rng.matches(v) {
					continue
				}
				if best == "" || compareNPM(v, best) > 0 {
					best = v
				}
			}
			if best == "" {
				return nil, fmt.Errorf("no version of %s matches %s (published by %s), which %s needs", w.name, w.spec, before.Format(time.DateOnly), cmpOr(w.parent, "the SDK"))
			}
			version = best
		}
		if err := checkNPMVersion(version); err != nil {
			return nil, fmt.Errorf("%s@%s: %w", w.name, w.spec, err)
		}
		where := top
		if v, ok := placed[top]; ok && v != version {
			where = path.Join(w.parent, "node_modules", w.name)
			if v2, ok := placed[where]; ok {
				if v2 == version {
					continue
				}
				return nil, fmt.Errorf("%s needs %s@%s and %s at once: cannot seed the plugin SDK", w.parent, w.name, version, v2)
			}
		} else if ok {
			continue
		}
		doc, err := r.version(ctx, w.name, version)
		if err != nil {
			return nil, err
		}
		placed[where] = version
		out = append(out, sdkPackage{Path: where, npmVersion: *doc})
		for _, n := range sortedKeys(doc.Dependencies) {
			queue = append(queue, want{where, n, doc.Dependencies[n]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func compareNPM(a, b string) int { return semver.Compare("v"+a, "v"+b) }

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func writeFileAtomic(file string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// What one npm tarball may hold, compressed and unpacked. The OpenCode
// binary's package, the largest, is about 64 MB compressed and 150 MB
// unpacked in a few files; the SDK's are small. A tarball past these is a
// bomb or the wrong package, and would fill the disk of the staging
// folder before its layer is written. Variables for the tests.
var (
	maxNPMTarball  int64 = 512 << 20
	maxNPMUnpacked int64 = 2 << 30
	maxNPMFiles          = 20000
)

// unpackTarball writes the regular files of an npm tarball into dir (a
// slash-separated path inside root), without the tarball's top folder
// ("package/"), and returns how many it wrote. Modes are npm's: 0755 for
// a file with any execute bit, else 0644. Anything but regular files and
// directories is skipped, and a name that would leave dir is skipped too;
// every file is written through root, so that nothing of the tarball, nor
// a dir the registry named, lands outside it.
func unpackTarball(file string, root *os.Root, dir string, only func(string) bool) (int, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", filepath.Base(file), err)
	}
	tr := tar.NewReader(zr)
	n, entries := 0, 0
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("%s: %w", filepath.Base(file), err)
		}
		// Skipped entries count too: reading past them costs the same.
		if entries++; entries > maxNPMFiles {
			return n, fmt.Errorf("%s: more than %d entries, more than any package the runtime image takes: check the npm registry (NPM_CONFIG_REGISTRY or ~/.npmrc)", filepath.Base(file), maxNPMFiles)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if total += h.Size; h.Size < 0 || total > maxNPMUnpacked {
			return n, fmt.Errorf("%s: unpacks to more than %d MiB, more than any package the runtime image takes: check the npm registry (NPM_CONFIG_REGISTRY or ~/.npmrc)", filepath.Base(file), maxNPMUnpacked>>20)
		}
		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		_, rel, ok := strings.Cut(name, "/")
		if !ok || rel == "" || !fs.ValidPath(rel) {
			continue
		}
		if only != nil && !only(rel) {
			continue
		}
		dst := path.Join(dir, rel)
		if err := root.MkdirAll(path.Dir(dst), 0o755); err != nil {
			return n, fmt.Errorf("%s: %w", filepath.Base(file), err)
		}
		mode := os.FileMode(0o644)
		if h.Mode&0o111 != 0 {
			mode = 0o755
		}
		out, err := root.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
		if err != nil {
			return n, fmt.Errorf("%s: %w", filepath.Base(file), err)
		}
		_, err = io.Copy(out, tr)
		if err == nil {
			err = out.Chmod(mode)
		}
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return n, fmt.Errorf("%s: %s: %w", filepath.Base(file), rel, err)
		}
		n++
	}
}

// unpackInto unpacks file into dir (which it creates) through a root
// there: see unpackTarball.
func unpackInto(file, dir string, only func(string) bool) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	return unpackTarball(file, root, ".", only)
}

// openCodeLayers writes the OpenCode layers for each architecture: the
// binary's, one per architecture, and the SDK's, shared (its packages are
// JavaScript, the same on every platform). Files are root-owned with the
// build time; the SDK is readable by all and writable by none but root.
func openCodeLayers(ctx context.Context, reg *npmRegistry, lock *openCodeLock, archs []string, stage string, o *buildOptions) (bins map[string]v1.Layer, sdk v1.Layer, err error) {
	bins = map[string]v1.Layer{}
	defer func() {
		if err != nil {
			for _, l := range append(mapValues(bins), sdk) {
				if s, ok := l.(*oci.SpooledLayer); ok {
					_ = s.Remove()
				}
			}
		}
	}()
	dir := func(name string, uid int) oci.Entry {
		return oci.Entry{Header: &tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, Uid: uid, Gid: uid, ModTime: o.when}}
	}
	for _, a := range archs {
		v := lock.Binaries[a]
		tgz, err := reg.tarball(ctx, &v)
		if err != nil {
			return nil, nil, err
		}
		d := filepath.Join(stage, "bin-"+a)
		n, err := unpackInto(tgz, d, func(rel string) bool { return rel == "bin/opencode" })
		if err != nil {
			return nil, nil, err
		}
		if n != 1 {
			return nil, nil, fmt.Errorf("%s@%s has no bin/opencode", v.Name, v.Version)
		}
		bin := filepath.Join(d, "bin", "opencode")
		fi, err := os.Stat(bin)
		if err != nil {
			return nil, nil, err
		}
		entries := []oci.Entry{
			dir("usr", 0), dir("usr/local", 0), dir("usr/local/bin", 0),
			{Header: &tar.Header{Typeflag: tar.TypeReg, Name: OpenCodeBinary[1:], Mode: 0o755, Size: fi.Size(), ModTime: o.when},
				Open: func() (io.ReadCloser, error) { return os.Open(bin) }},
		}
		l, err := oci.WriteLayer(ctx, o.tempDir, entries, oci.WithCompression(o.compression), oci.WithDefaultTime(o.when))
		if err != nil {
			return nil, nil, fmt.Errorf("writing the OpenCode layer for %s: %w", a, err)
		}
		bins[a] = l
	}

	// The SDK: node_modules as npm would lay it out, and the package.json
	// OpenCode writes there itself, so that it finds nothing to install.
	sdkDir := filepath.Join(stage, "sdk")
	if err := os.MkdirAll(sdkDir, 0o755); err != nil {
		return nil, nil, err
	}
	pj, _ := json.MarshalIndent(map[string]any{"dependencies": map[string]string{openCodeSDK: lock.Version}}, "", "  ")
	if err := os.WriteFile(filepath.Join(sdkDir, "package.json"), append(pj, '\n'), 0o644); err != nil {
		return nil, nil, err
	}
	sdkRoot, err := os.OpenRoot(sdkDir)
	if err != nil {
		return nil, nil, err
	}
	defer sdkRoot.Close()
	for _, p := range lock.SDK {
		if err := checkSDKPath(p.Path, p.Name); err != nil {
			return nil, nil, err
		}
		tgz, err := reg.tarball(ctx, &p.npmVersion)
		if err != nil {
			return nil, nil, err
		}
		if _, err := unpackTarball(tgz, sdkRoot, p.Path, nil); err != nil {
			return nil, nil, err
		}
	}
	root := strings.TrimPrefix(OpenCodeConfigDir, "/")
	entries := []oci.Entry{dir("home", 0), dir("home/model", modelUID), dir("home/model/.config", 0)}
	err = filepath.WalkDir(sdkDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(sdkDir, p)
		name := path.Join(root, filepath.ToSlash(rel))
		if d.IsDir() {
			entries = append(entries, dir(name, 0))
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		entries = append(entries, oci.Entry{
			Header: &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(fi.Mode().Perm()), Size: fi.Size(), ModTime: o.when},
			Open:   func() (io.ReadCloser, error) { return os.Open(p) },
		})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	sdk, err = oci.WriteLayer(ctx, o.tempDir, entries, oci.WithCompression(o.compression), oci.WithDefaultTime(o.when))
	if err != nil {
		return nil, nil, fmt.Errorf("writing the OpenCode SDK layer: %w", err)
	}
	return bins, sdk, nil
}

// modelUID owns /home/model, as the tool layer makes it.
const modelUID = 1000

func mapValues(m map[string]v1.Layer) []v1.Layer {
	out := make([]v1.Layer, 0, len(m))
	for _, l := range m {
		out = append(out, l)
	}
	return out
}
