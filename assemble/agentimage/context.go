package agentimage

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/bzip2"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// errNotFound marks a source that is not in its context.
var errNotFound = errors.New("not found")

// contextFS is a build context as BuildKit receives it: a directory with
// the paths its .dockerignore excludes left out, and uid/gid reset to 0.
type contextFS struct {
	root string // absolute
	what string // for messages: "the build context (the agent folder)"
	pm   *patternmatcher.PatternMatcher
	// ignoreFile is the file the patterns came from, for messages.
	ignoreFile string
	// matches caches, per path, whether .dockerignore excludes it and the
	// match state its children start from.
	matches map[string]matchState
	// hasIncluded caches, per excluded directory, whether an exception
	// pattern brings back something inside it.
	hasIncluded map[string]bool
}

type matchState struct {
	excluded bool
	info     patternmatcher.MatchInfo
}

// openContext opens dir as a context; ignoreFiles are tried in order and
// the first that exists gives the exclusion patterns, as BuildKit reads
// <Dockerfile>.dockerignore before .dockerignore.
func openContext(dir, what string, ignoreFiles ...string) (*contextFS, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s %s is not a directory", what, dir)
	}
	c := &contextFS{root: abs, what: what, matches: map[string]matchState{}, hasIncluded: map[string]bool{}}
	for _, name := range ignoreFiles {
		f, err := os.Open(filepath.Join(abs, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		patterns, err := ignorefile.ReadAll(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", filepath.Join(dir, name), err)
		}
		if len(patterns) > 0 {
			if c.pm, err = patternmatcher.New(patterns); err != nil {
				return nil, fmt.Errorf("parsing %s: %w", filepath.Join(dir, name), err)
			}
			c.ignoreFile = name
		}
		break
	}
	return c, nil
}

// abs returns the path on disk of rel.
func (c *contextFS) abs(rel string) string { return filepath.Join(c.root, filepath.FromSlash(rel)) }

// match returns whether .dockerignore excludes rel, computed as fsutil's
// walker does: each path starts from its parent's match state.
func (c *contextFS) match(rel string) (matchState, error) {
	if c.pm == nil || rel == "" {
		return matchState{}, nil
	}
	if m, ok := c.matches[rel]; ok {
		return m, nil
	}
	parent, err := c.match(parentOf(rel))
	if err != nil {
		return matchState{}, err
	}
	excluded, info, err := c.pm.MatchesUsingParentResults(rel, parent.info)
	if err != nil {
		return matchState{}, fmt.Errorf("matching %s: %w", c.ignoreFile, err)
	}
	m := matchState{excluded: excluded, info: info}
	c.matches[rel] = m
	return m, nil
}

func parentOf(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return ""
}

// present tells whether rel (whose type on disk is given) reaches the
// builder: it is not excluded, or it is a directory holding something an
// exception pattern ("!keep") brings back.
func (c *contextFS) present(rel string, isDir bool) (bool, error) {
	m, err := c.match(rel)
	if err != nil || !m.excluded {
		return err == nil, err
	}
	if !isDir || !c.pm.Exclusions() {
		return false, nil
	}
	if v, ok := c.hasIncluded[rel]; ok {
		return v, nil
	}
	ents, err := os.ReadDir(c.abs(rel))
	if err != nil {
		return false, err
	}
	found := false
	for _, e := range ents {
		ok, err := c.present(path.Join(rel, e.Name()), e.IsDir())
		if err != nil {
			return false, err
		}
		if ok {
			found = true
			break
		}
	}
	c.hasIncluded[rel] = found
	return found, nil
}

// lstat returns rel's file info when it is present.
func (c *contextFS) lstat(rel string) (fs.FileInfo, error) {
	fi, err := os.Lstat(c.abs(rel))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDirSys) {
			return nil, errNotFound
		}
		return nil, err
	}
	ok, err := c.present(rel, fi.IsDir())
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w (%s excludes it)", errNotFound, c.ignoreFile)
	}
	return fi, nil
}

// readDir lists the present entries of directory rel, sorted by name.
func (c *contextFS) readDir(rel string) ([]string, error) {
	ents, err := os.ReadDir(c.abs(rel))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		child := path.Join(rel, e.Name())
		ok, err := c.present(child, e.IsDir())
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, child)
		}
	}
	return out, nil
}

// resolve follows the symlinks of rel within the context (every component,
// the last one too when followLast), as fs.RootPath does, and returns the
// real path and its info. A symlink that climbs out of the context is an
// error, where BuildKit would clamp it to the root.
func (c *contextFS) resolve(rel string, followLast bool) (string, fs.FileInfo, error) {
	names, _, _, err := oci.ResolveInRoot[string](contextTree{c}, "", rel, followLast, fmt.Errorf("a symlink leads out of %s", c.what))
	var nd *oci.NotDirError
	if errors.As(err, &nd) {
		return "", nil, fmt.Errorf("%s: not a directory", nd.Path)
	}
	if err != nil {
		return "", nil, err
	}
	real := path.Join(names...)
	if real == "" {
		fi, err := os.Stat(c.root)
		return "", fi, err
	}
	fi, err := c.lstat(real)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", real, err)
	}
	return real, fi, nil
}

// contextTree is the build context as oci.ResolveInRoot walks it: handles
// are paths relative to the context, and a missing name is an error, as
// COPY of a missing source is.
type contextTree struct{ c *contextFS }

// Child implements oci.Tree.
func (t contextTree) Child(parent, name string) (string, oci.PathEntry, error) {
	cur := path.Join(parent, name)
	fi, err := t.c.lstat(cur)
	if err != nil {
		return "", oci.PathEntry{}, fmt.Errorf("%s: %w", cur, err)
	}
	e := oci.PathEntry{Exists: true, Dir: fi.IsDir(), IsLink: fi.Mode()&fs.ModeSymlink != 0}
	if e.IsLink {
		if e.Link, err = os.Readlink(t.c.abs(cur)); err != nil {
			return "", oci.PathEntry{}, err
		}
	}
	return cur, e, nil
}

var errNotDirSys = syscall.ENOTDIR

func splitPath(p string) []string {
	var out []string
	for _, c := range strings.Split(p, "/") {
		if c != "" && c != "." {
			out = append(out, c)
		}
	}
	return out
}

// hasWildcards tells whether a source is a pattern, as BuildKit decides.
func hasWildcards(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '*', '?', '[':
			return true
		}
	}
	return false
}

// glob resolves a source pattern as fsutil's ResolveWildcards does: the
// components before the first wildcard name a directory (symlinks
// followed), which is walked in name order; a path whose remainder matches
// the rest of the pattern (filepath.Match) is a match, and a matching
// directory is not entered.
func (c *contextFS) glob(rel string) ([]string, error) {
	comps := splitPath(rel)
	i := 0
	for i < len(comps) && !hasWildcards(comps[i]) {
		i++
	}
	base, fi, err := c.resolve(path.Join(comps[:i]...), true)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, nil
	}
	pattern := path.Join(comps[i:]...)
	var out []string
	var walk func(dir, relDir string) error
	walk = func(dir, relDir string) error {
		kids, err := c.readDir(dir)
		if err != nil {
			return err
		}
		for _, k := range kids {
			r := path.Join(relDir, path.Base(k))
			fi, err := os.Lstat(c.abs(k))
			if err != nil {
				return err
			}
			if ok, _ := filepath.Match(pattern, r); ok {
				out = append(out, k)
				continue
			}
			if fi.IsDir() {
				if err := walk(k, r); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(base, ""); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// isArchive tells whether the file at p is a tar archive (plain, gzip,
// bzip2 or zstd), which ADD unpacks. An xz file counts as one too, since
// it cannot be looked into here.
func isArchive(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	magic, _ := br.Peek(6)
	var r io.Reader = br
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return false, nil
		}
		defer zr.Close()
		r = zr
	case bytes.HasPrefix(magic, []byte("BZh")):
		r = bzip2.NewReader(br)
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return false, nil
		}
		defer zr.Close()
		r = zr
	case bytes.HasPrefix(magic, []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}):
		return true, nil
	}
	_, err = tar.NewReader(r).Next()
	return err == nil, nil
}

// findArchive returns the line of the first ADD whose local source in dir
// is a tar archive, with the reason BuildKit must build it.
func (p *Plan) findArchive(dir string) (int, string) {
	ctx, err := openContext(dir, "the build context", "Dockerfile.dockerignore", ".dockerignore")
	if err != nil {
		return 0, ""
	}
	for _, in := range p.stage {
		if in.cmd != "add" || len(in.args) < 2 {
			continue
		}
		for _, src := range in.args[:len(in.args)-1] {
			rel, err := cleanSource(src)
			if err != nil || strings.Contains(src, "$") {
				continue
			}
			matches := []string{rel}
			if hasWildcards(rel) {
				if matches, err = ctx.glob(rel); err != nil {
					continue
				}
			}
			for _, m := range matches {
				real, fi, err := ctx.resolve(m, true)
				if err != nil || !fi.Mode().IsRegular() {
					continue
				}
				if ok, _ := isArchive(ctx.abs(real)); ok {
					return in.line, fmt.Sprintf("ADD unpacks the archive %s", m)
				}
			}
		}
	}
	return 0, ""
}
