package assemble

import (
	"fmt"
	"path"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/oci"
)

// toolchainVars name the toolchains and dependency caches a check runs or
// reads. Whatever model can add under one of them, a check may pick up: a
// new file in a sticky GOPATH/bin shadows a compiler, an empty module
// directory in a writable module cache substitutes a dependency. So the
// tool layer takes the other-write bit off every directory under them,
// sticky or not (SPEC.md §12), where step 4 of section 4 alone keeps it on
// sticky directories.
var toolchainVars = []string{"GOROOT", "GOPATH", "GOMODCACHE", "CARGO_HOME", "RUSTUP_HOME"}

// scratchDirs are the directories every user must be able to write. The
// tool layer cannot lock one, so a PATH or a toolchain variable that names
// one is refused.
var scratchDirs = []string{"tmp", "var/tmp", "dev/shm", "run/lock"}

// guard is what the tool layer makes unwritable by model and sse-runner
// beyond step 4: the directories of the image's PATH (each directory
// itself: its files lose other-write in step 4 already) and the trees the
// toolchain variables name. Paths are resolved, without the leading slash.
type guard struct {
	pathDirs map[string]bool
	trees    []string
}

// locks reports whether the directory at p keeps no other-write bit even
// when it is sticky.
func (g guard) locks(p string) bool {
	if g.pathDirs[p] {
		return true
	}
	for _, t := range g.trees {
		if under(p, t) {
			return true
		}
	}
	return false
}

// guardDirs reads PATH and the toolchain variables of env against view. It
// refuses, in one line that says what to change, what the tool layer cannot
// make safe: a relative PATH entry (a check runs in SOURCE_DIR, model's), or
// an entry or a toolchain directory inside SOURCE_DIR, model's home or a
// scratch directory every user writes, whether or not it exists yet (model
// would create it), or one that does not exist yet inside a sticky
// directory every user writes.
func guardDirs(view *oci.View, env []string, sourceDir, caseRef string) (guard, error) {
	g := guard{pathDirs: map[string]bool{}}
	modelDirs := append([]string{sourceDir, modelHome}, scratchDirs...)
	check := func(what, dir string) (string, bool, error) {
		clean := strings.TrimPrefix(path.Clean(dir), "/")
		n, ok := view.Resolve(clean)
		if ok && !n.Header.IsDir() {
			return "", false, nil // a file: nothing to plant into; its parent is checked as any directory
		}
		// A directory that does not exist yet counts where it would
		// be made: model creates it, and what it puts there runs.
		at, anc, found := clean, oci.Node{}, false
		if ok {
			at = n.Path
		} else {
			anc, at, found = landing(view, clean)
		}
		yet := ","
		if !ok {
			yet = ", which does not exist yet,"
		}
		for _, bad := range modelDirs {
			if under(clean, bad) || under(at, bad) {
				return "", false, fmt.Errorf("%s of %s is %s%s inside /%s, which model can write: a program or module planted there would run in the grader's checks; set it to a root-owned directory in the case image", what, caseRef, dir, yet, bad)
			}
		}
		if !ok {
			// The tool layer can lock only what exists: the
			// directory it would be made in must not let model in.
			if found && anc.Header.Mode&0o1002 == 0o1002 {
				return "", false, fmt.Errorf("%s of %s is %s%s inside /%s, which every user can write (mode %04o): model could create it and plant a program the grader's checks would run; create it root-owned in the case image or set another directory", what, caseRef, dir, yet, anc.Path, anc.Header.Mode)
			}
			return "", false, nil
		}
		return n.Path, true, nil
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH":
			for i, d := range strings.Split(v, ":") {
				if !path.IsAbs(d) {
					return guard{}, fmt.Errorf("entry %d of the PATH of %s is %q, not an absolute path: a check would look for programs in the directory it runs in, which model can write; remove it from PATH in the case image", i+1, caseRef, d)
				}
				p, ok, err := check(fmt.Sprintf("entry %d of the PATH", i+1), d)
				if err != nil {
					return guard{}, err
				}
				if ok {
					g.pathDirs[p] = true
				}
			}
		case isToolchainVar(k):
			for _, d := range strings.Split(v, ":") {
				if !path.IsAbs(d) {
					continue // not a directory the image names; the toolchain ignores it too
				}
				p, ok, err := check(k, d)
				if err != nil {
					return guard{}, err
				}
				if ok {
					g.trees = append(g.trees, p)
				}
			}
		}
	}
	return g, nil
}

func isToolchainVar(k string) bool {
	for _, v := range toolchainVars {
		if k == v {
			return true
		}
	}
	return false
}

// landing finds where the directory p (clean, relative to the root), which
// does not exist in view, would be made: its deepest existing ancestor
// (symlinks followed; found is false when that is the root) and the path
// p would then have. A PATH entry /opt/link/bin, with /opt/link a symlink
// to /tmp, lands at tmp/bin.
func landing(view *oci.View, p string) (anc oci.Node, at string, found bool) {
	parts := strings.Split(p, "/")
	for i := len(parts) - 1; i > 0; i-- {
		if n, ok := view.Resolve(strings.Join(parts[:i], "/")); ok {
			if !n.Header.IsDir() {
				return oci.Node{}, p, false // under a file: it cannot be made
			}
			return n, path.Join(append([]string{n.Path}, parts[i:]...)...), true
		}
	}
	return oci.Node{}, p, false
}
