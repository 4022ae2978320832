package entrypoint

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/sserun"
)

// A snapshot is the one reading of the agent's work that a run reports and
// grades (SPEC.md §17): taken once, after the agent phase, by root, with
// none of the agent's repository configuration honoured. final.patch is
// the change from the buggy commit to what `git add -A` sees in the tree,
// and the graded tree is the pristine tree (/ssebench-repo, which the agent
// never reached) with exactly that change applied. So the patch a user
// reads is what was graded, and nothing the agent configured in its
// repository (a clean filter, a diff driver, an include, a hook) runs.
type snapshot struct {
	dir    string // root-only: the buggy commit's repository, the index, the graded tree
	gitDir string // a copy of SOURCE_DIR/.git taken before the agent ran
	base   string // the buggy commit
	git    string // git's path, found on the image's PATH
	path   string // the image's PATH, for git's own helpers
	// caps bound what take reads of the agent's tree (zero fields: the
	// defaults), and timeout the whole of take (0: the default,
	// contract.SnapshotTimeout).
	caps    contract.TreeCaps
	timeout time.Duration
	// notes are what take found that a reader of the result should
	// know: paths git would not add, nested repositories left out.
	notes []string
}

// snapshotAttributes override, for every path, every attribute a
// .gitattributes of the agent's could set: $GIT_DIR/info/attributes comes
// before the tree's own files. Without them `* text eol=crlf` would make
// the patch and the graded bytes differ, and `* filter=x` would ask for a
// driver (which, with no configuration of the agent's, git would not find
// anyway).
const snapshotAttributes = "* !text !eol !crlf !filter !ident !diff !merge !working-tree-encoding !whitespace !export-ignore !export-subst\n"

// keepBase copies the buggy commit's repository out of the agent's reach,
// before the agent runs: the agent could later rewrite its objects, so
// that the base of the patch says what it likes. It returns nil, after
// saying why, when there is nothing to keep (no SOURCE_DIR, no git, no
// buggy commit); the run then reports the patch as the agent's repository
// sees it and grades SOURCE_DIR, as an image without a pristine tree must.
func (e *entrypoint) keepBase(sourceDir, base string, note func(string, ...any)) *snapshot {
	if sourceDir == "" || base == "" {
		return nil
	}
	imagePath := os.Getenv("PATH")
	git, err := exec.LookPath("git")
	if err != nil {
		return nil // writePatch says git is missing
	}
	if _, err := os.Stat(e.pristine); err != nil {
		note("no pristine tree at %s: final.patch is read from the agent's repository and SOURCE_DIR is graded as it is", e.pristine)
		return nil
	}
	dir, err := os.MkdirTemp(e.env.WorkDir, "ssebench-snapshot-")
	if err != nil {
		note("keeping the buggy commit: %v", err)
		return nil
	}
	s := &snapshot{dir: dir, gitDir: filepath.Join(dir, ".git"), base: base, git: git, path: imagePath}
	if err := s.keep(sourceDir); err != nil {
		note("keeping the buggy commit: %v", err)
		s.remove()
		return nil
	}
	return s
}

// keep copies sourceDir/.git and replaces what in it could run or steer
// git: the configuration, hooks, alternates and attributes.
func (s *snapshot) keep(sourceDir string) error {
	if err := sserun.CopyTree(sourceDir, s.dir, ".git", sserun.CopyOptions{UID: os.Getuid(), GID: os.Getgid()}); err != nil {
		return err
	}
	for _, p := range []string{"hooks", "info", filepath.Join("objects", "info", "alternates")} {
		if err := os.RemoveAll(filepath.Join(s.gitDir, p)); err != nil {
			return err
		}
	}
	if err := os.Mkdir(filepath.Join(s.gitDir, "info"), 0o700); err != nil {
		return err
	}
	files := map[string]string{
		filepath.Join(s.gitDir, "config"):             "[core]\n\trepositoryformatversion = 0\n\tbare = false\n",
		filepath.Join(s.gitDir, "info", "attributes"): snapshotAttributes,
		filepath.Join(s.gitDir, "info", "exclude"):    "",
		filepath.Join(s.dir, "gitconfig"):             "[safe]\n\tdirectory = *\n",
	}
	for p, body := range files {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			return err
		}
	}
	return nil
}

func (s *snapshot) remove() {
	if s != nil {
		_ = os.RemoveAll(s.dir)
	}
}

// gitEnv is git's whole environment: nothing of the agent's (no GIT_*
// variable, no HOME, no configuration but ours).
func (s *snapshot) gitEnv(workTree, index string) []string {
	env := []string{
		"PATH=" + s.path, "HOME=" + s.dir, "LC_ALL=C",
		"GIT_DIR=" + s.gitDir,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + filepath.Join(s.dir, "gitconfig"),
		"GIT_ATTR_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "GIT_NO_REPLACE_OBJECTS=1",
	}
	if workTree != "" {
		env = append(env, "GIT_WORK_TREE="+workTree)
	}
	if index != "" {
		env = append(env, "GIT_INDEX_FILE="+index)
	}
	return env
}

// run runs git as root (the agent's processes are gone by now) with the
// snapshot's environment, stdout to out.
func (s *snapshot) run(ctx context.Context, workTree, index string, out io.Writer, args ...string) error {
	return runGit(ctx, &sserun.Process{
		Args: append([]string{s.git,
			"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
			"-c", "core.autocrlf=false", "-c", "core.safecrlf=false", "-c", "core.symlinks=true", "-c", "core.filemode=true",
		}, args...),
		Dir:    s.dir,
		Env:    s.gitEnv(workTree, index),
		Output: out,
	}, args[0])
}

// take reads sourceDir once: it writes the patch from the buggy commit to
// what `git add -A` sees there (untracked files included, ignored ones
// not) to patch, and returns the graded tree: pristine (the original tree,
// without its .git directories) with that change applied, except on the
// task's protected paths (test files, test data, vendored code: SPEC.md
// §17.1). There the graded tree keeps the pristine version of each path
// the agent changed that protected.Protects (an added one is left out, a
// deleted one stays), and dropped lists those paths, sorted as git sorts
// them, for result.json's dropped_paths. The patch is unchanged: it shows
// everything the agent did. A nil protected protects nothing.
//
// Before git reads a byte of the tree, the tree is checked against the
// caps (treecaps.go), and take as a whole has a deadline: past either,
// the error is a *tooLargeError, the run's integrity verdict. A path git
// refuses to add (a ".GIT" directory, a name Windows or macOS would take
// for ".git") and a nested repository are left out of the patch and of
// the graded tree, with a note: what the agent leaves in its tree must
// not stop its run from being graded.
func (s *snapshot) take(ctx context.Context, sourceDir, pristine string, protected *contract.Globs, patch io.Writer) (tree string, dropped []string, err error) {
	timeout := cmp.Or(s.timeout, contract.SnapshotTimeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		// The agent's tree is all that makes the snapshot slow: past its
		// deadline (and not stopped by the caller) the tree is too large.
		if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && context.Cause(ctx) == context.DeadlineExceeded {
			err = &tooLargeError{what: fmt.Sprintf("not read within %s", timeout), detail: err.Error()}
		}
	}()
	index := filepath.Join(s.dir, "index")
	if err := s.run(ctx, sourceDir, index, nil, "read-tree", s.base); err != nil {
		return "", nil, err
	}
	var listing bytes.Buffer
	if err := s.run(ctx, "", "", &listing, "ls-tree", "-r", "-l", "-z", s.base); err != nil {
		return "", nil, err
	}
	base, err := parseLsTree(listing.Bytes())
	if err != nil {
		return "", nil, err
	}
	listing = bytes.Buffer{}
	root, err := os.OpenRoot(sourceDir)
	if err != nil {
		return "", nil, err
	}
	tc := newTreeCheck(s.caps, base)
	err = tc.check(ctx, root, func(ctx context.Context, w io.Writer) error {
		return s.run(ctx, sourceDir, index, w, "ls-files", "-z", "-o", "--exclude-standard")
	})
	root.Close()
	if err != nil {
		return "", nil, err
	}
	if len(tc.nested) > 0 {
		s.notes = append(s.notes, fmt.Sprintf("nested git repositories are left out of %s and of the graded tree: %s", contract.PatchFile, joinCut(tc.nested, 10)))
	}
	// --ignore-errors: a path git refuses is left out, the rest added;
	// git then says so and exits 1.
	err = s.run(ctx, sourceDir, index, nil, append([]string{"add", "-A", "--ignore-errors"}, excludeNested(tc.nested)...)...)
	if ge := (*gitError)(nil); errors.As(err, &ge) && ge.code == 1 && ctx.Err() == nil {
		s.notes = append(s.notes, fmt.Sprintf("git refused some paths of the agent's tree; they are left out of %s and of the graded tree: %s", contract.PatchFile, ge.msg))
	} else if err != nil {
		return "", nil, err
	}
	var out bytes.Buffer
	if err := s.run(ctx, sourceDir, index, &out, "write-tree"); err != nil {
		return "", nil, err
	}
	agentTree := strings.TrimSpace(out.String())
	// --no-renames keeps the patch usable by patch(1); --binary keeps
	// binary changes.
	if err := s.run(ctx, "", "", patch, "diff", "--binary", "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv", s.base, agentTree); err != nil {
		return "", nil, err
	}
	graded := filepath.Join(s.dir, "tree")
	if err := os.Mkdir(graded, 0o755); err != nil {
		return "", nil, err
	}
	if err := sserun.CopyTree(pristine, graded, ".", sserun.CopyOptions{UID: os.Getuid(), GID: os.Getgid(), SkipGitDirs: true}); err != nil {
		return "", nil, err
	}
	dropped, err = s.apply(ctx, graded, agentTree, protected)
	if err != nil {
		return "", nil, fmt.Errorf("applying the agent's change to the pristine tree: %w", err)
	}
	return graded, dropped, nil
}

// change is one line of `git diff-tree -r -z --no-renames`.
type change struct {
	oldMode, newMode, newID, status, path string
}

// errInTheWay is write's answer when a directory the graded tree keeps
// for its protected content stands where the agent put a file.
var errInTheWay = errors.New("a directory holding protected paths is in the way")

// apply writes into graded every change from the buggy commit to tree:
// removals first, then new and changed files with git's modes (a changed
// file that keeps its git mode keeps the pristine file's permissions).
// graded is written through an os.Root, so no path of the agent's choosing
// leaves it, whatever symlinks the pristine tree holds.
//
// A change to a path protected.Protects is not applied, and is returned
// in dropped (git's order); so is a file the agent put where the pristine
// tree has a directory that still holds protected paths (the agent
// replaced a package holding tests by a file): the directory and its
// protected content stay.
func (s *snapshot) apply(ctx context.Context, graded, tree string, protected *contract.Globs) (dropped []string, err error) {
	var raw bytes.Buffer
	if err := s.run(ctx, "", "", &raw, "diff-tree", "-r", "-z", "--no-renames", s.base, tree); err != nil {
		return nil, err
	}
	all, err := parseRawDiff(raw.Bytes())
	if err != nil {
		return nil, err
	}
	var changes []change
	for _, c := range all {
		if protected.Protects(c.path) {
			dropped = append(dropped, c.path)
		} else {
			changes = append(changes, c)
		}
	}
	root, err := os.OpenRoot(graded)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	for _, c := range changes {
		if c.status == "D" || c.status == "T" || (c.status == "M" && c.oldMode != c.newMode) {
			if err := root.RemoveAll(c.path); err != nil {
				return nil, err
			}
		}
	}
	for _, c := range changes {
		if c.status == "D" {
			continue
		}
		err := s.write(ctx, root, c, protected)
		switch {
		case errors.Is(err, errInTheWay):
			dropped = append(dropped, c.path)
		case err != nil:
			return nil, fmt.Errorf("%s: %w", c.path, err)
		}
	}
	// In git's order: diff-tree's, byte-wise (an in-the-way file came
	// after the protected paths of its directory).
	slices.Sort(dropped)
	return dropped, nil
}

// clearDir makes room for a file at name where the graded tree has a
// directory: the pristine directory the agent replaced by a file, of which
// the removals left empty folders and the files git ignores. It refuses
// with errInTheWay when the directory holds a protected path, which the
// graded tree keeps.
func clearDir(root *os.Root, name string, protected *contract.Globs) error {
	fi, err := root.Lstat(name)
	if err != nil || !fi.IsDir() {
		return nil
	}
	if !protected.Empty() {
		found := false
		err := fs.WalkDir(root.FS(), name, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if protected.Match(p) {
				found = true
				return fs.SkipAll
			}
			return nil
		})
		if err != nil {
			return err
		}
		if found {
			return errInTheWay
		}
	}
	return root.RemoveAll(name)
}

// write puts one new or changed entry of the agent's tree into root.
func (s *snapshot) write(ctx context.Context, root *os.Root, c change, protected *contract.Globs) error {
	if dir := path.Dir(c.path); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if c.newMode != "160000" {
		if err := clearDir(root, c.path, protected); err != nil {
			return err
		}
	}
	switch c.newMode {
	case "160000":
		return nil // a gitlink: the patch carries no files of it either
	case "120000":
		var target bytes.Buffer
		if err := s.run(ctx, "", "", &target, "cat-file", "blob", c.newID); err != nil {
			return err
		}
		_ = root.Remove(c.path)
		return root.Symlink(target.String(), c.path)
	case "100644", "100755":
	default:
		return fmt.Errorf("git mode %s is not a file, a symlink or a gitlink", c.newMode)
	}
	mode := os.FileMode(0o644)
	if c.newMode == "100755" {
		mode = 0o755
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if c.status == "M" && c.oldMode == c.newMode {
		if fi, err := root.Lstat(c.path); err == nil && fi.Mode().IsRegular() {
			mode = fi.Mode().Perm()
		}
	}
	f, err := root.OpenFile(c.path, flags, mode)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	err = s.run(ctx, "", "", w, "cat-file", "blob", c.newID)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// parseRawDiff reads `git diff-tree -r -z` output: for each change
// ":oldmode newmode oldid newid status\0path\0".
func parseRawDiff(b []byte) ([]change, error) {
	var out []change
	fields := bytes.Split(bytes.TrimSuffix(b, []byte{0}), []byte{0})
	if len(b) == 0 {
		return nil, nil
	}
	for i := 0; i < len(fields); i += 2 {
		head := string(fields[i])
		if i+1 >= len(fields) || !strings.HasPrefix(head, ":") {
			return nil, fmt.Errorf("reading git diff-tree: unexpected %q", head)
		}
		f := strings.Fields(strings.TrimPrefix(head, ":"))
		if len(f) != 5 {
			return nil, fmt.Errorf("reading git diff-tree: unexpected %q", head)
		}
		p := string(fields[i+1])
		if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") {
			return nil, fmt.Errorf("reading git diff-tree: a path %q outside the tree", p)
		}
		out = append(out, change{oldMode: f[0], newMode: f[1], newID: f[3], status: f[4][:1], path: p})
	}
	return out, nil
}
