package assemble

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/assemble/gitrepo"
	"github.com/42-b3yond-6ug/ssebench/oci"
)

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
func (b *toolBuild) planSource(n oci.Node, ref oci.Ref, root oci.Node, git *gitrepo.Builder, gitDirs *[]string, repoHdrs, srcHdrs *[]*tar.Header, content *[]oci.Ref) error {
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
		*content = append(*content, ref)
		return nil
	}
	rh := h.TarHeader(repoPath)
	rh.Mode = b.mode(repoPath, &h)
	// Root's, whatever the case says: the case's owners are uid 1000
	// (model's now) or users the accounts change deleted, which verify
	// rightly fails outside SOURCE_DIR; whoever copies from the pristine
	// tree sets the owners it needs.
	rh.Uid, rh.Gid = 0, 0
	if rel == "" {
		// And 0700: a SOURCE_DIR owned by 1000 in the case image would
		// otherwise give model the pristine tree and its history
		// (SPEC.md section 12).
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
	w, err := repoOut.file(n, repoPath, b.mode(repoPath, &n.Header), 0, 0) // root's, as in planSource
	if err != nil {
		return err
	}
	if w != nil {
		ws = append(ws, w)
	}
	if inGitDir(rel, gitDirs) {
		return b.copy(io.MultiWriter(ws...), r)
	}
	mode := b.mode(n.Path, &n.Header)
	if w, err = srcOut.file(n, n.Path, mode, modelUID, modelGID); err != nil {
		return err
	}
	if w != nil {
		ws = append(ws, w)
	}
	if git.Ignored(rel, false) {
		return b.copy(io.MultiWriter(ws...), r)
	}
	if err := git.AddFile(rel, mode, n.Header.Size, io.TeeReader(r, io.MultiWriter(ws...))); err != nil {
		return fmt.Errorf("adding /%s to the repository: %w", n.Path, err)
	}
	return nil
}

// gitRules feeds every .gitignore and .gitattributes under SOURCE_DIR
// (outside .git directories) to git.
func (b *toolBuild) gitRules(ctx context.Context, git *gitrepo.Builder) error {
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
		if base := path.Base(n.Path); (base == ".gitignore" || base == ".gitattributes") && n.Header.Typeflag == tar.TypeReg && !n.Implicit {
			nodes = append(nodes, n)
		}
		return nil
	})
	if err != nil {
		return err
	}
	contents, err := b.o.facts.ReadSmall(ctx, b.layers, nodes)
	if err != nil {
		return fmt.Errorf("reading .gitignore and .gitattributes files of %s: %w", b.o.caseRef, err)
	}
	for _, n := range nodes {
		dir := strings.TrimPrefix(strings.TrimPrefix(path.Dir(n.Path), src), "/")
		add := git.AddIgnoreFile
		if path.Base(n.Path) == ".gitattributes" {
			add = git.AddAttributesFile
		}
		if err := add(dir, contents[n.Path]); err != nil {
			return fmt.Errorf("reading /%s: %w", n.Path, err)
		}
	}
	return nil
}
