package contract

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// ProtectedPaths returns the paths of a language's projects that a fix
// may not change (SPEC.md §17.1), as globs relative to SOURCE_DIR: an
// agent that edits a test, its test data, vendored code or the workspace
// file can make the checks pass without fixing anything, so the graded
// tree takes the pristine version of each (a task's tests.protected
// replaces the list). C has none: where its tests live is the project's
// choice. The caller may change the slice it gets.
func ProtectedPaths(language string) []string {
	switch language {
	case "go":
		// go.work and go.work.sum could point a module at a copy of a
		// dependency the agent wrote; vendor/ is the dependencies
		// themselves.
		return []string{"**/*_test.go", "**/testdata/**", "vendor/**", "go.work", "go.work.sum"}
	case "rust":
		return []string{"tests/**", "benches/**"}
	}
	return nil
}

// CheckGlob says what is wrong with a protected-path pattern, or returns
// nil; the message starts with the quoted pattern, as a config problem
// reads. A pattern is slash-separated and relative to SOURCE_DIR, clean
// (no empty, "." or ".." element, no trailing slash), and each element is
// a path.Match pattern or "**"; a "**" inside an element ("a**") is the
// same as "*".
func CheckGlob(pattern string) error {
	switch {
	case pattern == "":
		return errors.New("is empty")
	case pattern == ".":
		return errors.New(`"." names SOURCE_DIR itself, not a path in it`)
	case strings.HasPrefix(pattern, "/"):
		return fmt.Errorf("%q is not relative to SOURCE_DIR", pattern)
	}
	for _, seg := range strings.Split(pattern, "/") {
		switch seg {
		case "..":
			return fmt.Errorf("%q has a \"..\" element: it must name paths inside SOURCE_DIR", pattern)
		case "", ".":
			return fmt.Errorf("%q is not a clean path (use %q)", pattern, path.Clean(pattern))
		}
		// path.Match checks the whole pattern even when the name does
		// not match.
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("%q has a malformed element %q (a \"[\" without \"]\", or a trailing \"\\\")", pattern, seg)
		}
	}
	return nil
}

// Globs is a compiled list of patterns (CheckGlob) that paths relative to
// SOURCE_DIR are matched against, as doublestar matches: "*", "?" and
// character classes match within one path element, as path.Match does,
// and an element "**" matches zero or more whole elements, so that
// "**/*_test.go" matches "a_test.go" and "x/y/a_test.go", and "vendor/**"
// matches "vendor", "vendor/a/b.go" but not "vendor.go". A nil *Globs
// matches nothing.
type Globs struct {
	patterns []string
	split    [][]string
}

// CompileGlobs checks and compiles patterns; the error names every bad one.
func CompileGlobs(patterns []string) (*Globs, error) {
	g := &Globs{patterns: append([]string(nil), patterns...)}
	var errs []error
	for _, p := range patterns {
		if err := CheckGlob(p); err != nil {
			errs = append(errs, fmt.Errorf("protected path pattern %q: %w", p, err))
			continue
		}
		// Consecutive "**" are one: the matcher then never tries the
		// same split twice.
		var segs []string
		for _, s := range strings.Split(p, "/") {
			if s == "**" && len(segs) > 0 && segs[len(segs)-1] == "**" {
				continue
			}
			segs = append(segs, s)
		}
		g.split = append(g.split, segs)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return g, nil
}

// MatchGlob reports whether name matches the one pattern.
func MatchGlob(pattern, name string) (bool, error) {
	g, err := CompileGlobs([]string{pattern})
	if err != nil {
		return false, err
	}
	return g.Match(name), nil
}

// Patterns returns the patterns g was compiled from.
func (g *Globs) Patterns() []string {
	if g == nil {
		return nil
	}
	return append([]string(nil), g.patterns...)
}

// Empty reports whether g matches nothing.
func (g *Globs) Empty() bool { return g == nil || len(g.split) == 0 }

// Match reports whether name, a clean slash-separated path relative to
// SOURCE_DIR, matches one of the patterns. "." and "" match nothing.
func (g *Globs) Match(name string) bool {
	if g.Empty() || name == "" || name == "." {
		return false
	}
	segs := strings.Split(name, "/")
	for _, p := range g.split {
		if matchElems(p, segs) {
			return true
		}
	}
	return false
}

// Protects reports whether name is protected: it, or a directory above
// it, matches. A pattern that names a directory so protects what is in
// it, and a protected file that the agent turns into a directory keeps
// the agent's files out of it too.
func (g *Globs) Protects(name string) bool {
	if g.Empty() || name == "" || name == "." {
		return false
	}
	for i := 0; i <= len(name); i++ {
		if (i == len(name) || name[i] == '/') && g.Match(name[:i]) {
			return true
		}
	}
	return false
}

// MatchBelow reports whether a path below the directory dir ("." for the
// top) could match: a walk that looks for protected paths need not enter a
// directory for which it is false.
func (g *Globs) MatchBelow(dir string) bool {
	if g.Empty() {
		return false
	}
	var segs []string
	if dir != "" && dir != "." {
		segs = strings.Split(dir, "/")
	}
	for _, p := range g.split {
		// A path below dir matches when the pattern splits after an
		// element (or inside a "**") so that its head matches dir and
		// its tail something non-empty.
		for k := 0; k < len(p); k++ {
			if matchElems(p[:k], segs) {
				return true
			}
		}
		if p[len(p)-1] == "**" && matchElems(p, segs) {
			return true
		}
	}
	return false
}

// matchElems matches path elements against pattern elements, "**"
// standing for any number of elements. It is the usual wildcard matcher
// with one backtracking point (the last "**" seen): each other pattern
// element takes exactly one path element, so a later "**" can take
// whatever an earlier one would have, and the cost stays at most
// len(pat)*len(name) element matches, whatever the path.
func matchElems(pat, name []string) bool {
	pi, ni := 0, 0
	star, starNi := -1, 0
	for ni < len(name) {
		switch {
		case pi < len(pat) && pat[pi] == "**":
			star, starNi = pi, ni
			pi++
		case pi < len(pat) && matchElem(pat[pi], name[ni]):
			pi++
			ni++
		case star >= 0:
			// Let the last "**" take one more element and try again.
			starNi++
			pi, ni = star+1, starNi
		default:
			return false
		}
	}
	for pi < len(pat) && pat[pi] == "**" {
		pi++
	}
	return pi == len(pat)
}

func matchElem(pat, name string) bool {
	ok, err := path.Match(pat, name)
	return err == nil && ok
}
