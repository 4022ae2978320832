package gitrepo

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidPath is returned for a path that git refuses to put in its
// index (for example a component ".GIT" or "git~1"): `git add -A` fails on
// such a tree, so the repository cannot be made.
var ErrInvalidPath = errors.New("path not allowed in a git repository")

// ErrGitFileAtRoot is returned when the repository root itself holds a
// ".git" file (a submodule or worktree checkout): `git init` fails there
// with "not a git repository", so the repository cannot be made.
var ErrGitFileAtRoot = errors.New("the source directory holds a .git file")

// checkPath checks that p is a clean relative slash-separated path: no
// leading or trailing "/", no empty, "." or ".." components.
func checkPath(p string) error {
	if p == "" {
		return fmt.Errorf("empty path")
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." {
			return fmt.Errorf("path %q is not a clean relative path", p)
		}
	}
	return nil
}

// hasGitComponent reports whether a component of p is exactly ".git":
// git's directory walk never looks at such an entry (so a submodule's .git
// file is not added), and never descends into it.
func hasGitComponent(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if c == ".git" {
			return true
		}
	}
	return false
}

// verifyPath reports whether git 2.39 on Linux accepts p in its index, as
// read-cache.c's verify_path does with core.protectNTFS (the default) and
// without core.protectHFS (the default off macOS). p is already clean.
func verifyPath(p string, symlink bool) bool {
	comps := strings.Split(p, "/")
	for i, c := range comps {
		if isNTFSDotGit(c) {
			return false
		}
		// git runs this check on the rest of the path, which only
		// matches when c is the last component.
		if symlink && i == len(comps)-1 && isNTFSDotGitmodules(c) {
			return false
		}
		if c[0] == '.' && !verifyDotfile(c[1:], symlink) {
			return false
		}
	}
	return true
}

// verifyDotfile checks a component that starts with "." (given without
// it): ".git" in any case is refused, and so is a symlink named
// ".gitmodules" in any case.
func verifyDotfile(rest string, symlink bool) bool {
	if len(rest) >= 3 && strings.EqualFold(rest[:3], "git") {
		if len(rest) == 3 {
			return false
		}
		if symlink && strings.EqualFold(rest[3:], "modules") {
			return false
		}
	}
	return true
}

// isNTFSDotGit reports names that NTFS would resolve to ".git": ".git" or
// "git~1" in any case, followed only by dots and spaces, or by ':' or '\'.
func isNTFSDotGit(name string) bool {
	var i int
	switch {
	case len(name) >= 4 && name[0] == '.' && strings.EqualFold(name[1:4], "git"):
		i = 4
	case len(name) >= 5 && strings.EqualFold(name[:3], "git") && name[3:5] == "~1":
		i = 5
	default:
		return false
	}
	for ; i < len(name); i++ {
		switch name[i] {
		case '\\', ':':
			return true
		case '.', ' ':
		default:
			return false
		}
	}
	return true
}

// isNTFSDotGitmodules reports names that NTFS would resolve to
// ".gitmodules", including its 8.3 short names ("gitmod~1", "gi7eba~1").
func isNTFSDotGitmodules(name string) bool {
	const long, short = "gitmodules", "gi7eba"
	onlySpacesAndPeriods := func(i int) bool {
		for ; i < len(name); i++ {
			switch name[i] {
			case ':':
				return true
			case ' ', '.':
			default:
				return false
			}
		}
		return true
	}
	if len(name) >= 1+len(long) && name[0] == '.' && strings.EqualFold(name[1:1+len(long)], long) {
		return onlySpacesAndPeriods(1 + len(long))
	}
	if len(name) >= 8 && strings.EqualFold(name[:6], long[:6]) && name[6] == '~' && name[7] >= '1' && name[7] <= '4' {
		return onlySpacesAndPeriods(8)
	}
	sawTilde := false
	i := 0
	for ; i < 8; i++ {
		if i >= len(name) {
			return false
		}
		c := name[i]
		switch {
		case sawTilde:
			if c < '0' || c > '9' {
				return false
			}
		case c == '~':
			i++
			if i >= len(name) || name[i] < '1' || name[i] > '9' {
				return false
			}
			sawTilde = true
		case i >= 6:
			return false
		case c&0x80 != 0:
			return false
		default:
			if lower(c) != short[i] {
				return false
			}
		}
	}
	return onlySpacesAndPeriods(i)
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
