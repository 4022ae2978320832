package gitrepo

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/42-b3yond-6ug/ssebench/oci"
)

// Owner of the repository's files: the model user (SPEC.md section 4, step
// 8: ".git owned 1000:1000").
const (
	ownerUID = 1000
	ownerGID = 1000
)

// Builder writes a fresh one-commit repository as tar entries, without
// running git and without the working tree on disk.
//
// Use it in two phases: first AddIgnoreFile for every .gitignore and
// AddAttributesFile for every .gitattributes of the tree, then Ignored, AddFile and AddSymlink for the files, in any order,
// then Finish. The result depends only on the set of files, not on the order
// they came in. A Builder is not safe for concurrent use; Close it to remove
// its temporary files.
type Builder struct {
	o   *options
	dir string

	spool *spool
	// blobs are the blobs in the order they came, in a temporary file,
	// duplicates and all: Finish sorts them and keeps one of each. A map
	// of ids to objects took 20 MB for 200,000 files, and a set of ids
	// still 6 MB, held while the caller holds the case's layer indexes.
	blobs *records

	ignores    map[string]*ignoreList
	dirIgnored map[string]bool
	// attrs are the .gitattributes files by directory, and macros the
	// macro attributes the top-level one defines.
	attrs  map[string]*attrList
	macros map[string][]attrAssign
	// sealed is set once files are looked at: from then on the ignore
	// rules must not change.
	sealed bool

	// files are the added files in the order they came, in a temporary
	// file: Finish sorts them and refuses a path added twice, and a
	// file where a directory is, then.
	files *records
	// dirs holds every directory above an added file, to refuse a file
	// where a directory is and the reverse.
	dirs map[string]bool

	finished bool
}

// NewBuilder returns a Builder that keeps its temporary files (the objects,
// compressed, and the index) in a new directory under tmpDir.
func NewBuilder(tmpDir string, opts ...Option) (_ *Builder, retErr error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(tmpDir, "gitrepo-")
	if err != nil {
		return nil, fmt.Errorf("creating temporary directory: %w", err)
	}
	defer func() {
		if retErr != nil {
			os.RemoveAll(dir)
		}
	}()
	f, err := os.Create(filepath.Join(dir, "blobs"))
	if err != nil {
		return nil, fmt.Errorf("creating object spool: %w", err)
	}
	s, err := newSpool(f, o.compression)
	if err != nil {
		f.Close()
		return nil, err
	}
	blobs, err := newRecords(dir, "blob-records")
	if err != nil {
		f.Close()
		return nil, err
	}
	files, err := newRecords(dir, "file-records")
	if err != nil {
		f.Close()
		blobs.close()
		return nil, err
	}
	return &Builder{
		o:          o,
		dir:        dir,
		spool:      s,
		blobs:      blobs,
		ignores:    map[string]*ignoreList{},
		dirIgnored: map[string]bool{},
		attrs:      map[string]*attrList{},
		macros:     map[string][]attrAssign{},
		files:      files,
		dirs:       map[string]bool{},
	}, nil
}

// errSealed is returned by AddIgnoreFile and AddAttributesFile once files
// have been looked at.
var errSealed = errors.New("ignore rules and attributes must all be added before the first Ignored, AddFile or AddSymlink")

// AddIgnoreFile adds the rules of the .gitignore file in dir (relative to
// the repository root; "" or "." is the root). content is the file's
// content. Only a regular file counts: git does not follow a .gitignore
// that is a symlink (it warns and ignores it). A .gitignore inside a ".git"
// directory is never read by git and is skipped here.
//
// Rules of .git/info/exclude and of a global excludes file do not apply:
// the repository is fresh and the model user's home holds no
// core.excludesFile nor $HOME/.config/git/ignore.
func (b *Builder) AddIgnoreFile(dir string, content []byte) error {
	dir, base, skip, err := b.rulesDir(dir)
	if err != nil || skip {
		return err
	}
	if _, ok := b.ignores[dir]; ok {
		return fmt.Errorf("ignore rules of %q added twice", dir)
	}
	b.ignores[dir] = parseIgnore(base, content)
	return nil
}

// rulesDir checks the directory of a .gitignore or .gitattributes file and
// returns it ("" at the root) and its prefix ("dir/"); skip is set inside a
// ".git" directory, where git never reads them.
func (b *Builder) rulesDir(dir string) (_, base string, skip bool, err error) {
	if b.sealed {
		return "", "", false, errSealed
	}
	if dir == "." || dir == "" {
		return "", "", false, nil
	}
	if err := checkPath(dir); err != nil {
		return "", "", false, err
	}
	return dir, dir + "/", hasGitComponent(dir), nil
}

// AddAttributesFile adds the .gitattributes file in dir (relative to the
// repository root; "" or "." is the root), whose line-ending attributes
// (text, eol, crlf and the macros that set them, binary among them) decide
// whether AddFile stores a file with LF endings, as `git add` does. As for
// AddIgnoreFile, only a regular file counts and one inside a ".git"
// directory is skipped.
func (b *Builder) AddAttributesFile(dir string, content []byte) error {
	dir, base, skip, err := b.rulesDir(dir)
	if err != nil || skip {
		return err
	}
	if _, ok := b.attrs[dir]; ok {
		return fmt.Errorf("attributes of %q added twice", dir)
	}
	b.attrs[dir] = parseAttributes(base, content, b.macros)
	return nil
}

// Ignored reports whether `git add -A` leaves path (relative to the
// repository root) out: because a .gitignore rule excludes it or one of its
// directories (a file cannot be re-included from an excluded directory), or
// because one of its components is ".git" (git never looks inside, so a
// submodule's .git file is left out too). isDir says whether path is a
// directory; a symlink is not one, whatever it points to.
//
// Ignored reports false for a ".git" file at the root, so that AddFile can
// refuse it with ErrGitFileAtRoot.
func (b *Builder) Ignored(path string, isDir bool) bool {
	b.sealed = true
	if checkPath(path) != nil {
		return false
	}
	if hasGitComponent(path) {
		return !(path == ".git" && !isDir)
	}
	if parent := parentDir(path); parent != "" && b.dirExcluded(parent) {
		return true
	}
	return b.excluded(path, isDir)
}

// dirExcluded reports whether dir or a directory above it is excluded.
func (b *Builder) dirExcluded(dir string) bool {
	if v, ok := b.dirIgnored[dir]; ok {
		return v
	}
	v := false
	if parent := parentDir(dir); parent != "" {
		v = b.dirExcluded(parent)
	}
	if !v {
		v = b.excluded(dir, true)
	}
	b.dirIgnored[dir] = v
	return v
}

// excluded applies the .gitignore files of path's directories, deepest
// first: the deepest file with a matching rule decides, and within a file
// the last matching rule.
func (b *Builder) excluded(path string, isDir bool) bool {
	dir := parentDir(path)
	for {
		if l := b.ignores[dir]; l != nil {
			if p := l.lastMatch(path, isDir); p != nil {
				return !p.negative
			}
		}
		if dir == "" {
			return false
		}
		dir = parentDir(dir)
	}
}

// parentDir returns the directory of p, "" at the root.
func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// AddFile adds the regular file at path (relative to the repository root)
// with the given tar mode bits and size, reading its content from r exactly
// once. The owner's executable bit (0100) makes it 100755, as git records
// it with core.fileMode; group and other bits do not count. A path that Ignored reports is skipped without reading r.
// It returns an error wrapping ErrInvalidPath or ErrGitFileAtRoot where
// `git add -A` or `git init` would fail, and an error when r does not hold
// size bytes.
func (b *Builder) AddFile(path string, mode int64, size int64, r io.Reader) error {
	m := uint32(modeFile)
	if mode&0o100 != 0 {
		m = modeExec
	}
	return b.add(path, m, size, r)
}

// AddSymlink adds a symbolic link at path pointing to target. Git stores
// the target as the content of a blob. A path that Ignored reports is
// skipped.
func (b *Builder) AddSymlink(path, target string) error {
	return b.add(path, modeSymlink, int64(len(target)), strings.NewReader(target))
}

func (b *Builder) add(p string, mode uint32, size int64, r io.Reader) error {
	if b.finished {
		return errors.New("adding a file after Finish")
	}
	if err := checkPath(p); err != nil {
		return err
	}
	if p == ".git" {
		return fmt.Errorf("adding %q: %w: git cannot create a repository there", p, ErrGitFileAtRoot)
	}
	if size < 0 {
		return fmt.Errorf("adding %q: negative size %d", p, size)
	}
	if b.Ignored(p, false) {
		return nil
	}
	if !verifyPath(p, mode == modeSymlink) {
		return fmt.Errorf("adding %q: %w", p, ErrInvalidPath)
	}
	action := crlfKeep
	if mode != modeSymlink {
		action = b.crlfActionOf(p)
	}
	var stats *textStats
	if action != crlfKeep {
		stats = &textStats{}
	}
	id, off, n, err := b.spool.addBlob(size, r, stats)
	if err != nil {
		return fmt.Errorf("adding %q: %w", p, err)
	}
	blobSize := size
	if stats != nil && stats.convert(action) {
		// The content is only known to need converting once it is read:
		// read it back from the spool, without its CRs, as a new blob.
		// The first one stays in the spool, unreferenced.
		blobSize = size - stats.crlf
		if id, off, n, err = b.spool.reAdd(off, n, blobSize); err != nil {
			return fmt.Errorf("adding %q with LF line endings: %w", p, err)
		}
	}
	if err := b.blobs.addBlob(blobRec{id: id, size: blobSize, off: off, n: n}); err != nil {
		return fmt.Errorf("writing object records: %w", err)
	}
	if err := b.files.addFile(fileEntry{path: p, mode: mode, size: size, id: id}); err != nil {
		return fmt.Errorf("writing file records: %w", err)
	}
	for d := parentDir(p); d != "" && !b.dirs[d]; d = parentDir(d) {
		b.dirs[d] = true
	}
	return nil
}

// blobRec is a blob whose zlib stream is in the spool.
type blobRec struct {
	id           objectID
	size, off, n int64
}

// Finish writes the commit, the pack, its idx and the index, and returns
// the tar entries of the repository: ".git" and everything in it, names
// relative to the repository root (the caller prefixes SOURCE_DIR), sorted
// by name so that a directory comes before its content, owned 1000:1000,
// directories 0755, files 0644 and the pack files 0444 as git makes them,
// modified at the commit time. The entries' content stays readable until
// Close. treeID and commitID are the hex object names.
//
// A tree with no file to add still gets its commit, of the empty tree.
// A path added twice, or added as a file with files below it, is an error
// here rather than in AddFile: the files wait on disk until Finish.
func (b *Builder) Finish(ctx context.Context) (entries []oci.Entry, treeID, commitID string, err error) {
	if b.finished {
		return nil, "", "", errors.New("finishing the repository twice")
	}
	b.finished = true
	b.sealed = true
	if err := b.spool.w.Flush(); err != nil {
		return nil, "", "", fmt.Errorf("writing object spool: %w", err)
	}

	files, err := b.files.allFiles()
	if err != nil {
		return nil, "", "", fmt.Errorf("reading file records: %w", err)
	}
	slices.SortFunc(files, func(a, c fileEntry) int { return strings.Compare(a.path, c.path) })
	for i, f := range files {
		if i > 0 && files[i-1].path == f.path {
			return nil, "", "", fmt.Errorf("adding %q: added twice", f.path)
		}
		if b.dirs[f.path] {
			return nil, "", "", fmt.Errorf("adding %q: it is a file and a directory", f.path)
		}
	}
	c, err := newMemCompressor(b.o.compression)
	if err != nil {
		return nil, "", "", err
	}
	c.spill = b.spool
	root, trees, err := buildTrees(files, c)
	if err != nil {
		return nil, "", "", fmt.Errorf("building trees: %w", err)
	}
	commit, commitObj, err := b.commit(c, root.id)
	if err != nil {
		return nil, "", "", err
	}
	// The index is written before the blob records are read, and the
	// file records let go: for 200,000 files both took 25 MB at once.
	if _, _, err := b.writeFile("index", func(w io.Writer) (objectID, []packed, error) {
		return objectID{}, nil, writeIndex(w, files)
	}); err != nil {
		return nil, "", "", fmt.Errorf("writing index: %w", err)
	}
	files = nil

	// Pack order: the commit, the trees, then the blobs by id.
	objs := []*object{commitObj}
	objs = append(objs, trees...)
	if err := b.spool.w.Flush(); err != nil {
		return nil, "", "", fmt.Errorf("writing object spool: %w", err)
	}
	blobs, err := b.blobs.blobs()
	if err != nil {
		return nil, "", "", fmt.Errorf("reading object records: %w", err)
	}
	slices.SortFunc(blobs, func(a, c blobRec) int { return bytes.Compare(a.id[:], c.id[:]) })
	// Files of the same content gave the same blob: one copy goes in.
	blobs = slices.CompactFunc(blobs, func(a, c blobRec) bool { return a.id == c.id })

	packSum, packedObjs, err := b.writeFile("pack", func(w io.Writer) (objectID, []packed, error) {
		return writePack(ctx, w, b.spool.f, objs, blobs)
	})
	if err != nil {
		return nil, "", "", fmt.Errorf("writing pack: %w", err)
	}
	if _, _, err := b.writeFile("idx", func(w io.Writer) (objectID, []packed, error) {
		return objectID{}, nil, writeIdx(w, packedObjs, packSum)
	}); err != nil {
		return nil, "", "", fmt.Errorf("writing pack index: %w", err)
	}
	// The blobs now live in the pack.
	b.spool.f.Close()
	os.Remove(b.spool.f.Name())

	entries = b.entries(packSum, commit)
	return entries, root.id.String(), commit.String(), nil
}

// commit builds the commit object of tree.
func (b *Builder) commit(c *memCompressor, tree objectID) (objectID, *object, error) {
	ident := b.ident()
	data := fmt.Sprintf("tree %s\nauthor %s\ncommitter %s\n\n%s\n", tree, ident, ident, b.o.message)
	o, err := c.hashObject(typeCommit, []byte(data))
	if err != nil {
		return objectID{}, nil, fmt.Errorf("building commit: %w", err)
	}
	return o.id, o, nil
}

// ident is "Name <email> seconds +0000", as in commits and reflogs.
func (b *Builder) ident() string {
	return fmt.Sprintf("%s <%s> %d +0000", b.o.name, b.o.email, b.o.when.Unix())
}

// writeFile writes one file of the temporary directory through write.
func (b *Builder) writeFile(name string, write func(io.Writer) (objectID, []packed, error)) (objectID, []packed, error) {
	f, err := os.Create(filepath.Join(b.dir, name))
	if err != nil {
		return objectID{}, nil, err
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	sum, p, err := write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return sum, p, err
}

// entries lists the repository's tar entries.
func (b *Builder) entries(packSum, commit objectID) []oci.Entry {
	mtime := time.Unix(b.o.when.Unix(), 0).UTC()
	var out []oci.Entry
	dirs := map[string]bool{}
	var addDir func(name string)
	addDir = func(name string) {
		if name == "." || dirs[name] {
			return
		}
		addDir(path.Dir(name))
		dirs[name] = true
		out = append(out, oci.Entry{Header: &tar.Header{
			Typeflag: tar.TypeDir, Name: name, Mode: 0o755,
			Uid: ownerUID, Gid: ownerGID, ModTime: mtime,
		}})
	}
	addMem := func(name string, content string) {
		addDir(path.Dir(name))
		out = append(out, oci.Entry{
			Header: &tar.Header{
				Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(content)),
				Uid: ownerUID, Gid: ownerGID, ModTime: mtime,
			},
			Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(content)), nil },
		})
	}
	addTmp := func(name, tmp string, mode int64) {
		addDir(path.Dir(name))
		file := filepath.Join(b.dir, tmp)
		var size int64
		if fi, err := os.Stat(file); err == nil {
			size = fi.Size()
		}
		out = append(out, oci.Entry{
			Header: &tar.Header{
				Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: size,
				Uid: ownerUID, Gid: ownerGID, ModTime: mtime,
			},
			Open: func() (io.ReadCloser, error) { return os.Open(file) },
		})
	}

	ref := "refs/heads/" + b.o.branch
	reflog := fmt.Sprintf("%s %s %s\tcommit (initial): %s\n",
		strings.Repeat("0", 40), commit, b.ident(), firstLine(b.o.message))
	addMem(".git/HEAD", "ref: "+ref+"\n")
	addMem(".git/config", repoConfig)
	addTmp(".git/index", "index", 0o644)
	addMem(".git/logs/HEAD", reflog)
	addMem(".git/logs/"+ref, reflog)
	addDir(".git/objects/info")
	name := ".git/objects/pack/pack-" + packSum.String()
	addTmp(name+".idx", "idx", 0o444)
	addTmp(name+".pack", "pack", 0o444)
	addMem(".git/"+ref, commit.String()+"\n")
	addDir(".git/refs/tags")
	sort.Slice(out, func(i, j int) bool { return out[i].Header.Name < out[j].Header.Name })
	return out
}

// firstLine is the subject of a commit message, as reflogs record it.
func firstLine(msg string) string {
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		return msg[:i]
	}
	return msg
}

// Close removes the Builder's temporary files. The entries of Finish cannot
// be read afterwards.
func (b *Builder) Close() error {
	b.spool.f.Close()
	b.files.close()
	b.blobs.close()
	return os.RemoveAll(b.dir)
}
