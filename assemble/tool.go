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
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/42-b3yond-6ug/ssebench/assemble/accounts"
	"github.com/42-b3yond-6ug/ssebench/assemble/gitrepo"
	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
)

// Paths the tool layer manages, relative to the root.
const (
	taskDir      = "ssebench"
	repoDir      = "ssebench-repo"
	stateDir     = "var/lib/ssebench"
	modelHome    = "home/model"
	modelUID     = 1000
	modelGID     = 1000
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

// accountFiles are read from the case image and rewritten.
var accountFiles = []string{"etc/passwd", "etc/group", "etc/shadow", "etc/gshadow", "etc/subuid", "etc/subgid", "etc/login.defs"}

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
	cf, err := caseImg.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of %s: %w", o.caseRef, err)
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
	rview, err := o.facts.View(ctx, runtimeLayers)
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
	own, ok := reuse(o.previous, key)
	if ok {
		t.Reused = true
		t.TreeID = own.tree
	} else {
		caseLayers, err := caseImg.Layers()
		if err != nil {
			return nil, fmt.Errorf("reading the layers of %s: %w", o.caseRef, err)
		}
		view, err := o.facts.View(ctx, caseLayers)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", o.caseRef, err)
		}
		if err := checkSource(view, o); err != nil {
			return nil, err
		}
		b.view, b.layers, b.caches = view, caseLayers, cacheDirs(view, cf.Config.Env)
		sys, repo, src, err := b.build(ctx, t)
		if err != nil {
			return nil, err
		}
		own = ownLayers{layers: []v1.Layer{sys, repo, src}, tree: t.TreeID}
	}
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
	ncf.Config.Entrypoint = []string{runtimebin.Entrypoint}
	ncf.Config.Cmd = nil
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
const AssemblerVersion = "1"

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

// checkRuntime makes sure the runtime image holds an entrypoint.
func checkRuntime(rview *oci.View, o *toolOptions) error {
	ep := strings.TrimPrefix(runtimebin.Entrypoint, "/")
	n, ok := rview.Resolve(ep)
	if !ok || n.Header.Typeflag != tar.TypeReg {
		return fmt.Errorf("%s has no %s: pass a runtime image built with `ssebench runtime build` (--runtime or %s)", o.runtimeRef, runtimebin.Entrypoint, runtimebin.Env)
	}
	if n.Header.Mode&0o111 == 0 {
		return fmt.Errorf("%s in %s is not executable (mode %04o): rebuild the runtime image", runtimebin.Entrypoint, o.runtimeRef, n.Header.Mode)
	}
	return nil
}

// cacheDirs returns the directories named by CARGO_HOME, RUSTUP_HOME and
// GOPATH in env that exist in view, as resolved paths.
func cacheDirs(view *oci.View, env []string) []string {
	var dirs []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		var paths []string
		switch k {
		case "CARGO_HOME", "RUSTUP_HOME":
			paths = []string{v}
		case "GOPATH":
			paths = strings.Split(v, ":")
		}
		for _, p := range paths {
			if !path.IsAbs(p) {
				continue
			}
			if n, ok := view.Resolve(p); ok && n.Header.IsDir() {
				dirs = append(dirs, n.Path)
			}
		}
	}
	sort.Strings(dirs)
	return dirs
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
}

// mode is the mode of an entry at dest after steps 4 and 5 of SPEC.md
// section 4: no other-write bit except on sticky directories and symlinks,
// and inside a shared cache o+r on files and o+rx on directories.
func (b *toolBuild) mode(dest string, h *oci.Header) int64 {
	m := h.Mode
	switch h.Typeflag {
	case tar.TypeSymlink:
		return m
	case tar.TypeDir:
		if m&0o1000 == 0 {
			m &^= 0o002
		}
	default:
		m &^= 0o002
	}
	for _, c := range b.caches {
		if !under(dest, c) {
			continue
		}
		switch h.Typeflag {
		case tar.TypeReg:
			m |= 0o004
		case tar.TypeDir:
			m |= 0o005
		}
	}
	return m
}

// contentKey names the bytes of a file: hard links share one.
type contentKey struct{ layer, entry int }

// layerOut is one new layer being written: header-only entries are
// collected first and written sorted, then content entries as the case
// layers stream by.
type layerOut struct {
	w     *oci.LayerWriter
	first map[contentKey]string // where each content was first written
}

func (b *toolBuild) newLayer() (*layerOut, error) {
	w, err := oci.NewLayerWriter(b.o.tempDir, oci.WithCompression(b.o.compression), oci.WithDefaultTime(b.o.when))
	if err != nil {
		return nil, err
	}
	return &layerOut{w: w, first: map[contentKey]string{}}, nil
}

// headerOnly writes entries that carry no content, in path order.
func (l *layerOut) headerOnly(hs []*tar.Header) error {
	sort.SliceStable(hs, func(i, j int) bool { return oci.ComparePaths(hs[i].Name, hs[j].Name) < 0 })
	for _, h := range hs {
		if err := l.w.WriteHeader(h); err != nil {
			return err
		}
	}
	return nil
}

// small writes a regular file held in memory.
func (l *layerOut) small(h *tar.Header, content []byte) error {
	h.Size = int64(len(content))
	if err := l.w.WriteHeader(h); err != nil {
		return err
	}
	_, err := l.w.Write(content)
	return err
}

// file starts the content entry of node n at dest. It returns the writer
// for its content, or nil when dest became a hard link to an earlier copy
// of the same bytes in this layer.
func (l *layerOut) file(n oci.Node, dest string, mode int64, uid, gid int) (io.Writer, error) {
	k := contentKey{n.Layer, n.Entry}
	h := n.Header.TarHeader(dest)
	h.Mode, h.Uid, h.Gid = mode, uid, gid
	if prev, ok := l.first[k]; ok {
		h.Typeflag, h.Linkname, h.Size = tar.TypeLink, prev, 0
		return nil, l.w.WriteHeader(h)
	}
	l.first[k] = dest
	if err := l.w.WriteHeader(h); err != nil {
		return nil, err
	}
	return l.w, nil
}

func whiteout(p string, when time.Time) *tar.Header {
	dir, base := path.Split(p)
	return &tar.Header{Typeflag: tar.TypeReg, Name: dir + ".wh." + base, Mode: 0o644, ModTime: when}
}

func opaque(dir string, when time.Time) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeReg, Name: dir + "/.wh..wh..opq", Mode: 0o644, ModTime: when}
}

func dirHeader(p string, mode int64, uid, gid int, when time.Time) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeDir, Name: p, Mode: mode, Uid: uid, Gid: gid, ModTime: when}
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
	if err := b.ignoreRules(ctx, git); err != nil {
		return nil, nil, nil, err
	}

	var sysHdrs, repoHdrs, srcHdrs []*tar.Header
	var content []oci.Node
	sysFiles := map[string]bool{}
	srcRoot, _ := b.view.Lookup(o.sourceDir)
	var gitDirs []string // .git directories under SOURCE_DIR, left out of the copy
	err = b.view.Walk(func(n oci.Node) error {
		if acct.removed[n.Path] {
			// SkipDir on a file would skip the rest of its directory.
			if n.Header.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if under(n.Path, o.sourceDir) {
			return b.planSource(n, srcRoot, git, &gitDirs, &repoHdrs, &srcHdrs, &content)
		}
		if acct.files[n.Path] != nil || n.Path == modelHome {
			return nil // rewritten below
		}
		h := n.Header
		nm := b.mode(n.Path, &h)
		if n.Path == taskDir && h.IsDir() {
			nm = h.Mode&^0o777 | 0o700
		}
		if nm == h.Mode || n.Implicit {
			return nil
		}
		if h.Typeflag == tar.TypeReg {
			content = append(content, n)
			sysFiles[n.Path] = true
			return nil
		}
		th := h.TarHeader(n.Path)
		th.Mode = nm
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
	err = oci.ReadFiles(ctx, b.layers, content, func(n oci.Node, r io.Reader) error {
		if sysFiles[n.Path] {
			w, err := sysOut.file(n, n.Path, b.mode(n.Path, &n.Header), n.Header.Uid, n.Header.Gid)
			if err != nil || w == nil {
				return err
			}
			_, err = io.Copy(w, r)
			return err
		}
		return b.copySource(n, r, git, gitDirs, repoOut, srcOut)
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("copying from %s: %w", o.caseRef, err)
	}

	entries, tree, commit, err := git.Finish()
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
		if err := copyEntry(srcOut.w, &h, e.Open); err != nil {
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

func copyEntry(w *oci.LayerWriter, h *tar.Header, open func() (io.ReadCloser, error)) error {
	rc, err := open()
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := w.WriteHeader(h); err != nil {
		return err
	}
	_, err = io.Copy(w, rc)
	return err
}

// ensureDirs returns header-only entries that make p a directory with the
// given mode and owner, creating missing parents as root 0755.
func (b *toolBuild) ensureDirs(p string, mode int64, uid, gid int) []*tar.Header {
	var hs []*tar.Header
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		parent := strings.Join(parts[:i], "/")
		if _, ok := b.view.Lookup(parent); !ok {
			hs = append(hs, dirHeader(parent, 0o755, 0, 0, b.o.when))
		}
	}
	h := dirHeader(p, mode, uid, gid, b.o.when)
	if n, ok := b.view.Lookup(p); ok && n.Header.IsDir() && !n.Implicit {
		// An existing directory keeps its time and attributes; only its
		// mode and owner change.
		h = n.Header.TarHeader(p)
		h.Mode, h.Uid, h.Gid = mode, uid, gid
	}
	return append(hs, h)
}

// inGitDir reports whether rel (relative to SOURCE_DIR) is a .git directory
// or inside one.
func inGitDir(rel string, gitDirs []string) bool {
	for _, g := range gitDirs {
		if under(rel, g) {
			return true
		}
	}
	return false
}

// planSource adds the header-only entries of node n (inside SOURCE_DIR) to
// the repo and source layers, and queues its content.
func (b *toolBuild) planSource(n oci.Node, root oci.Node, git *gitrepo.Builder, gitDirs *[]string, repoHdrs, srcHdrs *[]*tar.Header, content *[]oci.Node) error {
	src := b.o.sourceDir
	rel := strings.TrimPrefix(strings.TrimPrefix(n.Path, src), "/")
	repoPath := repoDir
	if rel != "" {
		repoPath += "/" + rel
	}
	h := n.Header
	if n.Implicit {
		// An applier made this directory; the copies get the same.
		h = oci.Header{Typeflag: tar.TypeDir, Mode: 0o755}
	}
	if h.IsDir() && path.Base(rel) == ".git" {
		*gitDirs = append(*gitDirs, rel)
	}
	hidden := rel != "" && inGitDir(rel, *gitDirs)

	if h.Typeflag == tar.TypeReg {
		*content = append(*content, n)
		return nil
	}
	rh := h.TarHeader(repoPath)
	rh.Mode = b.mode(repoPath, &h)
	if rel == "" {
		rh.Mode = h.Mode&^0o777 | 0o700
	}
	*repoHdrs = append(*repoHdrs, rh)
	if hidden {
		return nil
	}
	sh := h.TarHeader(n.Path)
	sh.Mode, sh.Uid, sh.Gid = b.mode(n.Path, &h), modelUID, modelGID
	*srcHdrs = append(*srcHdrs, sh)
	if rel == "" {
		*srcHdrs = append(*srcHdrs, opaque(n.Path, b.o.when))
	}
	if h.Typeflag == tar.TypeSymlink && rel != "" && !git.Ignored(rel, false) {
		if err := git.AddSymlink(rel, h.Linkname); err != nil {
			return fmt.Errorf("adding /%s to the repository: %w", n.Path, err)
		}
	}
	return nil
}

// copySource writes the content of a file inside SOURCE_DIR to the repo
// layer, the source layer (unless it is in a .git directory) and the new
// repository (unless ignored), reading it once.
func (b *toolBuild) copySource(n oci.Node, r io.Reader, git *gitrepo.Builder, gitDirs []string, repoOut, srcOut *layerOut) error {
	src := b.o.sourceDir
	rel := strings.TrimPrefix(n.Path, src+"/")
	repoPath := repoDir + "/" + rel
	var ws []io.Writer
	w, err := repoOut.file(n, repoPath, b.mode(repoPath, &n.Header), n.Header.Uid, n.Header.Gid)
	if err != nil {
		return err
	}
	if w != nil {
		ws = append(ws, w)
	}
	if inGitDir(rel, gitDirs) {
		_, err := io.Copy(io.MultiWriter(ws...), r)
		return err
	}
	mode := b.mode(n.Path, &n.Header)
	if w, err = srcOut.file(n, n.Path, mode, modelUID, modelGID); err != nil {
		return err
	}
	if w != nil {
		ws = append(ws, w)
	}
	if git.Ignored(rel, false) {
		_, err := io.Copy(io.MultiWriter(ws...), r)
		return err
	}
	if err := git.AddFile(rel, mode, n.Header.Size, io.TeeReader(r, io.MultiWriter(ws...))); err != nil {
		return fmt.Errorf("adding /%s to the repository: %w", n.Path, err)
	}
	return nil
}

// ignoreRules feeds every .gitignore under SOURCE_DIR (outside .git
// directories) to git.
func (b *toolBuild) ignoreRules(ctx context.Context, git *gitrepo.Builder) error {
	src := b.o.sourceDir
	var nodes []oci.Node
	err := b.view.Walk(func(n oci.Node) error {
		if !under(n.Path, src) {
			if strings.HasPrefix(src, n.Path+"/") || n.Path == src || !n.Header.IsDir() {
				// SkipDir on a file (the /bin symlink of a merged-/usr
				// image, say) would skip the rest of its directory.
				return nil
			}
			return fs.SkipDir
		}
		if path.Base(n.Path) == ".git" && n.Header.IsDir() {
			return fs.SkipDir
		}
		if path.Base(n.Path) == ".gitignore" && n.Header.Typeflag == tar.TypeReg && !n.Implicit {
			nodes = append(nodes, n)
		}
		return nil
	})
	if err != nil {
		return err
	}
	contents, err := b.o.facts.ReadSmall(ctx, b.layers, nodes)
	if err != nil {
		return fmt.Errorf("reading .gitignore files of %s: %w", b.o.caseRef, err)
	}
	for _, n := range nodes {
		dir := strings.TrimPrefix(strings.TrimPrefix(path.Dir(n.Path), src), "/")
		if err := git.AddIgnoreFile(dir, contents[n.Path]); err != nil {
			return fmt.Errorf("reading /%s: %w", n.Path, err)
		}
	}
	return nil
}

// accountPlan is what step 3 changes.
type accountPlan struct {
	res      *accounts.Result
	files    map[string][]byte // account files of the case image, by path
	removed  map[string]bool   // paths whited out
	headers  []*tar.Header     // whiteouts and /home/model
	contents []smallFile
}

type smallFile struct {
	hdr  *tar.Header
	data []byte
}

func (b *toolBuild) accounts(ctx context.Context) (*accountPlan, error) {
	o := b.o
	var nodes []oci.Node
	for _, p := range accountFiles {
		n, ok := b.view.Resolve(p)
		if !ok {
			continue
		}
		if n.Header.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("/%s in %s is not a regular file: the case image's accounts cannot be rewritten", p, o.caseRef)
		}
		if n.Path != p {
			return nil, fmt.Errorf("/%s in %s is a symlink to /%s: the tool layer rewrites account files in place, so make it a regular file in the case image", p, o.caseRef, n.Path)
		}
		nodes = append(nodes, n)
	}
	data, err := o.facts.ReadSmall(ctx, b.layers, nodes)
	if err != nil {
		return nil, fmt.Errorf("reading the account files of %s: %w", o.caseRef, err)
	}
	in := accounts.Files{
		Passwd: data["etc/passwd"], Group: data["etc/group"], Shadow: data["etc/shadow"], Gshadow: data["etc/gshadow"],
		LoginDefs: data["etc/login.defs"], Subuid: data["etc/subuid"], Subgid: data["etc/subgid"],
	}
	res, err := accounts.Rewrite(in, accounts.WithDay(o.when.Unix()/86400))
	if err != nil {
		return nil, fmt.Errorf("rewriting the accounts of %s: %w", o.caseRef, err)
	}
	p := &accountPlan{res: res, files: map[string][]byte{}, removed: map[string]bool{}}
	out := map[string][]byte{
		"etc/passwd": res.Files.Passwd, "etc/group": res.Files.Group, "etc/shadow": res.Files.Shadow,
		"etc/gshadow": res.Files.Gshadow, "etc/subuid": res.Files.Subuid, "etc/subgid": res.Files.Subgid,
	}
	for _, n := range nodes {
		p.files[n.Path] = data[n.Path]
		nd, ok := out[n.Path]
		if !ok || nd == nil {
			continue // login.defs, or a file that stays as it was
		}
		h := n.Header.TarHeader(n.Path)
		h.Mode = b.mode(n.Path, &n.Header)
		h.ModTime = o.when
		p.contents = append(p.contents, smallFile{hdr: h, data: nd})
	}
	sort.Slice(p.contents, func(i, j int) bool { return p.contents[i].hdr.Name < p.contents[j].hdr.Name })

	// userdel -r: a home or mail spool that exists and belongs to the
	// deleted user goes, unless the tool layer needs what is there.
	homeGone := false
	for _, r := range res.Remove {
		rel := strings.TrimPrefix(path.Clean(r.Path), "/")
		if rel == "" || under(o.sourceDir, rel) || under(rel, o.sourceDir) || under(taskDir, rel) || rel == "home" {
			continue
		}
		n, ok := b.view.Resolve(rel)
		if !ok || n.Header.Uid != r.UID {
			continue
		}
		if _, ok := b.view.Lookup(rel); !ok {
			continue
		}
		p.removed[rel] = true
		if rel == modelHome {
			// It is made again, empty, in the same layer.
			homeGone = true
			continue
		}
		p.headers = append(p.headers, whiteout(rel, o.when))
	}
	if homeGone {
		p.headers = append(p.headers, opaque(modelHome, o.when))
	}
	return p, nil
}

// seal re-asserts, above the runtime layers, what they would change: the
// runtime's files are root-owned without other-write bits, and /ssebench
// stays 0700. It returns nil when the runtime layers change nothing.
func (b *toolBuild) seal(ctx context.Context, rview *oci.View, rlayers []v1.Layer) (*oci.SpooledLayer, error) {
	var hdrs []*tar.Header
	var files []oci.Node
	err := rview.Walk(func(n oci.Node) error {
		if n.Implicit {
			return nil
		}
		h := n.Header
		want := h.Mode
		if h.Typeflag != tar.TypeSymlink && !(h.IsDir() && h.Mode&0o1000 != 0) {
			want &^= 0o002
		}
		uid, gid := 0, 0
		switch {
		case n.Path == taskDir || n.Path == stateDir || n.Path == repoDir:
			want = 0o700
		case n.Path == modelHome:
			want, uid, gid = 0o755, modelUID, modelGID
		}
		if want == h.Mode && uid == h.Uid && gid == h.Gid {
			return nil
		}
		if h.Typeflag == tar.TypeReg {
			files = append(files, n)
			return nil
		}
		th := h.TarHeader(n.Path)
		th.Mode, th.Uid, th.Gid = want, uid, gid
		hdrs = append(hdrs, th)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(hdrs) == 0 && len(files) == 0 {
		return nil, nil
	}
	l, err := b.newLayer()
	if err != nil {
		return nil, err
	}
	if err := l.headerOnly(hdrs); err != nil {
		l.w.Abort()
		return nil, err
	}
	err = oci.ReadFiles(ctx, rlayers, files, func(n oci.Node, r io.Reader) error {
		w, err := l.file(n, n.Path, n.Header.Mode&^0o002, 0, 0)
		if err != nil || w == nil {
			return err
		}
		_, err = io.Copy(w, r)
		return err
	})
	if err != nil {
		l.w.Abort()
		return nil, fmt.Errorf("copying from %s: %w", b.o.runtimeRef, err)
	}
	return finish(l.w)
}

// finish completes a layer written to a spool file.
func finish(w *oci.LayerWriter) (*oci.SpooledLayer, error) {
	l, err := w.Finish()
	if err != nil {
		return nil, err
	}
	return l.(*oci.SpooledLayer), nil
}
