package buildkit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/plugins/content/local"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	bkclient "github.com/moby/buildkit/client"
	"github.com/moby/buildkit/exporter/containerimage/exptypes"
	digest "github.com/opencontainers/go-digest"
	"github.com/tonistiigi/fsutil"
)

// Request is one Dockerfile build. Only ContextDir is required.
type Request struct {
	// Dockerfile is the path of the Dockerfile. The default value is
	// "Dockerfile" in ContextDir.
	Dockerfile string
	// ContextDir is the build context: the directory that COPY and ADD
	// read from.
	ContextDir string
	// Target is the stage to build. The default is the last stage.
	Target string
	// Platform is the platform to build for, as "os/arch[/variant]", for
	// example "linux/amd64". The default is the daemon's own platform.
	Platform string
	// BuildArgs are the values of the Dockerfile's ARGs.
	BuildArgs map[string]string
	// Labels are added to the image config.
	Labels map[string]string
	// LocalContexts maps a named context (a name that FROM or COPY --from
	// uses) to a directory on this machine.
	LocalContexts map[string]string
	// LayoutContexts maps a named context to an image in an OCI image
	// layout directory on this machine, for example the tool image as
	// "ssebench-agent". The layout is only read.
	LayoutContexts map[string]LayoutImage
	// ImageContexts maps a named context to an image reference that
	// buildkitd pulls itself, for example "127.0.0.1:5000/ssebench/os:x".
	ImageContexts map[string]string
	// NoCache rebuilds every step instead of reusing BuildKit's cache.
	NoCache bool
	// SourceDateEpoch, when set, is the build's SOURCE_DATE_EPOCH: the
	// image's creation time, and the time that newer files of the new
	// layers are clamped to (the exporter's rewrite-timestamp), so that a
	// fresh checkout's times do not reach the image.
	SourceDateEpoch time.Time
	// Push is the image reference to push the result to. When it is
	// empty, the image is written to a fresh OCI image layout directory
	// instead (see Result.LayoutDir). Pushes to localhost and loopback
	// addresses use plain HTTP.
	Push string
}

// LayoutImage names one image in an OCI image layout directory.
type LayoutImage struct {
	// Dir is the layout directory (the one holding index.json).
	Dir string
	// Digest is the digest of the image's manifest, or of an index when
	// the build's platform picks the manifest from it.
	Digest v1.Hash
}

// Local names under which BuildKit's Dockerfile frontend looks for the build
// context and the Dockerfile; a named local context must not take them.
const (
	localNameContext    = "context"
	localNameDockerfile = "dockerfile"
)

// dockerfileFrontend is BuildKit's built-in Dockerfile frontend, run through
// the gateway.
const dockerfileFrontend = "dockerfile.v0"

// dockerfilePath returns the Dockerfile the request builds.
func (r Request) dockerfilePath() string {
	if r.Dockerfile != "" {
		return r.Dockerfile
	}
	return filepath.Join(r.ContextDir, "Dockerfile")
}

// validate checks the request without talking to the daemon, so that a
// mistake is reported before any progress is shown.
func (r Request) validate() error {
	if r.ContextDir == "" {
		return errors.New("build context directory is empty")
	}
	if err := checkDir("build context", r.ContextDir); err != nil {
		return err
	}
	df := r.dockerfilePath()
	fi, err := os.Stat(df)
	if err != nil {
		return fmt.Errorf("reading Dockerfile: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("Dockerfile %q is not a regular file", df)
	}
	if r.Platform != "" {
		p, err := v1.ParsePlatform(r.Platform)
		if err != nil || p.OS == "" || p.Architecture == "" {
			return fmt.Errorf("invalid platform %q: want os/arch[/variant], for example linux/amd64", r.Platform)
		}
	}
	for k := range r.BuildArgs {
		if k == "" || strings.ContainsAny(k, "= \t\n") {
			return fmt.Errorf("invalid build argument name %q", k)
		}
	}
	for k := range r.Labels {
		if k == "" {
			return errors.New("label name is empty")
		}
	}

	seen := map[string]string{}
	claim := func(kind, name string) error {
		if name == "" || strings.ContainsAny(name, " \t\n") {
			return fmt.Errorf("invalid %s context name %q", kind, name)
		}
		if prev, ok := seen[name]; ok {
			return fmt.Errorf("context %q is given twice (%s and %s)", name, prev, kind)
		}
		seen[name] = kind
		return nil
	}
	for _, n := range sortedKeys(r.LocalContexts) {
		if err := claim("local", n); err != nil {
			return err
		}
		if n == localNameContext || n == localNameDockerfile {
			return fmt.Errorf("local context name %q is reserved for the build context and the Dockerfile", n)
		}
		if err := checkDir(fmt.Sprintf("local context %q", n), r.LocalContexts[n]); err != nil {
			return err
		}
	}
	for _, n := range sortedKeys(r.LayoutContexts) {
		if err := claim("layout", n); err != nil {
			return err
		}
		if err := r.LayoutContexts[n].check(); err != nil {
			return fmt.Errorf("layout context %q: %w", n, err)
		}
	}
	for _, n := range sortedKeys(r.ImageContexts) {
		if err := claim("image", n); err != nil {
			return err
		}
		if _, err := name.ParseReference(r.ImageContexts[n]); err != nil {
			return fmt.Errorf("image context %q: %w", n, err)
		}
	}
	if r.Push != "" {
		if _, err := name.ParseReference(r.Push); err != nil {
			return fmt.Errorf("invalid push reference: %w", err)
		}
	}
	return nil
}

// check makes sure the layout holds the image's blob, so that a wrong digest
// is reported here rather than as a "not found" deep inside BuildKit.
func (li LayoutImage) check() error {
	if li.Dir == "" {
		return errors.New("layout directory is empty")
	}
	if li.Digest == (v1.Hash{}) {
		return errors.New("image digest is empty")
	}
	if _, err := os.Stat(filepath.Join(li.Dir, "index.json")); err != nil {
		return fmt.Errorf("%q is not an OCI image layout: %w", li.Dir, err)
	}
	blob := filepath.Join(li.Dir, "blobs", li.Digest.Algorithm, li.Digest.Hex)
	if _, err := os.Stat(blob); err != nil {
		return fmt.Errorf("layout %q has no blob %s", li.Dir, li.Digest)
	}
	return nil
}

func checkDir(what, dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("reading %s: %w", what, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s %q is not a directory", what, dir)
	}
	return nil
}

// newSolveOpt fills in BuildKit's request for a validated Request. The image
// goes to the OCI layout directory layoutDir, or is pushed when r.Push is set.
func newSolveOpt(r Request, layoutDir string, plainHTTP func(host string) bool) (bkclient.SolveOpt, error) {
	df, err := filepath.Abs(r.dockerfilePath())
	if err != nil {
		return bkclient.SolveOpt{}, err
	}
	attrs := map[string]string{
		"filename": filepath.Base(df),
	}
	dirs := map[string]string{
		localNameContext:    r.ContextDir,
		localNameDockerfile: filepath.Dir(df),
	}
	if r.Target != "" {
		attrs["target"] = r.Target
	}
	if r.Platform != "" {
		attrs["platform"] = r.Platform
	}
	if r.NoCache {
		// An empty value means every stage.
		attrs["no-cache"] = ""
	}
	for k, v := range r.BuildArgs {
		attrs["build-arg:"+k] = v
	}
	if !r.SourceDateEpoch.IsZero() {
		attrs["build-arg:SOURCE_DATE_EPOCH"] = strconv.FormatInt(r.SourceDateEpoch.Unix(), 10)
	}
	for k, v := range r.Labels {
		attrs["label:"+k] = v
	}
	for n, dir := range r.LocalContexts {
		attrs["context:"+n] = "local:" + n
		dirs[n] = dir
	}
	for n, ref := range r.ImageContexts {
		attrs["context:"+n] = "docker-image://" + ref
	}

	mounts := make(map[string]fsutil.FS, len(dirs))
	// BuildKit keeps the last copy of a local context under the context's
	// name and the session's shared key, and sends a later build only the
	// files whose size or modification time differ. With no shared key,
	// every task folder's "context" was synced onto the last one's copy:
	// a script of the same size and time (git archive gives every file
	// one time) stayed the other task's. The key names the folders, as
	// docker buildx's does.
	sk := sha256.New()
	for _, n := range sortedKeys(dirs) {
		abs, err := filepath.Abs(dirs[n])
		if err != nil {
			return bkclient.SolveOpt{}, err
		}
		fs, err := fsutil.NewFS(abs)
		if err != nil {
			return bkclient.SolveOpt{}, fmt.Errorf("opening %q: %w", dirs[n], err)
		}
		mounts[n] = fs
		fmt.Fprintf(sk, "%s\x00%s\x00", n, abs)
	}

	// BuildKit reads a layout through a content store that the client
	// serves over the session, keyed by a store ID that must be a valid
	// image name. Contexts from the same directory share one store.
	stores := map[string]content.Store{}
	storeIDs := map[string]string{}
	for _, n := range sortedKeys(r.LayoutContexts) {
		li := r.LayoutContexts[n]
		dir, err := filepath.Abs(li.Dir)
		if err != nil {
			return bkclient.SolveOpt{}, err
		}
		id, ok := storeIDs[dir]
		if !ok {
			id = fmt.Sprintf("ssebench-layout-%d", len(storeIDs))
			// NewStore probes for fs-verity by creating and removing a
			// temporary directory in dir, and logs a warning through
			// containerd's logger where the filesystem lacks it; it
			// writes nothing else.
			cs, err := local.NewStore(dir)
			if err != nil {
				return bkclient.SolveOpt{}, fmt.Errorf("opening OCI layout %q: %w", li.Dir, err)
			}
			storeIDs[dir] = id
			stores[id] = readOnlyStore{cs}
		}
		attrs["context:"+n] = "oci-layout://" + id + "@" + li.Digest.String()
	}

	export := bkclient.ExportEntry{
		Type: bkclient.ExporterOCI,
		Attrs: map[string]string{
			// With tar=false the exporter writes blobs and index.json
			// into OutputDir instead of sending a tarball.
			"tar":                           "false",
			string(exptypes.OptKeyOCITypes): "true",
			// A local build is read on this machine: gzip at level 1
			// costs a third of the default level's time at export
			// (toolchain layers are hundreds of MB) and every consumer
			// (containerd 1.6, skopeo, umoci, the store) reads it.
			// Pushed images keep BuildKit's default.
			string(exptypes.OptKeyLayerCompression): "gzip",
			string(exptypes.OptKeyCompressionLevel): "1",
		},
		OutputDir: layoutDir,
	}
	if r.Push != "" {
		export = bkclient.ExportEntry{
			Type: bkclient.ExporterImage,
			Attrs: map[string]string{
				string(exptypes.OptKeyName):     r.Push,
				string(exptypes.OptKeyPush):     "true",
				string(exptypes.OptKeyOCITypes): "true",
			},
		}
		insecure, err := isLoopbackRegistry(r.Push)
		if err != nil {
			return bkclient.SolveOpt{}, err
		}
		if plainHTTP != nil {
			if ref, err := name.ParseReference(r.Push); err == nil && plainHTTP(ref.Context().RegistryStr()) {
				insecure = true
			}
		}
		if insecure {
			export.Attrs[string(exptypes.OptKeyInsecure)] = "true"
		}
	}

	if !r.SourceDateEpoch.IsZero() {
		export.Attrs[string(exptypes.OptKeyRewriteTimestamp)] = "true"
	}

	opt := bkclient.SolveOpt{
		Frontend:      dockerfileFrontend,
		FrontendAttrs: attrs,
		LocalMounts:   mounts,
		SharedKey:     "ssebench-" + hex.EncodeToString(sk.Sum(nil)[:16]),
		Exports:       []bkclient.ExportEntry{export},
	}
	if len(stores) > 0 {
		opt.OCIStores = stores
	}
	return opt, nil
}

// isLoopbackRegistry tells whether ref's registry is on this machine, where
// the project's registry speaks plain HTTP.
func isLoopbackRegistry(ref string) (bool, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return false, fmt.Errorf("invalid push reference: %w", err)
	}
	host := r.Context().RegistryStr()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// readOnlyStore serves a layout to BuildKit without letting the session
// write into it: the layout belongs to the caller (often the project's
// store), and BuildKit only needs to read the named context's blobs.
type readOnlyStore struct {
	content.Store
}

var _ content.Store = readOnlyStore{}

var errReadOnly = errors.New("OCI layout context is read-only")

// Writer implements content.Ingester by refusing.
func (readOnlyStore) Writer(context.Context, ...content.WriterOpt) (content.Writer, error) {
	return nil, errReadOnly
}

// Delete implements content.Manager by refusing.
func (readOnlyStore) Delete(context.Context, digest.Digest) error { return errReadOnly }

// Update implements content.Manager by refusing.
func (readOnlyStore) Update(context.Context, content.Info, ...string) (content.Info, error) {
	return content.Info{}, errReadOnly
}

// Abort implements content.IngestManager by refusing.
func (readOnlyStore) Abort(context.Context, string) error { return errReadOnly }

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
