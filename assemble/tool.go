package assemble

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/42-b3yond-6ug/ssebench/assemble/gitrepo"
	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
)

// Paths the tool layer manages, relative to the root (as layers name them).
var (
	taskDir   = contract.Rel(contract.TaskRoot)
	repoDir   = contract.Rel(contract.RepoDir)
	stateDir  = contract.Rel(contract.StateDir)
	modelHome = contract.Rel(contract.ModelHome)
)

const (
	modelUID     = contract.ModelUID
	modelGID     = contract.ModelGID
	createdByFmt = "ssebench assemble tool: %s"
)

// Manifest annotations of a tool image.
const (
	// AnnotationBaseDigest is the case image's manifest digest.
	AnnotationBaseDigest = "org.opencontainers.image.base.digest"
	// AnnotationSourceDir is SOURCE_DIR, so that verify needs no task.
	AnnotationSourceDir = "dev.ssebench.source-dir"
	// AnnotationRuntimeDigest is the runtime image's manifest digest.
	AnnotationRuntimeDigest = "dev.ssebench.runtime.digest"
	// AnnotationToolKey names the inputs of the system, repo and source
	// layers (see WithPrevious).
	AnnotationToolKey = "dev.ssebench.tool.key"
	// AnnotationToolLayers lists the digests of those three layers.
	AnnotationToolLayers = "dev.ssebench.tool.layers"
	// AnnotationTree is the tree id of SOURCE_DIR's new repository.
	AnnotationTree = "dev.ssebench.tool.tree"
)

// ToolImage is an assembled tool image. Its new layers live in spool files
// until Close; write the image (to the store or a registry) before that.
type ToolImage struct {
	v1.Image
	// TreeID and CommitID name the new repository's tree and commit.
	TreeID, CommitID string
	// RunnerUID and RunnerGID are sse-runner's ids (zero when Reused).
	RunnerUID, RunnerGID int
	// Reused is true when the system, repo and source layers came from
	// the previous tool image (WithPrevious) instead of the case layers.
	Reused bool

	spools []*oci.SpooledLayer
}

// Close removes the spool files of the new layers.
func (t *ToolImage) Close() error {
	var errs []error
	for _, s := range t.spools {
		errs = append(errs, s.Remove())
	}
	return errors.Join(errs...)
}

// Tool turns a case image into the tool image of SPEC.md section 4. The case
// layers stay as they are; Tool reads them (each at most twice: once for
// its headers, unless cached, and once for the content it needs) and writes
// the new layers to spool files. runtimeImg is the runtime image for the
// case image's platform; its layers are appended unchanged.
//
// Nothing is written outside the temporary directory; on error nothing is
// left there either.
func Tool(ctx context.Context, caseImg, runtimeImg v1.Image, opts ...ToolOption) (_ *ToolImage, retErr error) {
	o, err := makeToolOptions(opts...)
	if err != nil {
		return nil, err
	}
	caseWhat, rtWhat := o.caseRef, o.runtimeRef
	caseDiffs, err := checkMetadata(caseImg, caseWhat)
	if err != nil {
		return nil, err
	}
	rtDiffs, err := checkMetadata(runtimeImg, rtWhat)
	if err != nil {
		return nil, err
	}
	if n := len(caseDiffs) + toolOwnLayers + len(rtDiffs); n > MaxLayers {
		return nil, fmt.Errorf("the tool image would have %d layers (%s has %d, %s %d), more than the %d overlayfs stacks: squash the case image", n, caseWhat, len(caseDiffs), rtWhat, len(rtDiffs), MaxLayers)
	}
	cf, err := caseImg.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of %s: %w", o.caseRef, err)
	}
	rcf, err := runtimeImg.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of %s: %w", o.runtimeRef, err)
	}
	if err := checkPlatforms(cf, rcf, caseWhat, rtWhat); err != nil {
		return nil, err
	}
	if o.when.IsZero() {
		o.when = cf.Created.UTC().Truncate(time.Second)
	}
	cdig, err := caseImg.Digest()
	if err != nil {
		return nil, fmt.Errorf("reading the digest of %s: %w", o.caseRef, err)
	}
	key := toolKey(cdig, o)
	runtimeLayers, err := runtimeImg.Layers()
	if err != nil {
		return nil, fmt.Errorf("reading the layers of %s: %w", o.runtimeRef, err)
	}
	own, reused := reuse(o.previous, key)
	// The runtime's layers and (unless reused) the case's are indexed in
	// one pool: a cold assembly decompresses them all.
	rset := &indexSet{layers: runtimeLayers, what: o.runtimeRef}
	cset := &indexSet{what: o.caseRef}
	if !reused {
		if cset.layers, err = caseImg.Layers(); err != nil {
			return nil, fmt.Errorf("reading the layers of %s: %w", o.caseRef, err)
		}
		o.phasef("indexing %s (%s) and %s (%s); layers with known facts are not read",
			units.Plural(len(cset.layers), "case layer"), units.Bytes(layersSize(cset.layers)),
			units.Plural(len(runtimeLayers), "runtime layer"), units.Bytes(layersSize(runtimeLayers)))
	}
	if err := o.facts.indexSets(ctx, rset, cset); err != nil {
		return nil, err
	}
	ridxs := rset.idxs
	if err := checkDiffIDs(rtWhat, runtimeLayers, rtDiffs, ridxs); err != nil {
		return nil, err
	}
	rview, err := oci.Merge(ridxs)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", o.runtimeRef, err)
	}
	if err := checkRuntime(rview, o); err != nil {
		return nil, err
	}
	rdig, err := runtimeImg.Digest()
	if err != nil {
		return nil, fmt.Errorf("reading the digest of %s: %w", o.runtimeRef, err)
	}

	t := &ToolImage{}
	defer func() {
		if retErr != nil {
			t.Close()
		}
	}()
	b := &toolBuild{o: o}
	if reused {
		t.Reused = true
		t.TreeID = own.tree
	} else {
		caseLayers, idxs := cset.layers, cset.idxs
		if err := checkDiffIDs(caseWhat, caseLayers, caseDiffs, idxs); err != nil {
			return nil, err
		}
		view, err := oci.Merge(idxs)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", o.caseRef, err)
		}
		if err := checkSource(view, o); err != nil {
			return nil, err
		}
		if err := checkReserved(view, o); err != nil {
			return nil, err
		}
		if err := checkTaskFiles(ctx, view, caseLayers, cf.Config.Labels, o.caseRef); err != nil {
			return nil, err
		}
		g, err := guardDirs(view, cf.Config.Env, o.sourceDir, o.caseRef)
		if err != nil {
			return nil, err
		}
		b.view, b.layers, b.caches, b.guard = view, caseLayers, cacheDirs(view, cf.Config.Env), g
		o.phasef("writing the system, repository and source layers from /%s", o.sourceDir)
		sys, repo, src, err := b.build(ctx, t)
		if err != nil {
			return nil, err
		}
		own = ownLayers{layers: []v1.Layer{sys, repo, src}, tree: t.TreeID}
	}
	o.phasef("sealing the runtime layers")
	seal, err := b.seal(ctx, rview, runtimeLayers)
	if err != nil {
		return nil, err
	}

	created := v1.Time{Time: o.when}
	adds := []mutate.Addendum{
		{Layer: own.layers[0], History: history(created, "system (accounts, other-write removal, shared caches, /home/model, /var/lib/ssebench)")},
		{Layer: own.layers[1], History: history(created, "/"+repoDir+" (the original source tree)")},
		{Layer: own.layers[2], History: history(created, fmt.Sprintf("/%s owned by model with a one-commit repository (tree %s)", o.sourceDir, own.tree))},
	}
	for i, l := range runtimeLayers {
		adds = append(adds, mutate.Addendum{Layer: l, History: history(created, fmt.Sprintf("runtime layer %d/%d of %s", i+1, len(runtimeLayers), rdig))})
	}
	if seal != nil {
		t.spools = append(t.spools, seal)
		adds = append(adds, mutate.Addendum{Layer: seal, History: history(created, "seal (modes the runtime layers would change)")})
	}
	img, err := mutate.Append(caseImg, adds...)
	if err != nil {
		return nil, fmt.Errorf("appending layers: %w", err)
	}
	ncf := cf.DeepCopy()
	ncf.Config.Entrypoint = []string{o.entrypoint}
	ncf.Config.Cmd = nil
	// The runtime trusts only what the run sets: a case image's ENV
	// SSE_RUNNER_USER=root or SSE_TASK_ROOT must not steer it (SPEC.md
	// section 16).
	ncf.Config.Env = slices.DeleteFunc(ncf.Config.Env, func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return contract.RunOnly(k)
	})
	img, err = mutate.Config(img, ncf.Config)
	if err != nil {
		return nil, fmt.Errorf("setting the entrypoint: %w", err)
	}
	if img, err = mutate.CreatedAt(img, created); err != nil {
		return nil, fmt.Errorf("setting the creation time: %w", err)
	}
	var digests []string
	for _, l := range own.layers {
		d, err := l.Digest()
		if err != nil {
			return nil, err
		}
		digests = append(digests, d.String())
	}
	// What the image was made from travels in the manifest, not the config:
	// the config's labels are the case image's, unchanged (SPEC.md 4.9).
	t.Image = mutate.Annotations(img, map[string]string{
		AnnotationBaseDigest:    cdig.String(),
		AnnotationSourceDir:     "/" + o.sourceDir,
		AnnotationRuntimeDigest: rdig.String(),
		AnnotationToolKey:       key,
		AnnotationToolLayers:    strings.Join(digests, ","),
		AnnotationTree:          own.tree,
	}).(v1.Image)
	return t, nil
}

// AssemblerVersion changes whenever the system, repo or source layers that
// Tool writes for the same inputs change, so that a tool image made by an
// older assembler is never reused.
const AssemblerVersion = "5"

// toolKey names everything the system, repo and source layers depend on.
func toolKey(caseDigest v1.Hash, o *toolOptions) string {
	h := sha256.New()
	fmt.Fprintf(h, "ssebench tool layers\nassembler %s\ncase %s\nsource /%s\ntime %d\ncompression %s\n",
		AssemblerVersion, caseDigest, o.sourceDir, o.when.Unix(), o.compression)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// ownLayers are the system, repo and source layers of a tool image.
type ownLayers struct {
	layers []v1.Layer
	tree   string
}

// reuse returns the system, repo and source layers of prev when prev was
// assembled with the same key: the same case image, SOURCE_DIR, time and
// assembler. Their bytes are not read here; they stay wherever prev's
// layers live (the store, or the registry).
func reuse(prev v1.Image, key string) (ownLayers, bool) {
	if prev == nil {
		return ownLayers{}, false
	}
	m, err := prev.Manifest()
	if err != nil || m.Annotations[AnnotationToolKey] != key || m.Annotations[AnnotationTree] == "" {
		return ownLayers{}, false
	}
	ds := strings.Split(m.Annotations[AnnotationToolLayers], ",")
	if len(ds) != 3 {
		return ownLayers{}, false
	}
	own := ownLayers{tree: m.Annotations[AnnotationTree]}
	for _, s := range ds {
		d, err := v1.NewHash(s)
		if err != nil {
			return ownLayers{}, false
		}
		l, err := prev.LayerByDigest(d)
		if err != nil {
			return ownLayers{}, false
		}
		own.layers = append(own.layers, l)
	}
	return own, true
}

func history(created v1.Time, what string) v1.History {
	return v1.History{Created: created, CreatedBy: fmt.Sprintf(createdByFmt, what), Comment: what}
}

// checkSource makes sure SOURCE_DIR is a real directory of the case image.
func checkSource(view *oci.View, o *toolOptions) error {
	n, ok := view.Lookup(o.sourceDir)
	if !ok {
		if r, ok := view.Resolve(o.sourceDir); ok && r.Header.IsDir() {
			return fmt.Errorf("SOURCE_DIR /%s of %s goes through a symlink to /%s: set `source` in the task's config.yaml to /%s", o.sourceDir, o.caseRef, r.Path, r.Path)
		}
		return fmt.Errorf("%s has no SOURCE_DIR /%s: check `source` in the task's config.yaml, or rebuild the case image", o.caseRef, o.sourceDir)
	}
	switch n.Header.Typeflag {
	case tar.TypeDir:
		return nil
	case tar.TypeSymlink:
		return fmt.Errorf("SOURCE_DIR /%s of %s is a symlink to %q: set `source` in the task's config.yaml to the real folder", o.sourceDir, o.caseRef, n.Header.Linkname)
	default:
		return fmt.Errorf("SOURCE_DIR /%s of %s is a file, not a folder: set `source` in the task's config.yaml to the project's folder", o.sourceDir, o.caseRef)
	}
}

// reservedPaths are what the tool layer writes outside SOURCE_DIR. Each
// (and each parent) must be a real directory, or absent, in the case image:
// a symlink there would make the layer's entries land wherever it points,
// which the case's author (or model, for a target under SOURCE_DIR) chose.
var reservedPaths = []string{taskDir, repoDir, stateDir, modelHome, strings.TrimPrefix(runtimebin.Entrypoint, "/")}

// checkReserved refuses a case image whose reserved paths go through a
// symlink.
func checkReserved(view *oci.View, o *toolOptions) error {
	for _, p := range reservedPaths {
		parts := strings.Split(p, "/")
		for i := 1; i <= len(parts); i++ {
			q := strings.Join(parts[:i], "/")
			n, ok := view.Lookup(q)
			if !ok {
				break
			}
			if n.Header.Typeflag == tar.TypeSymlink {
				return fmt.Errorf("/%s in %s is a symlink to %q: the tool layer writes /%s there, so make it a real directory (or remove it) in the case image", q, o.caseRef, n.Header.Linkname, p)
			}
			if i < len(parts) && !n.Header.IsDir() {
				return fmt.Errorf("/%s in %s is a file: the tool layer writes /%s there, so remove it in the case image", q, o.caseRef, p)
			}
		}
	}
	return nil
}

// under reports whether p is dir or inside it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// toolBuild holds what the passes over the case image share.
type toolBuild struct {
	o      *toolOptions
	view   *oci.View
	layers []v1.Layer
	caches []string
	guard  guard // what loses other-write even when sticky (SPEC.md §12)
	// copyBuf carries every file the new layers copy: io.Copy would
	// take a new 32 KiB buffer for each (neither end is a ReaderFrom or
	// a WriterTo), garbage that grew the heap with the case's file count.
	copyBuf []byte
}

// copy copies r to w through the build's one buffer.
func (b *toolBuild) copy(w io.Writer, r io.Reader) error {
	if b.copyBuf == nil {
		b.copyBuf = make([]byte, 64<<10)
	}
	_, err := io.CopyBuffer(w, r, b.copyBuf)
	return err
}

// build writes the system, repo and source layers.
func (b *toolBuild) build(ctx context.Context, t *ToolImage) (sys, repo, src *oci.SpooledLayer, retErr error) {
	o := b.o
	outs := make([]*layerOut, 3)
	for i := range outs {
		l, err := b.newLayer()
		if err != nil {
			for _, p := range outs[:i] {
				p.w.Abort()
			}
			return nil, nil, nil, err
		}
		outs[i] = l
	}
	sysOut, repoOut, srcOut := outs[0], outs[1], outs[2]
	defer func() {
		if retErr != nil {
			for _, l := range outs {
				l.w.Abort()
			}
		}
	}()

	git, err := gitrepo.NewBuilder(o.tempDir, gitrepo.WithTime(o.when))
	if err != nil {
		return nil, nil, nil, err
	}
	defer git.Close()

	// Accounts first: they decide which homes go.
	acct, err := b.accounts(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	t.RunnerUID, t.RunnerGID = acct.res.RunnerUID, acct.res.RunnerGID

	// The ignore rules must be known before the first file is looked at.
	if err := b.gitRules(ctx, git); err != nil {
		return nil, nil, nil, err
	}

	var sysHdrs, repoHdrs, srcHdrs []*tar.Header
	// The files whose content a new layer copies, a word each: a case of
	// 200,000 files held 45 MB of Nodes here. Those outside SOURCE_DIR
	// go to the system layer.
	var content []oci.Ref
	srcRoot, _ := b.view.Lookup(o.sourceDir)
	var gitDirs []string // .git directories under SOURCE_DIR, left out of the copy
	err = b.view.WalkRefs(func(n oci.Node, ref oci.Ref) error {
		if acct.removed[n.Path] {
			// SkipDir on a file would skip the rest of its directory.
			if n.Header.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if under(n.Path, o.sourceDir) {
			return b.planSource(n, ref, srcRoot, git, &gitDirs, &repoHdrs, &srcHdrs, &content)
		}
		if acct.files[n.Path] != nil || n.Path == modelHome {
			return nil // rewritten below
		}
		h := n.Header
		nm := b.mode(n.Path, &h)
		uid, gid := h.Uid, h.Gid
		if n.Path == taskDir && h.IsDir() {
			// Root-owned 0700 whatever the case says (SPEC.md section 12).
			nm, uid, gid = h.Mode&^0o777|0o700, 0, 0
		}
		if n.Implicit && n.Path == taskDir {
			sysHdrs = append(sysHdrs, dirHeader(taskDir, 0o700, 0, 0, o.when))
			return nil
		}
		if (nm == h.Mode && uid == h.Uid && gid == h.Gid) || n.Implicit {
			return nil
		}
		if h.Typeflag == tar.TypeReg {
			content = append(content, ref)
			return nil
		}
		th := h.TarHeader(n.Path)
		th.Mode, th.Uid, th.Gid = nm, uid, gid
		sysHdrs = append(sysHdrs, th)
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}

	// What the account changes and step 6 add to the system layer.
	sysHdrs = append(sysHdrs, acct.headers...)
	sysHdrs = append(sysHdrs, b.ensureDirs(stateDir, 0o700, 0, 0)...)
	sysHdrs = append(sysHdrs, b.ensureDirs(modelHome, 0o755, modelUID, modelGID)...)
	if _, ok := b.view.Lookup(taskDir); !ok {
		sysHdrs = append(sysHdrs, dirHeader(taskDir, 0o700, 0, 0, o.when))
	}
	if err := sysOut.headerOnly(sysHdrs); err != nil {
		return nil, nil, nil, err
	}
	for _, f := range acct.contents {
		if err := sysOut.small(f.hdr, f.data); err != nil {
			return nil, nil, nil, err
		}
	}
	gitconfig := &tar.Header{Typeflag: tar.TypeReg, Name: modelHome + "/.gitconfig", Mode: 0o644, Uid: modelUID, Gid: modelGID, ModTime: o.when}
	if err := sysOut.small(gitconfig, gitrepo.UserConfig(gitrepo.DefaultName, gitrepo.DefaultEmail)); err != nil {
		return nil, nil, nil, err
	}
	if err := repoOut.headerOnly(repoHdrs); err != nil {
		return nil, nil, nil, err
	}
	if err := srcOut.headerOnly(srcHdrs); err != nil {
		return nil, nil, nil, err
	}

	// One pass over the case layers for every byte the new layers copy.
	err = b.view.ReadFiles(ctx, b.layers, content, func(n oci.Node, r io.Reader) error {
		if !under(n.Path, o.sourceDir) {
			w, err := sysOut.file(n, n.Path, b.mode(n.Path, &n.Header), n.Header.Uid, n.Header.Gid)
			if err != nil || w == nil {
				return err
			}
			return b.copy(w, r)
		}
		return b.copySource(n, r, git, gitDirs, repoOut, srcOut)
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("copying from %s: %w", o.caseRef, err)
	}
	// The case's view and its layer indexes (40 MB for 200,000 files)
	// are not needed past this point: let them go before the
	// repository's trees and pack take their memory.
	content, b.view = nil, nil
	// Collect them now, so that the repository's records reuse their
	// memory: left to the next collection, which the heap goal of the
	// indexes puts far off, both are resident at once (180 MB where
	// 150 MB suffice for 200,000 files).
	runtime.GC()

	o.phasef("committing /%s", o.sourceDir)
	entries, tree, commit, err := git.Finish(ctx)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("writing the repository: %w", err)
	}
	t.TreeID, t.CommitID = tree, commit
	for _, e := range entries {
		h := *e.Header
		h.Name = o.sourceDir + "/" + h.Name
		if e.Open == nil {
			if err := srcOut.w.WriteHeader(&h); err != nil {
				return nil, nil, nil, err
			}
			continue
		}
		if err := copyEntry(ctx, srcOut.w, &h, e.Open); err != nil {
			return nil, nil, nil, fmt.Errorf("writing the repository: %w", err)
		}
	}

	layers := make([]*oci.SpooledLayer, 3)
	for i, l := range outs {
		sl, err := finish(l.w)
		if err != nil {
			return nil, nil, nil, err
		}
		layers[i] = sl
		t.spools = append(t.spools, sl)
	}
	return layers[0], layers[1], layers[2], nil
}

// layersSize is the compressed size of layers, as far as known without
// reading them.
func layersSize(layers []v1.Layer) int64 {
	var n int64
	for _, l := range layers {
		if s, err := l.Size(); err == nil {
			n += s
		}
	}
	return n
}
