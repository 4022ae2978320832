package entrypoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// The snapshot's git reads every byte of what it adds (a 20 GB sparse
// file is read as 20 GB of zeros, by root) and holds a changed file whole
// in memory to diff it; a tree of 300,000 new files is an index and a
// patch of 300,000 entries. So before git reads a byte, the tree is
// checked against caps a fix never reaches (contract.TreeCaps), with
// nothing but readdir and lstat: a tree past them ends its run at once
// with an integrity verdict of its own (contract.IntegrityTreeTooLarge),
// instead of holding the run for minutes and ending it "not graded", a
// verdict that reads as the machine's failure.
//
// The check is in three steps, each bounded before the next starts:
//  1. a walk of the whole tree (readdir only, ignored files included, as
//     git lists ignored directories' tops): at most walkExtraEntries
//     entries more than the buggy commit has, no path longer than
//     maxPathBytes, no .gitignore or .gitattributes (which git reads
//     whole while it lists the tree) larger than maxGitFileBytes;
//  2. every path of the buggy commit, lstat'ed: what was removed or
//     changed size;
//  3. `git ls-files -o --exclude-standard`: what git would add, untracked
//     and not ignored, lstat'ed, read as it comes and stopped at the
//     first cap.
//
// A file of the same size as in the buggy commit is not counted: git
// reads it, but no more than it reads of the pristine tree.

// Bounds of the walk, beyond the task's caps: they bound the walk itself
// and what git holds in memory while it lists the tree.
const (
	// walkExtraEntries is how many entries the tree may hold beyond the
	// buggy commit's paths, ignored ones (build output, node_modules)
	// included: far more than a build leaves, far less than what makes
	// git's listing of the tree take minutes.
	walkExtraEntries = 1_000_000
	// maxPathBytes is PATH_MAX less its NUL: git cannot open a longer
	// path either.
	maxPathBytes = 4095
	// maxGitFileBytes bounds a .gitignore or .gitattributes of the tree.
	maxGitFileBytes = 1 << 20
	// maxNested bounds nested repositories (each a directory with a
	// .git of its own), which the snapshot leaves out one by one.
	maxNested = 100
	// readDirBatch is how many entries the walk reads of a directory at
	// once: a directory of millions of entries is never held whole.
	readDirBatch = 1024
)

// tooLargeError is a tree past one of its caps: the run's integrity
// verdict.
type tooLargeError struct {
	what   string // "sparse.bin 20 GiB"
	detail string // which cap, for a note
}

func (e *tooLargeError) Error() string {
	return contract.IntegrityTreeTooLarge + ": " + e.what
}

// baseEntry is one path of the buggy commit (`git ls-tree -r -l`).
type baseEntry struct {
	mode string // 100644, 100755, 120000, 160000
	size int64  // -1 for a gitlink
}

// parseLsTree reads `git ls-tree -r -l -z` output: for each path
// "<mode> <type> <id> <size>\t<path>\0".
func parseLsTree(b []byte) (map[string]baseEntry, error) {
	out := map[string]baseEntry{}
	for _, rec := range bytes.Split(bytes.TrimSuffix(b, []byte{0}), []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		head, p, ok := bytes.Cut(rec, []byte{'\t'})
		f := strings.Fields(string(head))
		if !ok || len(f) != 4 {
			return nil, fmt.Errorf("reading git ls-tree: unexpected %q", cut(string(rec), 100))
		}
		e := baseEntry{mode: f[0], size: -1}
		if f[3] != "-" {
			n, err := strconv.ParseInt(f[3], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("reading git ls-tree: unexpected %q", cut(string(rec), 100))
			}
			e.size = n
		}
		out[string(p)] = e
	}
	return out, nil
}

// treeCheck counts what the agent changed against the caps.
type treeCheck struct {
	caps   contract.TreeCaps
	base   map[string]baseEntry
	files  int64    // changed paths
	bytes  int64    // their apparent sizes, summed
	nested []string // nested repositories, as git lists them (no slash)
	// walkExtra is walkExtraEntries but in tests.
	walkExtra int64
}

func newTreeCheck(caps contract.TreeCaps, base map[string]baseEntry) *treeCheck {
	return &treeCheck{caps: caps.WithDefaults(), base: base, walkExtra: walkExtraEntries}
}

// check runs the three steps on the tree at root; list runs `git
// ls-files -z -o --exclude-standard` on it, output to w. The error is a
// *tooLargeError when the tree is past a cap.
func (t *treeCheck) check(ctx context.Context, root *os.Root, list func(ctx context.Context, w io.Writer) error) error {
	if err := t.walk(ctx, root); err != nil {
		return err
	}
	if err := t.compareBase(root); err != nil {
		return err
	}
	return t.untracked(ctx, root, list)
}

// dirNode is a directory the walk has yet to read: its path shares its
// parent's, so a million of them cost their names, not their paths.
type dirNode struct {
	parent *dirNode
	name   string
}

func (d *dirNode) path() string {
	if d.parent == nil {
		return "."
	}
	var parts []string
	for n := d; n.parent != nil; n = n.parent {
		parts = append(parts, n.name)
	}
	slices.Reverse(parts)
	return strings.Join(parts, "/")
}

// walk is step 1.
func (t *treeCheck) walk(ctx context.Context, root *os.Root) error {
	limit := int64(len(t.base)) + t.walkExtra
	var n int64
	stack := []*dirNode{{}}
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		dir := d.path()
		f, err := root.Open(dir)
		if err != nil {
			return fmt.Errorf("reading the agent's tree: %w", err)
		}
		for {
			ents, err := f.ReadDir(readDirBatch)
			for _, e := range ents {
				if n++; n > limit {
					f.Close()
					return &tooLargeError{
						what:   fmt.Sprintf("more than %d entries", limit),
						detail: fmt.Sprintf("the tree may hold %d entries more than the buggy commit's %d paths, ignored ones included", t.walkExtra, len(t.base)),
					}
				}
				name := e.Name()
				// git never enters a directory called .git, nor lists
				// one: the repository's own, or a nested one's.
				if name == ".git" {
					continue
				}
				p := name
				if dir != "." {
					p = dir + "/" + name
				}
				if len(p) > maxPathBytes {
					f.Close()
					return &tooLargeError{what: fmt.Sprintf("a path longer than %d bytes", maxPathBytes), detail: displayPath(p)}
				}
				switch {
				case e.IsDir():
					stack = append(stack, &dirNode{parent: d, name: name})
				case e.Type().IsRegular() && (name == ".gitignore" || name == ".gitattributes"):
					fi, err := e.Info()
					if err != nil {
						continue
					}
					if b, ok := t.base[p]; fi.Size() > maxGitFileBytes && (!ok || b.size != fi.Size()) {
						f.Close()
						return &tooLargeError{
							what:   displayPath(p) + " " + contract.FormatBytes(fi.Size()),
							detail: fmt.Sprintf("git reads a %s whole while it lists the tree: at most %s", name, contract.FormatBytes(maxGitFileBytes)),
						}
					}
				}
			}
			if errors.Is(err, io.EOF) || (err == nil && len(ents) == 0) {
				break
			}
			if err != nil {
				f.Close()
				return fmt.Errorf("reading the agent's tree: %s: %w", displayPath(dir), err)
			}
			if err := ctx.Err(); err != nil {
				f.Close()
				return err
			}
		}
		f.Close()
	}
	return nil
}

// compareBase is step 2.
func (t *treeCheck) compareBase(root *os.Root) error {
	paths := make([]string, 0, len(t.base))
	for p := range t.base {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		b := t.base[p]
		if b.mode == "160000" {
			continue // a submodule: git reads no file of it
		}
		fi, err := root.Lstat(p)
		if err != nil {
			// Removed, or below something that is no longer a
			// directory: a change of no bytes.
			if err := t.add(p, -1); err != nil {
				return err
			}
			continue
		}
		link := b.mode == "120000"
		switch {
		case fi.Mode().IsRegular() && !link && fi.Size() == b.size:
		case fi.Mode()&fs.ModeSymlink != 0 && link && fi.Size() == b.size:
		case fi.IsDir():
			// What it holds is untracked: step 3 counts it.
			if err := t.add(p, -1); err != nil {
				return err
			}
		default:
			if err := t.add(p, fi.Size()); err != nil {
				return err
			}
		}
	}
	return nil
}

// untracked is step 3.
func (t *treeCheck) untracked(ctx context.Context, root *os.Root, list func(ctx context.Context, w io.Writer) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var found error
	w := &nulSplitter{max: maxPathBytes + 1, each: func(p string) {
		if found != nil {
			return
		}
		if dir, ok := strings.CutSuffix(p, "/"); ok {
			// A nested repository: git would add it as a gitlink, or
			// fail on one with no commit. The snapshot leaves it out.
			t.nested = append(t.nested, dir)
			found = t.add(dir, -1)
			if found == nil && len(t.nested) > maxNested {
				found = &tooLargeError{what: fmt.Sprintf("more than %d nested git repositories", maxNested)}
			}
		} else if fi, err := root.Lstat(p); err != nil {
			found = t.add(p, -1)
		} else {
			found = t.add(p, fi.Size())
		}
		if found != nil {
			cancel() // git stops listing: the verdict is in
		}
	}}
	err := list(ctx, w)
	if found != nil {
		return found
	}
	if w.long {
		return &tooLargeError{what: fmt.Sprintf("a path longer than %d bytes", maxPathBytes)}
	}
	return err
}

// add counts one changed path of size bytes (-1: none, as a removal).
func (t *treeCheck) add(p string, size int64) error {
	t.files++
	if t.files > t.caps.ChangedFiles {
		return &tooLargeError{
			what:   fmt.Sprintf("more than %d changed files", t.caps.ChangedFiles),
			detail: "caps.changed_files of the task's config.yaml raises the cap",
		}
	}
	if size < 0 {
		return nil
	}
	if size > t.caps.FileBytes {
		return &tooLargeError{
			what:   displayPath(p) + " " + contract.FormatBytes(size),
			detail: fmt.Sprintf("one file may be at most %s (caps.file_bytes of the task's config.yaml)", contract.FormatBytes(t.caps.FileBytes)),
		}
	}
	t.bytes += size
	if t.bytes > t.caps.ChangedBytes {
		return &tooLargeError{
			what:   fmt.Sprintf("more than %s of changed files", contract.FormatBytes(t.caps.ChangedBytes)),
			detail: "caps.changed_bytes of the task's config.yaml raises the cap",
		}
	}
	return nil
}

// nulSplitter calls each for every NUL-terminated record written to it.
// It never fails, so that the writer's process is never blocked on a
// full pipe: once the caller has its answer it kills the process, and
// the rest is read and dropped. A record longer than max is dropped and
// noted in long.
type nulSplitter struct {
	max  int
	buf  []byte
	long bool // a record was too long
	skip bool // the current record is too long: drop it to its NUL
	each func(string)
}

func (s *nulSplitter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, 0)
		end := i
		if i < 0 {
			end = len(p)
		}
		if !s.skip && len(s.buf)+end > s.max {
			s.long, s.skip = true, true
			s.buf = s.buf[:0]
		}
		if !s.skip {
			s.buf = append(s.buf, p[:end]...)
		}
		if i < 0 {
			break
		}
		if !s.skip {
			s.each(string(s.buf))
		}
		s.buf, s.skip = s.buf[:0], false
		p = p[i+1:]
	}
	return n, nil
}

// displayPath is a path of the agent's tree as a verdict shows it: as it
// is when every character is printable, else quoted; cut to 200 bytes.
// The agent names its files, and a newline or an escape sequence in a
// name must not forge a line of a report.
func displayPath(p string) string {
	p = cut(p, 200)
	if strings.IndexFunc(p, func(c rune) bool { return !unicode.IsPrint(c) || c == utf8.RuneError }) < 0 {
		return p
	}
	return strconv.Quote(p)
}

// cut shortens s to at most n bytes, on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

// excludeNested is the pathspecs of `git add -A` that leave the nested
// repositories out: only exclusions, which git reads as "everything
// but"; literal, so that no character of a name is a wildcard; from the
// top, since git runs outside the tree.
func excludeNested(nested []string) []string {
	if len(nested) == 0 {
		return nil
	}
	out := []string{"--"}
	for _, p := range nested {
		out = append(out, ":(exclude,literal,top)"+path.Clean(p))
	}
	return out
}

// joinCut joins the first n paths for a note, and says how many more.
func joinCut(paths []string, n int) string {
	var out []string
	for i, p := range paths {
		if i == n {
			out = append(out, fmt.Sprintf("and %d more", len(paths)-n))
			break
		}
		out = append(out, displayPath(p))
	}
	return strings.Join(out, ", ")
}
