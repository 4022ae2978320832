package runtimebin

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/42-b3yond-6ug/ssebench/internal/gobuild"
	"github.com/42-b3yond-6ug/ssebench/oci"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/errgroup"
)

// Packages of the runtime's programs, relative to the module root.
const (
	EntrypointPackage = "./cmd/ssebench-entrypoint"
	DaemonPackage     = "./cmd/ssebench-daemon"
	MCPPackage        = "./cmd/ssebench-mcp"
)

// DefaultPlatforms are the platforms Build builds for when not told
// otherwise: the two that tasks run on (SPEC.md section 9).
var DefaultPlatforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64"},
}

// buildJobs bounds concurrent compilations: each already uses every core.
const buildJobs = 2

// BuildOption configures Build.
type BuildOption func(*buildOptions) error

type buildOptions struct {
	platforms   []v1.Platform
	moduleDir   string
	tempDir     string
	when        time.Time
	compression oci.Compression
	goTool      string
	compile     compileFunc
	entrypoint  string // the entrypoint's main package
	openCode    string // OpenCode's npm version; "" = none
	npmRegistry string
	npmCache    string
	log         io.Writer
	// pinned is the OpenCode lock the build checks the registry
	// against: opencode.lock.json, but in tests.
	pinned []byte
}

// compileFunc builds the entrypoint, the daemon and the MCP server for p
// into dir, as files named "entrypoint", "daemon" and "mcp". Tests replace the Go toolchain
// with a fake through withCompiler.
type compileFunc func(ctx context.Context, o *buildOptions, p v1.Platform, dir string) error

func makeBuildOptions(opts ...BuildOption) (*buildOptions, error) {
	o := &buildOptions{
		platforms:   DefaultPlatforms,
		when:        sourceDateEpoch(),
		compression: oci.Gzip,
		goTool:      "go",
		compile:     goCompile,
		entrypoint:  EntrypointPackage,
		npmRegistry: NPMRegistryURL(os.Getenv),
		log:         io.Discard,
		pinned:      pinnedLock,
	}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if o.moduleDir == "" {
		return nil, errors.New("no module to build the runtime from: see runtimebin.WithModuleDir")
	}
	if o.tempDir == "" {
		return nil, errors.New("no directory for build files and layer spool files: see runtimebin.WithTempDir")
	}
	if o.npmCache == "" {
		o.npmCache = DefaultNPMCache(os.Getenv)
	}
	return o, nil
}

// sourceDateEpoch returns $SOURCE_DATE_EPOCH, or the Unix epoch when it is
// unset or malformed.
func sourceDateEpoch() time.Time {
	if v := strings.TrimSpace(os.Getenv("SOURCE_DATE_EPOCH")); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			return time.Unix(n, 0).UTC()
		}
	}
	return time.Unix(0, 0).UTC()
}

// WithPlatforms sets the platforms to build for, each linux/amd64 or
// linux/arm64, in the order the index lists them. The default value is
// DefaultPlatforms.
func WithPlatforms(ps ...v1.Platform) BuildOption {
	return func(o *buildOptions) error {
		if len(ps) == 0 {
			return errors.New("no platform to build the runtime for")
		}
		seen := map[string]bool{}
		for _, p := range ps {
			if p.OS != "linux" || (p.Architecture != "amd64" && p.Architecture != "arm64") {
				return fmt.Errorf("cannot build the runtime for %s: use linux/amd64 or linux/arm64", p.String())
			}
			if seen[p.String()] {
				return fmt.Errorf("platform %s is named twice", p.String())
			}
			seen[p.String()] = true
		}
		o.platforms = ps
		return nil
	}
}

// WithModuleDir sets the root of the ssebench module, where `go build`
// runs. It is required.
func WithModuleDir(dir string) BuildOption {
	return func(o *buildOptions) error {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
			return fmt.Errorf("%s is not a Go module root (no go.mod): pass the ssebench source tree", dir)
		}
		o.moduleDir = dir
		return nil
	}
}

// WithEntrypointPackage builds the entrypoint from pkg, a main package
// (a path relative to the module directory, such as ./cmd/my-entrypoint,
// or an import path the module can build), instead of
// ./cmd/ssebench-entrypoint: the way an extension ships its own entrypoint
// modes (package sserun/entrypoint, RegisterMode). The default is
// EntrypointPackage.
func WithEntrypointPackage(pkg string) BuildOption {
	return func(o *buildOptions) error {
		pkg = strings.TrimSpace(pkg)
		if pkg == "" || strings.HasPrefix(pkg, "-") {
			return fmt.Errorf("--entrypoint %q is not a Go package: pass a main package such as ./cmd/my-entrypoint", pkg)
		}
		o.entrypoint = pkg
		return nil
	}
}

// WithTempDir sets the directory for the compiled binaries (removed when
// Build returns) and the layers' spool files. The layers of the returned
// index live in it: keep it until the index has been written, and pass a
// temporary directory of the store so that writing renames rather than
// copies. It is required.
func WithTempDir(dir string) BuildOption {
	return func(o *buildOptions) error { o.tempDir = dir; return nil }
}

// WithTime sets the modification time of the layers' entries and the
// images' creation time. The default value is $SOURCE_DATE_EPOCH, or the
// Unix epoch when it is unset.
func WithTime(t time.Time) BuildOption {
	return func(o *buildOptions) error {
		if t.IsZero() {
			return errors.New("the runtime's build time must not be the zero time")
		}
		o.when = t.UTC().Truncate(time.Second)
		return nil
	}
}

// WithCompression sets the layers' compression. The default value is
// oci.Gzip.
func WithCompression(c oci.Compression) BuildOption {
	return func(o *buildOptions) error { o.compression = c; return nil }
}

// WithGo sets the go command to build with. The default value is "go",
// found in $PATH.
func WithGo(path string) BuildOption {
	return func(o *buildOptions) error { o.goTool = path; return nil }
}

// WithOpenCode makes the runtime image carry OpenCode of npm version
// version (see DefaultOpenCodeVersion) for each platform: the server at
// /usr/local/bin/opencode and its plugin SDK under /home/model/.config/opencode,
// from the npm registry (see WithNPMRegistry), each tarball checked against
// the integrity the registry publishes and kept in the cache (see
// WithNPMCache). When the registry cannot be reached and the cache does not
// have the version, the image is built without OpenCode and the log (see
// WithLog) says so. An empty version, the default, means no OpenCode.
func WithOpenCode(version string) BuildOption {
	return func(o *buildOptions) error {
		version = strings.TrimSpace(version)
		if version == "none" {
			version = ""
		}
		if version != "" && (version == "latest" || checkNPMVersion(version) != nil) {
			return fmt.Errorf("--opencode-version %q is not an exact version: pass one such as %s (or none)", version, DefaultOpenCodeVersion)
		}
		o.openCode = version
		return nil
	}
}

// WithNPMRegistry sets the npm registry OpenCode comes from. The default
// value is NPMRegistryURL(os.Getenv): the machine's npm configuration.
func WithNPMRegistry(u string) BuildOption {
	return func(o *buildOptions) error {
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return fmt.Errorf("npm registry %q is not an http(s) URL: fix NPM_CONFIG_REGISTRY or ~/.npmrc", u)
		}
		o.npmRegistry = withSlash(u)
		return nil
	}
}

// WithNPMCache sets the directory where downloaded tarballs and resolved
// versions are kept. The default value is DefaultNPMCache(os.Getenv).
func WithNPMCache(dir string) BuildOption {
	return func(o *buildOptions) error { o.npmCache = dir; return nil }
}

// WithLog sets where Build reports what the user should know (such as
// OpenCode left out). The default value discards it.
func WithLog(w io.Writer) BuildOption {
	return func(o *buildOptions) error { o.log = w; return nil }
}

// DefaultNPMCache is the npm cache of the runtime build: $SSEBENCH_CACHE/npm,
// else the development scripts' $SSEBENCH_DEV_CACHE/npm, else the user
// cache directory's ssebench/npm.
func DefaultNPMCache(getenv func(string) string) string {
	for _, k := range []string{"SSEBENCH_CACHE", "SSEBENCH_DEV_CACHE"} {
		if v := getenv(k); v != "" {
			return filepath.Join(v, "npm")
		}
	}
	if c, err := os.UserCacheDir(); err == nil {
		return filepath.Join(c, "ssebench", "npm")
	}
	return filepath.Join(os.TempDir(), "ssebench-npm")
}

// withPinnedLock replaces opencode.lock.json, for tests.
func withPinnedLock(b []byte) BuildOption {
	return func(o *buildOptions) error { o.pinned = b; return nil }
}

// withCompiler replaces the Go toolchain, for tests.
func withCompiler(c compileFunc) BuildOption {
	return func(o *buildOptions) error { o.compile = c; return nil }
}

// Build compiles the entrypoint, the daemon and the MCP server (static,
// reproducible) for each platform and assembles the runtime image (SPEC.md
// sections 5 and 13): an OCI image index with one image FROM scratch per
// platform, each with one layer holding /ssebench/ssebench-daemon and
// /usr/local/bin/entrypoint (root-owned, mode 0755, with their parent
// directories), /ssebench/mcp/ssebench-mcp (root-owned, 0700 in a 0700
// directory: the agent can neither run nor read it) and the config
// ENTRYPOINT ["/usr/local/bin/entrypoint"]. The same sources, toolchain
// and options give the same index digest.
//
// The layers are spool files in the temporary directory (see
// WithTempDir); the caller removes them once the index is written.
func Build(ctx context.Context, opts ...BuildOption) (_ v1.ImageIndex, retErr error) {
	o, err := makeBuildOptions(opts...)
	if err != nil {
		return nil, err
	}
	binDir, err := os.MkdirTemp(o.tempDir, "runtime-bin-")
	if err != nil {
		return nil, fmt.Errorf("building the runtime: %w", err)
	}
	defer os.RemoveAll(binDir)

	dirs := make([]string, len(o.platforms))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(buildJobs)
	for i, p := range o.platforms {
		dirs[i] = filepath.Join(binDir, p.OS+"-"+p.Architecture)
		g.Go(func() error {
			if err := os.Mkdir(dirs[i], 0o755); err != nil {
				return err
			}
			if err := o.compile(gctx, o, p, dirs[i]); err != nil {
				return fmt.Errorf("building the runtime for %s: %w", p.String(), err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}

	// OpenCode, when asked for: fetched and checked before any layer is
	// written, so that an unreachable registry costs nothing.
	var ocBins map[string]v1.Layer
	var ocSDK v1.Layer
	ocVersion := o.openCode
	if ocVersion != "" {
		var archs []string
		for _, p := range o.platforms {
			archs = append(archs, p.Architecture)
		}
		ocBins, ocSDK, err = buildOpenCode(ctx, o, archs, binDir)
		switch {
		case errors.Is(err, errNPMUnreachable):
			fmt.Fprintf(o.log, "building the runtime image without OpenCode %s: %v (reach the npm registry, or set NPM_CONFIG_REGISTRY to a mirror, and build again)\n", ocVersion, firstLine(err))
			ocVersion = ""
		case err != nil:
			return nil, err
		}
	}

	var layers []v1.Layer
	for _, l := range ocBins {
		layers = append(layers, l)
	}
	if ocSDK != nil {
		layers = append(layers, ocSDK)
	}
	defer func() {
		if retErr != nil {
			for _, l := range layers {
				if s, ok := l.(*oci.SpooledLayer); ok {
					_ = s.Remove()
				}
			}
		}
	}()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, p := range o.platforms {
		entries, err := layerEntries(dirs[i], o.when)
		if err != nil {
			return nil, fmt.Errorf("building the runtime for %s: %w", p.String(), err)
		}
		l, err := oci.WriteLayer(ctx, o.tempDir, entries,
			oci.WithCompression(o.compression), oci.WithDefaultTime(o.when))
		if err != nil {
			return nil, fmt.Errorf("writing the runtime layer for %s: %w", p.String(), err)
		}
		layers = append(layers, l)
		ls := []v1.Layer{l}
		if ocVersion != "" {
			ls = append(ls, ocBins[p.Architecture], ocSDK)
		}
		img, err := image(ls, p, o.when, ocVersion)
		if err != nil {
			return nil, fmt.Errorf("assembling the runtime image for %s: %w", p.String(), err)
		}
		plat := p
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &plat},
		})
	}
	// Compute the index now, so that errors show here and not when the
	// caller writes it.
	if _, err := idx.Digest(); err != nil {
		return nil, fmt.Errorf("assembling the runtime index: %w", err)
	}
	return idx, nil
}

// image returns the image FROM scratch holding layers ls (the runtime's,
// then OpenCode's when openCode names its version), for p.
func image(ls []v1.Layer, p v1.Platform, when time.Time, openCode string) (v1.Image, error) {
	var labels map[string]string
	if openCode != "" {
		labels = map[string]string{LabelOpenCodeVersion: openCode}
	}
	cfg := &v1.ConfigFile{
		Architecture: p.Architecture,
		OS:           p.OS,
		Variant:      p.Variant,
		Created:      v1.Time{Time: when},
		Config: v1.Config{
			Entrypoint: []string{Entrypoint},
			Labels:     labels,
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err := mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	comments := []string{"ssebench entrypoint and daemon", "OpenCode " + openCode + " server", "OpenCode " + openCode + " plugin SDK"}
	for i, l := range ls {
		img, err = mutate.Append(img, mutate.Addendum{
			Layer: l,
			History: v1.History{
				Created:   v1.Time{Time: when},
				CreatedBy: "ssebench runtime build",
				Comment:   comments[i],
			},
		})
		if err != nil {
			return nil, err
		}
	}
	return img, nil
}

// buildOpenCode resolves OpenCode o.openCode for archs and writes its
// layers, staging the unpacked files under dir.
func buildOpenCode(ctx context.Context, o *buildOptions, archs []string, dir string) (map[string]v1.Layer, v1.Layer, error) {
	client, err := npmHTTPClient(os.Getenv)
	if err != nil {
		return nil, nil, err
	}
	reg := &npmRegistry{base: o.npmRegistry, client: client, cache: o.npmCache}
	lock, err := reg.resolveOpenCode(ctx, o.openCode, archs)
	if err != nil {
		return nil, nil, err
	}
	if err := lock.checkPinned(o.pinned, archs); err != nil {
		return nil, nil, err
	}
	stage, err := os.MkdirTemp(dir, "opencode-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(stage)
	return openCodeLayers(ctx, reg, lock, archs, stage, o)
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// layerEntries lists the runtime layer: the binaries of dir and their
// parent directories, root-owned, with the build time.
func layerEntries(dir string, when time.Time) ([]oci.Entry, error) {
	entry := func(name string, typ byte, mode int64) oci.Entry {
		return oci.Entry{Header: &tar.Header{Typeflag: typ, Name: name, Mode: mode, ModTime: when}}
	}
	file := func(name, src string, mode int64) (oci.Entry, error) {
		fi, err := os.Stat(src)
		if err != nil {
			return oci.Entry{}, err
		}
		if !fi.Mode().IsRegular() {
			return oci.Entry{}, fmt.Errorf("%s is not a regular file", src)
		}
		e := entry(name, tar.TypeReg, mode)
		e.Header.Size = fi.Size()
		e.Open = func() (io.ReadCloser, error) { return os.Open(src) }
		return e, nil
	}
	daemon, err := file(strings.TrimPrefix(Daemon, "/"), filepath.Join(dir, "daemon"), 0o755)
	if err != nil {
		return nil, err
	}
	mcp, err := file(strings.TrimPrefix(MCP, "/"), filepath.Join(dir, "mcp"), 0o700)
	if err != nil {
		return nil, err
	}
	ep, err := file(strings.TrimPrefix(Entrypoint, "/"), filepath.Join(dir, "entrypoint"), 0o755)
	if err != nil {
		return nil, err
	}
	return []oci.Entry{
		entry(strings.TrimPrefix(path.Dir(Daemon), "/"), tar.TypeDir, 0o755),
		entry(strings.TrimPrefix(path.Dir(MCP), "/"), tar.TypeDir, 0o700),
		mcp,
		daemon,
		entry("usr", tar.TypeDir, 0o755),
		entry("usr/local", tar.TypeDir, 0o755),
		entry(strings.TrimPrefix(path.Dir(Entrypoint), "/"), tar.TypeDir, 0o755),
		ep,
	}, nil
}

// goCompile runs `go build` for each program.
func goCompile(ctx context.Context, o *buildOptions, p v1.Platform, dir string) error {
	for _, b := range []struct{ pkg, out string }{
		{o.entrypoint, "entrypoint"},
		{DaemonPackage, "daemon"},
		{MCPPackage, "mcp"},
	} {
		if err := gobuild.Compile(ctx, o.goTool, o.moduleDir, b.pkg, filepath.Join(dir, b.out), p); err != nil {
			return err
		}
	}
	return nil
}
