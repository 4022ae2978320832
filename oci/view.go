package oci

import (
	"archive/tar"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"
	"strings"
)

// maxSymlinks bounds the links followed while resolving one path, as
// containerd's fs.RootPath does (it gives up after 255).
const maxSymlinks = 255

var (
	errNotDir       = errors.New("not a directory")
	errTooManyLinks = errors.New("too many levels of symbolic links")
	errNameTooLong  = fmt.Errorf("the path it leads to is beyond PATH_MAX (%d bytes)", PathMax)
)

// View is the merged filesystem of a stack of layers: what a container sees
// at its root. It holds headers only, never content, and does not change
// after Merge returns, so it is safe for concurrent use.
type View struct {
	root    *node
	n       int
	digests []string // by layer
	idxs    []*LayerIndex
	// meta names the entry whose mode, owner, times and xattrs apply to
	// a node when it is not the content's: for the names of a hard-linked
	// file, the last link's. Rare, so kept aside rather than in each node.
	meta map[*node]entryRef
	// names holds the names of the nodes whose entry does not give it
	// (node.named).
	names map[*node]string
}

// name returns n's name, the last component of its path.
func (v *View) name(n *node) string {
	if n.named {
		return v.names[n]
	}
	return v.idxs[n.layer].entries.base(int(n.entry))
}

// entryRef names an entry of a layer's index.
type entryRef struct {
	layer uint16
	entry int32
}

// Node is one file, directory, link or device of a View.
type Node struct {
	// Path is the clean path relative to the root ("etc/passwd").
	Path string
	// Header is the merged metadata. For a hard link it describes the
	// file the link names (type, size, symlink target), with the mode,
	// owner, times and xattrs last applied to that file: on disk the
	// names share one inode. Header.Xattrs is shared with the layer
	// index: treat it as read-only.
	Header Header
	// Layer is the index, in the slice given to Merge, of the layer whose
	// entry holds the node's content (for a directory or other header-only
	// node: the layer whose entry last set it).
	Layer int
	// LayerDigest is the digest of that layer; ReadFiles checks it.
	LayerDigest string
	// Entry is the index of that entry in the layer's LayerIndex.Entries,
	// or -1 for an implicit directory.
	Entry int
	// ContentPath is that entry's name in its layer. It differs from Path
	// for a hard link (it names the original file) and for an entry placed
	// through a symlinked parent directory.
	ContentPath string
	// Implicit is true for a directory no layer has an entry for: the
	// applier created it (root:root 0755, time unknown) as the missing
	// parent of an entry in layer Layer.
	Implicit bool
}

// Ref names a node of a View in one word, where a Node takes about 200
// bytes and its path: a list of every file of a large tree (the files
// whose content a tool layer copies) stays small (1.6 MB for 200,000
// files, where the Nodes took 45 MB). WalkRefs hands them out; View.Node
// turns one back into a Node. A Ref keeps its View in memory; a Node
// does not.
type Ref struct{ n *node }

// node is the in-memory form of a Node: 24 bytes, allocated in slabs
// (nodeSlab). Its name and metadata live in the layer indexes; a node only
// names the entry (layer and position), which keeps a view of a
// 200,000-file tree to about 6 MB beyond the indexes, where it took 18 MB
// with its name, a pointer to each of two entries and a slice of children
// in every node (issue 27).
type node struct {
	parent *node // nil once detached from the tree
	// kids are the children, sorted by name; nil for a file and for a
	// directory that has none (a pointer: most nodes are files).
	kids *[]*node
	// entry holds the node's content (for a directory: the entry that
	// last set it); its mode, owner, times and xattrs apply unless
	// View.meta names another entry.
	entry    int32 // -1 for an implicit directory
	layer    uint16
	typeflag byte // the entry's
	// named is true when the node's name is not its entry's base name
	// (an implicit directory, a hard link): View.names holds it.
	named bool
}

// nodeSlab is how many nodes are allocated at once: one object instead of
// 1,024 saves the allocator's rounding and the collector's work.
const nodeSlab = 1024

func (n *node) isDir() bool {
	return n.entry < 0 || n.typeflag == tar.TypeDir
}

func (n *node) isSymlink() bool {
	return n.entry >= 0 && n.typeflag == tar.TypeSymlink
}

func (n *node) children() []*node {
	if n.kids == nil {
		return nil
	}
	return *n.kids
}

// child returns n's child called name, or nil.
func (v *View) child(n *node, name string) *node {
	kids := n.children()
	i, ok := slices.BinarySearchFunc(kids, name, func(c *node, name string) int {
		return strings.Compare(v.name(c), name)
	})
	if !ok {
		return nil
	}
	return kids[i]
}

// insert adds c to n's children; c must not have a sibling of the same
// name.
func (v *View) insert(n, c *node) {
	if n.kids == nil {
		n.kids = new([]*node)
	}
	i, _ := slices.BinarySearchFunc(*n.kids, v.name(c), func(c *node, name string) int {
		return strings.Compare(v.name(c), name)
	})
	*n.kids = slices.Insert(*n.kids, i, c)
	c.parent = n
}

// remove detaches c, a child of n, and so its whole subtree.
func (v *View) remove(n, c *node) {
	kids := n.children()
	i, ok := slices.BinarySearchFunc(kids, v.name(c), func(c *node, name string) int {
		return strings.Compare(v.name(c), name)
	})
	if ok {
		*n.kids = slices.Delete(kids, i, i+1)
	}
	v.detach(c)
}

// removeChildren detaches every child of n.
func (v *View) removeChildren(n *node) {
	for _, c := range n.children() {
		v.detach(c)
	}
	n.kids = nil
}

// detach cuts n and its subtree out of the tree, pointers and all: nodes
// live in slabs, and the collector scans a slab whole while one of its
// nodes is in the view, so a removed node that still pointed at its
// children kept them, and their slabs, in memory (the 200,000 files a
// tool image's source layer replaces, 5 MB). The names and metadata kept
// aside for them go too, for the same reason.
func (v *View) detach(n *node) {
	stack := []*node{n}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = append(stack[:len(stack)-1], c.children()...)
		c.parent, c.kids = nil, nil
		if c.named {
			delete(v.names, c)
			c.named = false
		}
		delete(v.meta, c)
	}
}

func (v *View) export(n *node, p string) Node {
	out := Node{Path: p, Layer: int(n.layer), LayerDigest: v.digests[n.layer], Entry: int(n.entry)}
	if n.entry < 0 {
		out.Implicit = true
		out.Header = Header{Typeflag: tar.TypeDir, Mode: 0o755}
		return out
	}
	c := &v.idxs[n.layer].entries
	out.ContentPath = c.name(int(n.entry))
	h := c.header(int(n.entry))
	if r, ok := v.meta[n]; ok {
		m := v.idxs[r.layer].entries.header(int(r.entry))
		h.Mode, h.Uid, h.Gid, h.ModTime, h.Xattrs = m.Mode, m.Uid, m.Gid, m.ModTime, m.Xattrs
	}
	out.Header = h
	return out
}

// linkname returns the symlink target of node n.
func (v *View) linkname(n *node) string {
	return v.idxs[n.layer].entries.linkname(int(n.entry))
}

// Merge computes the filesystem that results from applying the layers in
// order, bottom layer first, as the OCI image specification describes and
// containerd applies them:
//
//   - In each layer, whiteouts apply to the lower layers only, whatever
//     their position in the tar: "<dir>/.wh.<name>" removes <name> and
//     everything below it, "<dir>/.wh..wh..opq" removes every child of
//     <dir> from the lower layers. The layer's other entries are then
//     applied in tar order, so an entry of the same layer survives a
//     whiteout of its path, and a later layer can re-create a removed path.
//   - An entry over an existing path replaces it, subtree and all, unless
//     both are directories: then only the metadata changes. So within one
//     layer the last duplicate wins.
//   - Parent directories are resolved within the root: a symlink in a
//     parent component is followed (an absolute target starts again at the
//     root, ".." stops at the root), so an entry below a path that a lower
//     layer made a symlink lands where the symlink leads, as with
//     containerd's fs.RootPath. A missing parent is created as an implicit
//     directory. A parent that is neither a directory nor a symlink is an
//     error, as it is for containerd.
//   - A hard link names the file its target names at the time the link is
//     applied, so it keeps that content even if a later layer removes the
//     target. The link's metadata applies to every name of the file. A
//     target that does not exist or is a directory is an error.
//
// Errors name the layer (its position and digest) and the entry.
//
// The view points into indexes, which must not be modified afterwards.
func Merge(indexes []*LayerIndex) (*View, error) {
	if len(indexes) > math.MaxUint16 {
		return nil, fmt.Errorf("merging layers: %d layers, more than an image can have", len(indexes))
	}
	v := &View{root: &node{entry: -1, named: true}, idxs: indexes, meta: map[*node]entryRef{}, names: map[*node]string{}}
	m := &merger{v: v, groups: make(map[int32][]*node), ino: make(map[*node]int32), maxSize: MaxEntrySize()}
	for i, idx := range indexes {
		if idx == nil {
			return nil, fmt.Errorf("merging layers: layer %d has no index", i)
		}
		if idx.Format != IndexFormat {
			return nil, fmt.Errorf("merging layers: the index of layer %d (%s) has format %d, but this program reads format %d: index the layer again", i, idx.Digest, idx.Format, IndexFormat)
		}
		m.layer, m.idx = i, idx
		v.digests = append(v.digests, idx.Digest)
		if err := m.apply(); err != nil {
			return nil, err
		}
	}
	v.n = 0
	v.walk(v.root, "", func(*node, string) error { v.n++; return nil })
	return v, nil
}

// merger applies the layers one after the other.
type merger struct {
	v     *View
	layer int
	idx   *LayerIndex
	k     int // the entry being applied
	// groups lists the names of each hard-linked file, by inode number;
	// ino is the inode number of a name that shares its file.
	groups  map[int32][]*node
	ino     map[*node]int32
	lastIno int32
	slab    []node
	// maxSize is the largest regular file an index may record (see
	// MaxEntrySize): a cached or fetched index is checked as a read one.
	maxSize int64
}

// newNode returns a node called name for entry k of the current layer (-1
// for an implicit directory).
func (m *merger) newNode(name string, k int, typeflag byte) *node {
	if len(m.slab) == 0 {
		m.slab = make([]node, nodeSlab)
	}
	n := &m.slab[0]
	m.slab = m.slab[1:]
	*n = node{entry: int32(k), layer: uint16(m.layer), typeflag: typeflag}
	if k < 0 {
		m.rename(n, name)
	}
	return n
}

// rename keeps n's name aside: its entry does not give it.
func (m *merger) rename(n *node, name string) {
	n.named = true
	m.v.names[n] = name
}

// errorf describes a problem with the entry being applied, entry m.k.
func (m *merger) errorf(format string, args ...any) error {
	e := m.idx.Entry(m.k)
	return fmt.Errorf("layer %d (%s): entry %q: %s", m.layer, m.idx.Digest, shorten(e.TarName()), fmt.Sprintf(format, args...))
}

func (m *merger) apply() error {
	entries := &m.idx.entries
	for k := range entries.len() {
		m.k = k
		e := entries.entry(k)
		if err := m.validate(&e); err != nil {
			return err
		}
	}
	// Whiteouts first: they apply to the lower layers only.
	for k := range entries.len() {
		if entries.marker(k) == NotMarker {
			continue
		}
		switch e := entries.entry(k); e.Marker {
		case Whiteout:
			dir, base := path.Split(e.Name)
			if _, p, err := m.v.resolve(dir, true); err == nil && p != nil && p.isDir() {
				if c := m.v.child(p, base); c != nil {
					m.v.remove(p, c)
				}
			}
		case Opaque:
			if _, p, err := m.v.resolve(e.Name, true); err == nil && p != nil && p.isDir() {
				m.v.removeChildren(p)
			}
		}
	}
	for k := range entries.len() {
		m.k = k
		// Without its name, which applyEntry takes from the index
		// unmade: most entries are not markers.
		ek := IndexEntry{Marker: entries.marker(k), Header: entries.header(k)}
		if ek.Marker != NotMarker {
			ek = entries.entry(k)
		}
		e := &ek
		var err error
		switch e.Marker {
		case Whiteout:
			// The applier still creates the marker's missing parents.
			_, _, err = m.ensureDir(e, path.Dir(e.Name))
		case Opaque:
			_, _, err = m.ensureDir(e, e.Name)
		default:
			err = m.applyEntry(e, k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// validate checks what IndexLayer guarantees, because an index may come
// from a cache rather than from IndexLayer.
func (m *merger) validate(e *IndexEntry) error {
	clean, err := cleanName(e.Name)
	switch {
	case err != nil:
		return m.errorf("%v", err)
	case clean != e.Name:
		return m.errorf("name is not clean (want %q)", clean)
	case e.Name == "" && e.Marker != Opaque:
		return m.errorf("entry for the root directory")
	}
	if err := checkLength("its name", e.Name); err != nil {
		return m.errorf("%v", err)
	}
	if e.Typeflag == tar.TypeSymlink && len(e.Linkname) >= PathMax {
		return m.errorf("symlink target is %d bytes long: beyond PATH_MAX (%d)", len(e.Linkname), PathMax)
	}
	if e.Marker != NotMarker {
		if e.Marker > Opaque {
			return m.errorf("unknown marker %d", e.Marker)
		}
		return nil
	}
	switch e.Typeflag {
	case tar.TypeReg:
		if e.Size < 0 || e.Size > m.maxSize {
			return m.errorf("a file of %d bytes: more than any real image holds (the limit is %d; set %s to raise it)", e.Size, m.maxSize, MaxEntrySizeEnv)
		}
	case tar.TypeDir, tar.TypeSymlink, tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
	case tar.TypeLink:
		target, err := cleanName(e.Linkname)
		switch {
		case err != nil:
			return m.errorf("hard link target %q: %v", e.Linkname, err)
		case target == "":
			return m.errorf("hard link to the root directory")
		case target != e.Linkname:
			return m.errorf("hard link target %q is not clean", shorten(e.Linkname))
		}
		if err := checkLength("its hard link target", target); err != nil {
			return m.errorf("%v", err)
		}
	default:
		return m.errorf("unsupported tar entry type %q", e.Typeflag)
	}
	return nil
}

// ensureDir resolves dir within the root and creates what is missing of it
// as implicit directories, returning the directory and its resolved path.
func (m *merger) ensureDir(e *IndexEntry, dir string) (*node, string, error) {
	if dir == "." {
		dir = ""
	}
	if n := m.v.lookupDir(dir); n != nil {
		return n, dir, nil
	}
	names, n, err := m.v.resolve(dir, true)
	if err != nil {
		return nil, "", m.errorf("resolving parent directory %q: %v", shorten(dir), err)
	}
	resolved := strings.Join(names, "/")
	if n != nil {
		if !n.isDir() {
			return nil, "", m.errorf("parent %q is not a directory", shorten(resolved))
		}
		return n, resolved, nil
	}
	cur := m.v.root
	for _, c := range names {
		next := m.v.child(cur, c)
		if next == nil {
			next = m.newNode(c, -1, 0)
			m.v.insert(cur, next)
		}
		cur = next
	}
	return cur, resolved, nil
}

func (m *merger) applyEntry(e *IndexEntry, k int) error {
	dir, _, base := m.idx.entries.dirBase(k)
	parent, resolved, err := m.ensureDir(e, dir)
	if err != nil {
		return err
	}
	if 1+len(resolved)+1+len(base) >= PathMax {
		return m.errorf("placed through symlinks at a path beyond PATH_MAX (%d bytes)", PathMax)
	}
	if old := m.v.child(parent, base); old != nil {
		if old.isDir() && e.Typeflag == tar.TypeDir {
			// Directory over directory: new metadata, same children.
			old.layer, old.entry, old.typeflag = uint16(m.layer), int32(k), e.Typeflag
			return nil
		}
		m.v.remove(parent, old)
	}
	n := m.newNode(base, k, e.Typeflag)
	if e.Typeflag == tar.TypeLink {
		// containerd removes the old path before it links, so a link to
		// the path it replaces finds nothing: resolve the target now.
		tdir, tbase := path.Split(e.Linkname)
		_, tp, err := m.v.resolve(strings.TrimSuffix(tdir, "/"), true)
		var target *node
		if err == nil && tp != nil && tp.isDir() {
			target = m.v.child(tp, tbase)
		}
		switch {
		case target == nil:
			return m.errorf("hard link target %q does not exist", e.Linkname)
		case target.isDir():
			return m.errorf("hard link target %q is a directory", e.Linkname)
		}
		m.rename(n, base)
		n.layer, n.entry, n.typeflag = target.layer, target.entry, target.typeflag
		m.link(target, n, k)
	}
	m.v.insert(parent, n)
	return nil
}

// link puts n in target's hard-link group and applies the metadata of
// entry k (n's) to every name of the file, as chmod and chown on one name
// do on disk.
func (m *merger) link(target, n *node, k int) {
	ino := m.ino[target]
	if ino == 0 {
		m.lastIno++
		ino = m.lastIno
		m.ino[target] = ino
		m.groups[ino] = []*node{target}
	}
	m.ino[n] = ino
	ref := entryRef{uint16(m.layer), int32(k)}
	m.v.meta[n] = ref
	// Filter in place: names replaced or removed since no longer share
	// the inode.
	names := m.groups[ino][:0]
	for _, o := range m.groups[ino] {
		if m.v.attached(o) {
			m.v.meta[o] = ref
			names = append(names, o)
		}
	}
	m.groups[ino] = append(names, n)
}

// attached reports whether n is still in the tree under the root.
func (v *View) attached(n *node) bool {
	for c := n; c != v.root; c = c.parent {
		if c == nil || c.parent == nil || v.child(c.parent, v.name(c)) != c {
			return false
		}
	}
	return true
}

// lookupDir is the common case of resolve, without allocating: it returns
// the directory at the clean path p if every component of p is an existing
// directory, and nil otherwise (a symlink, a file or a missing component
// on the way), leaving those cases to resolve.
func (v *View) lookupDir(p string) *node {
	n := v.root
	for p != "" {
		var c string
		c, p, _ = strings.Cut(p, "/")
		if n = v.child(n, c); n == nil || !n.isDir() {
			return nil
		}
	}
	return n
}

// resolve walks the clean relative path p from the root, following
// symlinks in every component (and in the last one too when followLast),
// within the root: an absolute target starts again at the root and ".."
// never climbs above it, like the kernel inside a chroot and like
// github.com/moby/sys/symlink.FollowSymlinkInScope. It returns the resolved
// path's components and its node, which is nil if the path does not exist.
// A component that exists but is neither a directory nor a symlink, with
// more components after it, is errNotDir.
func (v *View) resolve(p string, followLast bool) ([]string, *node, error) {
	names, n, _, err := ResolveInRoot[*node](viewTree{v}, v.root, p, followLast, nil)
	return names, n, err
}

// viewTree is the view as ResolveInRoot walks it.
type viewTree struct{ v *View }

// Child implements Tree.
func (t viewTree) Child(parent *node, name string) (*node, PathEntry, error) {
	n := t.v.child(parent, name)
	if n == nil {
		return nil, PathEntry{}, nil
	}
	e := PathEntry{Exists: true, Dir: n.isDir(), IsLink: n.isSymlink()}
	if e.IsLink {
		e.Link = t.v.linkname(n)
	}
	return n, e, nil
}

// Node returns the node r names, its Path rebuilt from the tree. r must
// come from a Node of v.
func (v *View) Node(r Ref) Node {
	return v.export(r.n, v.pathOf(r.n))
}

// pathOf rebuilds the path of an attached node from its parents.
func (v *View) pathOf(n *node) string {
	size := -1
	for c := n; c != nil && c != v.root; c = c.parent {
		size += len(v.name(c)) + 1
	}
	if size <= 0 {
		return ""
	}
	b := make([]byte, size)
	end := size
	for c := n; c != nil && c != v.root; c = c.parent {
		name := v.name(c)
		copy(b[end-len(name):end], name)
		end -= len(name)
		if end > 0 {
			end--
			b[end] = '/'
		}
	}
	return string(b)
}

// Len returns the number of nodes in the view (the root not included).
func (v *View) Len() int { return v.n }

// Lookup returns the node at path, which is cleaned first (a leading "/" or
// "./" is allowed). Symlinks are not followed: Lookup("lib") returns the
// symlink itself when lib is one. The root is not a node.
func (v *View) Lookup(p string) (Node, bool) {
	p, err := cleanName(p)
	if err != nil || p == "" {
		return Node{}, false
	}
	n := v.root
	for c := range strings.SplitSeq(p, "/") {
		if !n.isDir() {
			return Node{}, false
		}
		if n = v.child(n, c); n == nil {
			return Node{}, false
		}
	}
	return v.export(n, p), true
}

// Resolve returns the node that path leads to inside the container,
// following symlinks in every component including the last, within the
// root (an absolute target starts again at the root, ".." stops there).
// The returned Node's Path is the resolved path. It returns false when the
// path does not exist, runs through a non-directory, or loops.
func (v *View) Resolve(p string) (Node, bool) {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	names, n, err := v.resolve(p, true)
	if err != nil || n == nil || n == v.root {
		return Node{}, false
	}
	return v.export(n, strings.Join(names, "/")), true
}

// Walk calls fn for every node in path order (ComparePaths: a directory
// right before its children). If fn returns fs.SkipDir for a directory its
// children are skipped; for any other node, the rest of its directory is.
// fs.SkipAll stops the walk without error; any other error stops it and is
// returned.
func (v *View) Walk(fn func(Node) error) error {
	err := v.walk(v.root, "", func(n *node, p string) error { return fn(v.export(n, p)) })
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// WalkRefs is Walk that also passes each node's Ref.
func (v *View) WalkRefs(fn func(Node, Ref) error) error {
	err := v.walk(v.root, "", func(n *node, p string) error { return fn(v.export(n, p), Ref{n}) })
	if errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

func (v *View) walk(dir *node, prefix string, fn func(*node, string) error) error {
	for _, c := range dir.children() {
		p := v.name(c)
		if prefix != "" {
			p = prefix + "/" + p
		}
		err := fn(c, p)
		if err == nil && c.isDir() {
			err = v.walk(c, p, fn)
		}
		if err == fs.SkipDir {
			if c.isDir() {
				continue
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}
