// Package casebuild provides the BuildKit builds of base and case images:
// which images to build, with which names, arguments and labels, and the
// up-to-date check of build-case (SPEC.md sections 2 and 3).
package casebuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/images/buildkit"
	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// LabelTaskFiles is the label every case image carries: the files digest
// of its task folder when it was built.
const LabelTaskFiles = "ssebench.task-files"

// LabelTaskSSE is the label of the digest of the task folder's sse/ files
// (task.SSEDigest): the tool layer checks the case image's /ssebench
// against it.
const LabelTaskSSE = "ssebench.task-sse"

// Builder builds base and case images with BuildKit and records them in the
// local store, or pushes them.
type Builder struct {
	// BuildKit runs the builds.
	BuildKit *buildkit.Client
	// Store receives the images unless Push is set. Its images also stand
	// in for the bases that case Dockerfiles name, so a locally built base
	// needs no registry.
	Store *store.Store
	// Resolver finds existing case images to check their label.
	Resolver *remote.Resolver
	// Names gives REGISTRY and VERSION.
	Names naming.Names
	// Push sends the images to their registry instead of the store.
	Push bool
	// Log receives one line per decision (skip, rebuild, built).
	Log io.Writer
}

func (b *Builder) logf(format string, args ...any) {
	if b.Log != nil {
		fmt.Fprintf(b.Log, format+"\n", args...)
	}
}

// BaseNames returns every name base image lang gets: REGISTRY/base-generic-
// <lang> tagged VERSION, latest and every tag a manifest under datasets
// pins for it.
func (b *Builder) BaseNames(home, lang string) ([]string, error) {
	names := []string{b.Names.Base(lang), b.Names.BaseLatest(lang)}
	manifests, _ := filepath.Glob(filepath.Join(home, "datasets", "*", task.ManifestFile))
	repo := "base-generic-" + lang
	for _, mp := range manifests {
		m, err := task.ReadManifest(mp)
		if err != nil {
			return nil, err
		}
		for _, t := range m.Tasks {
			r, tag, ok := strings.Cut(t.Base, ":")
			if ok && r == repo && !strings.Contains(tag, "@") {
				names = append(names, b.Names.Prefixed(t.Base))
			}
		}
	}
	sort.Strings(names[2:])
	return dedupe(names), nil
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	out := s[:0]
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// BaseLanguages lists the base images under home/images/base-images.
func BaseLanguages(home string) ([]string, error) {
	dirs, err := filepath.Glob(filepath.Join(home, "images", "base-images", "generic-*", "Dockerfile"))
	if err != nil {
		return nil, err
	}
	var langs []string
	for _, d := range dirs {
		langs = append(langs, strings.TrimPrefix(filepath.Base(filepath.Dir(d)), "generic-"))
	}
	sort.Strings(langs)
	return langs, nil
}

// PickBases is the base images that names pick ("go" or "generic-go"),
// or every one under home when names is empty.
func PickBases(home string, names []string) ([]string, error) {
	if len(names) == 0 {
		return BaseLanguages(home)
	}
	langs := make([]string, len(names))
	for i, l := range names {
		langs[i] = strings.TrimPrefix(l, "generic-")
	}
	return langs, nil
}

// BuildBase builds base image lang from home/images/base-images with the
// OS image osImage, for platform ("" = the daemon's), under every name of
// BaseNames. It returns the manifest digest.
//
// A base whose names all hold an image labelled with the same inputs (see
// LabelBaseInputs) is not built again unless force is set.
func (b *Builder) BuildBase(ctx context.Context, home, lang, osImage, platform string, force bool) (v1.Hash, error) {
	if osImage == "" {
		return v1.Hash{}, errors.New("no OS image: pass --os-image (e.g. 127.0.0.1:5000/ssebench/os/debian:bookworm, made by scripts/setup.sh) or set SSEBENCH_OS_IMAGE")
	}
	ctxDir := filepath.Join(home, "images", "base-images")
	df := filepath.Join(ctxDir, "generic-"+lang, "Dockerfile")
	if _, err := os.Stat(df); err != nil {
		langs, _ := BaseLanguages(home)
		if len(langs) == 0 {
			return v1.Hash{}, fmt.Errorf("no base image %q: %s holds no base images (generic-<language>/Dockerfile): is %s an SSEBench home? Run from the repository's folder or set SSEBENCH_HOME", lang, ctxDir, home)
		}
		return v1.Hash{}, fmt.Errorf("no base image %q: %s is missing (base images: %s)", lang, df, strings.Join(langs, ", "))
	}
	names, err := b.BaseNames(home, lang)
	if err != nil {
		return v1.Hash{}, err
	}
	inputs, err := b.baseInputs(ctx, ctxDir, osImage, platform)
	if err != nil {
		return v1.Hash{}, err
	}
	if !force {
		if d, ok := b.upToDate(ctx, names, inputs); ok {
			b.logf("up to date: %s (%s %s)", names[0], LabelBaseInputs, short(inputs))
			return d, nil
		}
	}
	req := buildkit.Request{
		Dockerfile: df,
		ContextDir: ctxDir,
		Platform:   platform,
		BuildArgs:  map[string]string{"OS_IMAGE": osImage},
		Labels:     map[string]string{LabelBaseInputs: inputs},
	}
	return b.build(ctx, req, names)
}

// LabelBaseInputs is the label every base image carries: a digest of what
// it was built from (the files of images/base-images, the OS image's
// digest, the platform), so that an unchanged base is not built again.
const LabelBaseInputs = "ssebench.base-inputs"

// baseInputs digests what a base image is built from.
func (b *Builder) baseInputs(ctx context.Context, ctxDir, osImage, platform string) (string, error) {
	files, err := task.FilesDigest(ctxDir)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", ctxDir, err)
	}
	osDigest := "unresolved:" + osImage
	if b.Resolver != nil {
		// Resolve (not Image): an OS image that is an index counts by
		// the index's digest, whatever platform is picked.
		if res, err := b.Resolver.Resolve(ctx, osImage); err == nil {
			var d v1.Hash
			if res.Index != nil {
				d, err = res.Index.Digest()
			} else {
				d, err = res.Image.Digest()
			}
			if err == nil {
				osDigest = d.String()
			}
		}
	}
	sum := sha256.Sum256([]byte("base-inputs-v1\x00" + files + "\x00" + osDigest + "\x00" + platform))
	return hex.EncodeToString(sum[:]), nil
}

// upToDate says whether every name of a base already holds one image
// with the inputs label, and returns its digest.
func (b *Builder) upToDate(ctx context.Context, names []string, inputs string) (v1.Hash, bool) {
	if b.Resolver == nil || b.Push {
		return v1.Hash{}, false
	}
	var first v1.Hash
	for i, n := range names {
		img, err := b.Resolver.Image(ctx, n)
		if err != nil {
			return v1.Hash{}, false
		}
		cf, err := img.ConfigFile()
		if err != nil || cf.Config.Labels[LabelBaseInputs] != inputs {
			return v1.Hash{}, false
		}
		d, err := img.Digest()
		if err != nil || i > 0 && d != first {
			return v1.Hash{}, false
		}
		first = d
	}
	return first, true
}

// build runs req and records the result under names.
func (b *Builder) build(ctx context.Context, req buildkit.Request, names []string) (v1.Hash, error) {
	if b.Push {
		req.Push = names[0]
	}
	res, err := b.BuildKit.Build(ctx, req)
	if err != nil {
		return v1.Hash{}, err
	}
	defer res.Close()
	if b.Push {
		// The other tags name the same manifest: pushing it again moves
		// no blob.
		for _, n := range names[1:] {
			if err := remote.Tag(ctx, names[0], n); err != nil {
				return v1.Hash{}, err
			}
		}
		return res.Digest, nil
	}
	img, err := res.Image()
	if err != nil {
		return v1.Hash{}, err
	}
	for _, n := range names {
		ref, err := name.ParseReference(n, name.WeakValidation)
		if err != nil {
			return v1.Hash{}, fmt.Errorf("image name %q: %w", n, err)
		}
		if err := b.Store.Write(ctx, ref, img); err != nil {
			return v1.Hash{}, err
		}
	}
	return res.Digest, nil
}

// CaseOutcome is what BuildCases did with one task.
type CaseOutcome struct {
	Task   string
	Image  string
	Action string // "built", "rebuilt", "skipped", "failed"
	Digest v1.Hash
	Err    error
}

// CaseOptions selects what BuildCases builds.
type CaseOptions struct {
	// Tasks limits the build to these ids; empty means every task.
	Tasks []string
	// Force rebuilds images that are up to date.
	Force bool
	// HostArch is the machine's architecture (runtime.GOARCH).
	HostArch string
}

// BuildCases builds the case images of dataset dir whose task folders
// changed (SPEC.md section 3): it skips an image whose label equals the
// folder's digest, skips with a warning an image without the label,
// rebuilds with a warning an image whose label differs. A failed build does
// not stop the others; the returned error lists the failed tasks.
//
// A task folder with problems does not stop the others either: it is
// reported (a warning when the build does not ask for it) and, when asked
// for or when every task is built, counted as failed.
func (b *Builder) BuildCases(ctx context.Context, dir string, o CaseOptions) ([]CaseOutcome, error) {
	ds, broken, err := task.LoadDatasetTolerant(dir)
	if err != nil {
		return nil, err
	}
	var out []CaseOutcome
	// failed is each failed task with its reason, for the returned error:
	// the only place a quiet build says why.
	var failed []string
	var causes []error
	fail := func(id string, err error) {
		failed = append(failed, id+" ("+firstLine(err)+")")
		b.logf("FAILED %s: %v", id, err)
		out = append(out, CaseOutcome{Task: id, Image: b.Names.Case(ds.Name, id), Action: "failed", Err: err})
	}
	tasks := ds.Tasks
	if len(o.Tasks) > 0 {
		tasks = nil
		var unknown []string
		asked := map[string]bool{}
		for _, id := range o.Tasks {
			asked[id] = true
			if t := ds.Task(id); t != nil {
				tasks = append(tasks, t)
			} else if _, ok := broken[id]; !ok {
				unknown = append(unknown, id)
			}
		}
		if len(unknown) > 0 {
			return nil, fmt.Errorf("dataset %s has no task %s", ds.Name, strings.Join(unknown, ", "))
		}
		for _, id := range sortedIDs(broken) {
			if asked[id] {
				fail(id, broken[id])
			} else {
				b.logf("warning: task %s of dataset %s has problems (%d, first: %s); building the others", id, ds.Name, len(broken[id]), broken[id][0])
			}
		}
	} else {
		for _, id := range sortedIDs(broken) {
			fail(id, broken[id])
		}
	}
	for _, t := range tasks {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		oc := b.buildCase(ctx, ds, t, o)
		if oc.Err != nil {
			failed = append(failed, t.ID+" ("+firstLine(oc.Err)+")")
			causes = append(causes, oc.Err)
			b.logf("FAILED %s: %v", t.ID, oc.Err)
		}
		out = append(out, oc)
	}
	if len(failed) > 0 {
		return out, &buildsFailed{msg: fmt.Sprintf("%s failed to build: %s", units.Plural(len(failed), "case image"), strings.Join(failed, "; ")), causes: causes}
	}
	return out, nil
}

// buildsFailed says which case images failed, one line each, and keeps
// their errors: a caller can tell a missing base image (errors.Is
// store.ErrNotFound), which no retry builds, from a failure that may pass
// the next time.
type buildsFailed struct {
	msg    string
	causes []error
}

func (e *buildsFailed) Error() string   { return e.msg }
func (e *buildsFailed) Unwrap() []error { return e.causes }

// firstLine is the first line of err's text, with "…" when there is more.
func firstLine(err error) string {
	s, rest, _ := strings.Cut(strings.TrimSpace(err.Error()), "\n")
	if strings.TrimSpace(rest) != "" {
		s += " …"
	}
	return s
}

func sortedIDs[V any](m map[string]V) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (b *Builder) buildCase(ctx context.Context, ds *task.Dataset, t *task.Task, o CaseOptions) CaseOutcome {
	imgName := b.Names.Case(ds.Name, t.ID)
	oc := CaseOutcome{Task: t.ID, Image: imgName}
	files, err := t.Files()
	if err != nil {
		oc.Action, oc.Err = "failed", err
		return oc
	}
	digest, sseDigest := task.DigestFiles(files), task.SSEDigest(files)
	action := "built"
	if !o.Force {
		label, found := b.existingLabel(ctx, imgName)
		switch {
		case found && label == digest:
			b.logf("up to date: %s", imgName)
			oc.Action = "skipped"
			return oc
		case found && label == "":
			b.logf("warning: %s has no %s label, so it cannot be checked; skipping it (use --force to rebuild)", imgName, LabelTaskFiles)
			oc.Action = "skipped"
			return oc
		case found:
			b.logf("warning: %s was built from other task files (label %s, folder %s); rebuilding", imgName, short(label), short(digest))
			action = "rebuilt"
		}
	}
	arches, err := task.TaskArches(ds.Dir, t.ID)
	if err != nil {
		oc.Action, oc.Err = "failed", err
		return oc
	}
	arch, emulated := task.RunArch(arches, o.HostArch)
	if emulated {
		b.logf("warning: %s builds for linux/%s, which this %s machine emulates", t.ID, arch, o.HostArch)
	}
	req := buildkit.Request{
		ContextDir: t.Dir,
		Platform:   task.Platform(arch),
		BuildArgs:  map[string]string{task.RegistryArg: b.Names.Registry},
		Labels:     map[string]string{LabelTaskFiles: digest, LabelTaskSSE: sseDigest},
	}
	// The base comes to BuildKit from the store, under the name the
	// Dockerfile uses: a base built locally is only there, and one from a
	// registry is fetched by our own client first, so that BuildKit never
	// reaches a registry with a policy (plain HTTP, credentials) of its own.
	if base := t.Base; base != "" && b.Store != nil {
		baseRef := b.Names.Prefixed(base)
		li, err := b.baseContext(ctx, baseRef, req.Platform)
		if err != nil {
			oc.Action, oc.Err = "failed", err
			return oc
		}
		req.LayoutContexts = map[string]buildkit.LayoutImage{baseRef: li}
	}
	b.logf("building %s (%s)", imgName, req.Platform)
	d, err := b.build(ctx, req, []string{imgName})
	if err != nil {
		oc.Action, oc.Err = "failed", err
		return oc
	}
	oc.Action, oc.Digest = action, d
	return oc
}

// existingLabel finds the case image (store first, then registry, as the
// resolver's pull policy says) and returns its task-files label.
func (b *Builder) existingLabel(ctx context.Context, ref string) (string, bool) {
	if b.Resolver == nil {
		return "", false
	}
	img, err := b.Resolver.Image(ctx, ref)
	if err != nil {
		return "", false
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return "", false
	}
	return cf.Config.Labels[LabelTaskFiles], true
}

func short(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// baseContext makes sure the store holds baseRef's image for platform
// whole (resolving it from its registry when the store lacks it, as the
// pull policy allows) and returns it as a BuildKit layout context. BuildKit
// never pulls a base itself: it would reach the registry with a policy of
// its own (the default registry on the internet, HTTPS, its own
// credentials), which the README promises it does not.
func (b *Builder) baseContext(ctx context.Context, baseRef, platform string) (buildkit.LayoutImage, error) {
	none := buildkit.LayoutImage{}
	ref, err := name.ParseReference(baseRef, name.WeakValidation)
	if err != nil {
		return none, fmt.Errorf("base image %q is not a valid reference: check the registry prefix (--registry): %w", baseRef, err)
	}
	desc, err := b.Store.Descriptor(ref)
	if err != nil && b.Resolver != nil {
		if _, rerr := b.Resolver.Resolve(ctx, baseRef); rerr == nil {
			desc, err = b.Store.Descriptor(ref)
		} else {
			err = rerr
		}
	}
	if err != nil {
		if errors.Is(err, store.ErrNotFound) || remote.IsNotFound(err) {
			// One line, the way out in it; the cause stays matchable
			// (an evaluation does not retry a missing image).
			return none, fmt.Errorf("base image %s is in neither the store nor its registry: build it with `ssebench base-images %s --os-image IMAGE` (and --registry PREFIX when the run uses one): %w", baseRef, baseLanguage(baseRef), store.ErrNotFound)
		}
		return none, fmt.Errorf("base image %s is not in the store and could not be pulled: %w", baseRef, err)
	}
	// Fetch what BuildKit will read: the platform's image of an index.
	whole := desc
	if desc.MediaType.IsIndex() {
		idx, err := b.Store.IndexAt(desc, ref.Name())
		if err != nil {
			return none, fmt.Errorf("reading base image %s: %w", baseRef, err)
		}
		p, err := v1.ParsePlatform(platform)
		if err != nil {
			return none, err
		}
		if whole, err = remote.PickPlatform(idx, *p, ref.Name()); err != nil {
			return none, fmt.Errorf("base image %s: %w: build it for %s with `ssebench base-images %s --platform %s`", baseRef, err, platform, baseLanguage(baseRef), platform)
		}
	}
	if err := b.Store.Complete(ctx, whole); err != nil {
		return none, fmt.Errorf("base image %s is incomplete in the store (%v): build it again with `ssebench base-images %s`", baseRef, err, baseLanguage(baseRef))
	}
	return buildkit.LayoutImage{Dir: b.Store.Dir(), Digest: desc.Digest}, nil
}

// baseLanguage is the language of a generic base image's name
// (".../base-generic-go:1.0.0" → "go"), what `ssebench base-images` takes;
// "LANG" for a name of another shape.
func baseLanguage(ref string) string {
	repo, _, _ := strings.Cut(ref, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	lang, ok := strings.CutPrefix(repo[strings.LastIndex(repo, "/")+1:], "base-generic-")
	if !ok || lang == "" {
		return "LANG"
	}
	return lang
}
