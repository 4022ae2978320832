package agentimage

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/moby/sys/user"

	"github.com/42-b3yond-6ug/ssebench/oci"
)

// entry is one path of the image filesystem that a native layer writes or
// that an earlier layer holds.
type entry struct {
	hdr  tar.Header // Name unused: the map key is the path
	open func() (io.ReadCloser, error)
	// node is set for a path of the tool image, so that its content can
	// be read (for /etc/passwd).
	node *oci.Node
}

func (e *entry) isDir() bool     { return e.hdr.Typeflag == tar.TypeDir }
func (e *entry) isSymlink() bool { return e.hdr.Typeflag == tar.TypeSymlink }

// layerSet is the entries of the layer being computed, by clean path
// relative to the root.
type layerSet map[string]*entry

// imageFS is the filesystem a native step sees: the tool image (its merged
// view, loaded on first use) with the native layers written so far on top.
// Native layers never remove anything, so an overlay of their entries is
// enough.
type imageFS struct {
	ctx      context.Context
	o        *options
	layers   []v1.Layer // the tool image's, for the view and for reading files
	view     *oci.View
	overlay  layerSet
	contexts map[bool]*contextFS // by fromWorkspace
	dirs     [2]string           // build context, workspace
}

func (f *imageFS) lower() (*oci.View, error) {
	if f.view != nil {
		return f.view, nil
	}
	v, err := f.o.facts.View(f.ctx, f.layers)
	if err != nil {
		return nil, fmt.Errorf("reading the tool image: %w", err)
	}
	f.view = v
	return v, nil
}

// lookup returns the entry at p without following a final symlink: from
// cur (the layer being computed, may be nil), the earlier native layers,
// then the tool image.
func (f *imageFS) lookup(p string, cur layerSet) (*entry, bool, error) {
	if p == "" {
		return &entry{hdr: tar.Header{Typeflag: tar.TypeDir, Mode: 0o755}}, true, nil
	}
	if e, ok := cur[p]; ok {
		return e, true, nil
	}
	if e, ok := f.overlay[p]; ok {
		return e, true, nil
	}
	v, err := f.lower()
	if err != nil {
		return nil, false, err
	}
	n, ok := v.Lookup(p)
	if !ok {
		return nil, false, nil
	}
	return &entry{hdr: *n.Header.TarHeader(p), node: &n}, true, nil
}

// resolve follows symlinks in every component of the absolute path p, the
// last one included, within the root, as BuildKit's fs.RootPath does (".."
// stops at the root). A missing component ends the resolution: the rest is
// appended as written. The result is relative to the root.
func (f *imageFS) resolve(p string, cur layerSet) (string, error) {
	names, _, _, err := oci.ResolveInRoot[string](imageTree{f, cur}, "", p, true, nil)
	var nd *oci.NotDirError
	if errors.As(err, &nd) {
		return "", fmt.Errorf("/%s is not a directory", nd.Path)
	}
	if err != nil {
		return "", err
	}
	return path.Join(names...), nil
}

// imageTree is the image being built (its lower layers and cur) as
// oci.ResolveInRoot walks it; handles are paths relative to the root.
type imageTree struct {
	f   *imageFS
	cur layerSet
}

// Child implements oci.Tree.
func (t imageTree) Child(parent, name string) (string, oci.PathEntry, error) {
	cand := path.Join(parent, name)
	e, ok, err := t.f.lookup(cand, t.cur)
	if err != nil || !ok {
		return cand, oci.PathEntry{}, err
	}
	pe := oci.PathEntry{Exists: true, Dir: e.isDir(), IsLink: e.isSymlink()}
	if pe.IsLink {
		pe.Link = e.hdr.Linkname
	}
	return cand, pe, nil
}

// owner is a numeric uid and gid.
type owner struct{ uid, gid int }

// mkdirAll creates the missing directories of the resolved path p in cur,
// as fsutil's MkdirAll does: mode and owner for each new one, the build
// time as its modification time.
func (f *imageFS) mkdirAll(p string, mode int64, own owner, cur layerSet) error {
	if p == "" {
		return nil
	}
	comps := strings.Split(p, "/")
	for i := range comps {
		dir := strings.Join(comps[:i+1], "/")
		e, ok, err := f.lookup(dir, cur)
		if err != nil {
			return err
		}
		if ok {
			if !e.isDir() {
				return fmt.Errorf("cannot create directory /%s: /%s is not a directory", p, dir)
			}
			continue
		}
		cur[dir] = &entry{hdr: tar.Header{Typeflag: tar.TypeDir, Mode: mode, Uid: own.uid, Gid: own.gid, ModTime: f.o.when}}
	}
	return nil
}

// workdir computes the layer of a WORKDIR: the directory and its missing
// parents, 0755, owned by the image's USER (BuildKit's mkdir -p).
func (f *imageFS) workdir(op *layerOp, cur layerSet) error {
	own, err := f.owner(op.chown)
	if err != nil {
		return err
	}
	p, err := f.resolve(op.dest, cur)
	if err != nil {
		return err
	}
	return f.mkdirAll(p, 0o755, own, cur)
}

// copy computes the layer of a COPY or ADD, following fsutil's copy (the
// one BuildKit runs): for each source (each match of a pattern), the
// destination's directories are created, a file goes inside an existing
// directory, and a directory's contents are merged into the destination.
func (f *imageFS) copy(op *layerOp, cur layerSet) error {
	cfs, err := f.context(op.fromWorkspace)
	if err != nil {
		return err
	}
	own, err := f.owner(op.chown)
	if err != nil {
		return err
	}
	dirMode := int64(0o755)
	if op.chmod != nil {
		dirMode = int64(*op.chmod & 0o777)
	}
	c := &copier{f: f, cfs: cfs, own: own, chmod: op.chmod, cur: cur}
	for _, src := range op.srcs {
		rel, err := cleanSource(src)
		if err != nil {
			return fmt.Errorf("%s source %q: %w", strings.ToUpper(op.kind), src, err)
		}
		matches := []string{rel}
		if hasWildcards(rel) {
			if matches, err = cfs.glob(rel); err != nil {
				return fmt.Errorf("%s source %q: %w in %s", strings.ToUpper(op.kind), src, err, cfs.what)
			}
		}
		for _, m := range matches {
			real, fi, err := cfs.resolve(m, true)
			if err != nil {
				return fmt.Errorf("%s source %q: %w in %s", strings.ToUpper(op.kind), src, err, cfs.what)
			}
			if op.kind == "add" && fi.Mode().IsRegular() {
				if ok, err := isArchive(cfs.abs(real)); err != nil {
					return err
				} else if ok {
					return needsBuildKit("ADD unpacks the archive %s", src)
				}
			}
			if err := c.copySource(op.dest, m, real, fi, dirMode); err != nil {
				return err
			}
		}
	}
	return nil
}

func (f *imageFS) context(workspace bool) (*contextFS, error) {
	if c := f.contexts[workspace]; c != nil {
		return c, nil
	}
	var (
		c   *contextFS
		err error
	)
	if workspace {
		if f.dirs[1] == "" {
			return nil, errors.New("COPY --from=workspace: no workspace directory (the SSEBench home) was given")
		}
		c, err = openContext(f.dirs[1], "the workspace (the SSEBench home)", ".dockerignore")
	} else {
		c, err = openContext(f.dirs[0], "the build context (the agent folder)", "Dockerfile.dockerignore", ".dockerignore")
	}
	if err != nil {
		return nil, err
	}
	f.contexts[workspace] = c
	return c, nil
}

// copier copies one COPY's sources into cur.
type copier struct {
	f     *imageFS
	cfs   *contextFS
	own   owner
	chmod *uint32
	cur   layerSet
	// inodes maps a multiply-linked source file to the first path it was
	// copied to, so that its other names become hard links, as fsutil
	// does within one source.
	inodes map[uint64]string
}

func (c *copier) copySource(dest, match, real string, fi fs.FileInfo, dirMode int64) error {
	c.inodes = map[uint64]string{}
	f := c.f
	ensure := dest
	if !strings.HasSuffix(dest, "/") && !strings.HasSuffix(dest, "/.") {
		ensure = path.Dir(dest)
	}
	ensured, err := f.resolve(ensure, c.cur)
	if err != nil {
		return err
	}
	if err := f.mkdirAll(ensured, dirMode, c.own, c.cur); err != nil {
		return err
	}
	dst, err := f.resolve(path.Clean(dest), c.cur)
	if err != nil {
		return err
	}
	de, exists, err := f.lookup(dst, c.cur)
	if err != nil {
		return err
	}
	destPath := dst
	if !fi.IsDir() && exists && de.isDir() {
		destPath = path.Join(dst, path.Base("/"+match))
	}
	target := path.Dir("/" + destPath)[1:]
	if fi.IsDir() && !exists {
		target = destPath
	}
	if err := f.mkdirAll(target, dirMode, c.own, c.cur); err != nil {
		return err
	}
	return c.copyTree(real, fi, destPath, false)
}

// mode is the mode a copied entry gets: --chmod when given, else the
// source's permission and setuid, setgid and sticky bits.
func (c *copier) mode(fi fs.FileInfo) int64 {
	if c.chmod != nil {
		return int64(*c.chmod & 0o7777)
	}
	m := int64(fi.Mode().Perm())
	if fi.Mode()&fs.ModeSetuid != 0 {
		m |= 0o4000
	}
	if fi.Mode()&fs.ModeSetgid != 0 {
		m |= 0o2000
	}
	if fi.Mode()&fs.ModeSticky != 0 {
		m |= 0o1000
	}
	return m
}

// mtime is a copied entry's modification time: the source's, clamped to
// the build time, as BuildKit's rewrite-timestamp does with
// SOURCE_DATE_EPOCH. A checkout's files carry the time of the clone, so
// without the clamp the same agent folder gave a different image on every
// machine.
func (c *copier) mtime(fi fs.FileInfo) time.Time {
	if t := fi.ModTime(); t.Before(c.f.o.when) {
		return t
	}
	return c.f.o.when
}

func (c *copier) copyTree(rel string, fi fs.FileInfo, dst string, overwrite bool) error {
	ex, exists, err := c.f.lookup(dst, c.cur)
	if err != nil {
		return err
	}
	hdr := tar.Header{Mode: c.mode(fi), Uid: c.own.uid, Gid: c.own.gid, ModTime: c.mtime(fi)}
	switch {
	case fi.IsDir():
		if exists && !ex.isDir() {
			return fmt.Errorf("cannot copy a directory to /%s: it is not a directory", dst)
		}
		kids, err := c.cfs.readDir(rel)
		if err != nil {
			return err
		}
		for _, k := range kids {
			kfi, err := os.Lstat(c.cfs.abs(k))
			if err != nil {
				return err
			}
			if err := c.copyTree(k, kfi, path.Join(dst, path.Base(k)), true); err != nil {
				return err
			}
		}
		if !exists || overwrite {
			hdr.Typeflag = tar.TypeDir
			c.cur[dst] = &entry{hdr: hdr}
			return nil
		}
		// The top directory of a COPY that exists already keeps its mode
		// and owner, and takes the source's time.
		e := &entry{hdr: ex.hdr, node: ex.node}
		e.hdr.ModTime = c.mtime(fi)
		c.cur[dst] = e
		return nil
	case exists && ex.isDir():
		return fmt.Errorf("cannot replace the directory /%s with a file", dst)
	case fi.Mode().IsRegular():
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			if first, seen := c.inodes[st.Ino]; seen {
				hdr.Typeflag = tar.TypeLink
				hdr.Linkname = first
				c.cur[dst] = &entry{hdr: hdr}
				return nil
			}
			c.inodes[st.Ino] = dst
		}
		hdr.Typeflag = tar.TypeReg
		hdr.Size = fi.Size()
		p := c.cfs.abs(rel)
		c.cur[dst] = &entry{hdr: hdr, open: func() (io.ReadCloser, error) { return os.Open(p) }}
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(c.cfs.abs(rel))
		if err != nil {
			return err
		}
		hdr.Typeflag = tar.TypeSymlink
		hdr.Linkname = target
		hdr.Mode = 0o777
		c.cur[dst] = &entry{hdr: hdr}
	case fi.Mode()&fs.ModeNamedPipe != 0:
		hdr.Typeflag = tar.TypeFifo
		c.cur[dst] = &entry{hdr: hdr}
	case fi.Mode()&fs.ModeDevice != 0:
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: cannot read the device numbers", rel)
		}
		hdr.Typeflag = tar.TypeBlock
		if fi.Mode()&fs.ModeCharDevice != 0 {
			hdr.Typeflag = tar.TypeChar
		}
		hdr.Devmajor, hdr.Devminor = int64(major(st.Rdev)), int64(minor(st.Rdev))
		c.cur[dst] = &entry{hdr: hdr}
	default:
		// Sockets cannot travel in a layer.
	}
	return nil
}

func major(dev uint64) uint64 { return (dev >> 8) & 0xfff }
func minor(dev uint64) uint64 { return (dev & 0xff) | ((dev >> 12) & 0xfff00) }

// withParents adds to cur every directory above its entries that it lacks,
// with the directory's current metadata, as BuildKit's layer diffs do.
func (f *imageFS) withParents(cur layerSet) error {
	for p := range cur {
		for d := parentOf(p); d != ""; d = parentOf(d) {
			if _, ok := cur[d]; ok {
				continue
			}
			e, ok, err := f.lookup(d, nil)
			if err != nil {
				return err
			}
			if !ok || !e.isDir() {
				return fmt.Errorf("internal error: parent /%s of /%s is not a directory", d, p)
			}
			cur[d] = &entry{hdr: e.hdr, node: e.node}
		}
	}
	return nil
}

// entries turns cur into layer entries.
func (cur layerSet) entries() []oci.Entry {
	out := make([]oci.Entry, 0, len(cur))
	for p, e := range cur {
		h := e.hdr
		h.Name = p
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		var open func() (io.ReadCloser, error)
		if h.Typeflag == tar.TypeReg {
			open = e.open
		}
		out = append(out, oci.Entry{Header: &h, Open: open})
	}
	return out
}

// owner resolves a --chown value (or USER) to numeric ids, as BuildKit's
// readUser does: "uid[:gid]" or names looked up in the image's /etc/passwd
// and /etc/group; a lone user takes its own uid as gid when numeric, its
// primary group when a name; an unknown name leaves 0.
func (f *imageFS) owner(spec string) (owner, error) {
	var own owner
	if spec == "" {
		return own, nil
	}
	userPart, groupPart, _ := strings.Cut(spec, ":")
	if id, ok := parseID(userPart); ok {
		own = owner{id, id}
	} else {
		b, err := f.readFile("/etc/passwd")
		if err != nil {
			return own, err
		}
		if b != nil {
			us, err := user.ParsePasswdFilter(bytes.NewReader(b), func(u user.User) bool { return u.Name == userPart })
			if err != nil {
				return own, fmt.Errorf("reading /etc/passwd of the image: %w", err)
			}
			if len(us) > 0 {
				own = owner{us[0].Uid, us[0].Gid}
			}
		}
	}
	if groupPart != "" {
		if id, ok := parseID(groupPart); ok {
			own.gid = id
		} else {
			b, err := f.readFile("/etc/group")
			if err != nil {
				return own, err
			}
			if b != nil {
				gs, err := user.ParseGroupFilter(bytes.NewReader(b), func(g user.Group) bool { return g.Name == groupPart })
				if err != nil {
					return own, fmt.Errorf("reading /etc/group of the image: %w", err)
				}
				if len(gs) > 0 {
					own.gid = gs[0].Gid
				}
			}
		}
	}
	return own, nil
}

func parseID(s string) (int, bool) {
	if s == "root" {
		return 0, true
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, false
	}
	return int(n), true
}

// maxAccountFile bounds what is read of /etc/passwd or /etc/group, as
// BuildKit bounds it.
const maxAccountFile = 10 << 20

// readFile returns the content of the regular file at the absolute path p
// of the image as it is before the current step, or nil when there is
// none.
func (f *imageFS) readFile(p string) ([]byte, error) {
	real, err := f.resolve(p, nil)
	if err != nil {
		return nil, nil
	}
	e, ok, err := f.lookup(real, nil)
	if err != nil || !ok || e.hdr.Typeflag != tar.TypeReg {
		return nil, err
	}
	if e.open != nil {
		rc, err := e.open()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(io.LimitReader(rc, maxAccountFile))
	}
	if e.node == nil {
		return nil, nil
	}
	files, err := f.o.facts.ReadSmall(f.ctx, f.layers, []oci.Node{*e.node})
	if err != nil {
		return nil, fmt.Errorf("reading %s of the tool image: %w", p, err)
	}
	return files[e.node.Path], nil
}
