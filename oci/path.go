package oci

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// errEscapes is returned by cleanName for a name that leaves the root.
var errEscapes = errors.New("path escapes the root")

// PathMax is Linux's PATH_MAX: a path, with its terminating NUL, that does
// not fit is ENAMETOOLONG, so no runtime can unpack an entry whose absolute
// path is PathMax bytes or longer. NameMax is NAME_MAX, the longest
// component.
const (
	PathMax = 4096
	NameMax = 255
)

// checkLength refuses a clean relative name whose absolute path ("/"+name)
// would not fit in PATH_MAX, or a component longer than NAME_MAX. It runs
// in time linear in len(name) and allocates nothing. what says which name
// it is ("name", "hard link target").
func checkLength(what, name string) error {
	if 1+len(name) >= PathMax {
		return fmt.Errorf("%s is %d bytes long: beyond PATH_MAX (%d), no runtime can unpack it", what, len(name), PathMax)
	}
	for len(name) > 0 {
		c, rest, _ := strings.Cut(name, "/")
		if len(c) > NameMax {
			return fmt.Errorf("%s has a component of %d bytes: beyond NAME_MAX (%d), no runtime can unpack it", what, len(c), NameMax)
		}
		name = rest
	}
	return nil
}

// shorten abbreviates a long name for messages: its first and last bytes.
func shorten(name string) string {
	const keep = 48
	if len(name) <= 2*keep+3 {
		return name
	}
	return name[:keep] + "…" + name[len(name)-keep:]
}

// cleanName normalises a tar entry name the way appliers read it: leading
// "/" and "./" are dropped and the rest is cleaned with path.Clean, so a
// trailing "/" goes too. The root itself ("", ".", "/", "./") becomes "".
// A name that still climbs above the root ("../x", "a/../../x") is an error:
// containerd would clamp it, but a layer that says so is hostile or broken.
func cleanName(name string) (string, error) {
	for {
		switch {
		case strings.HasPrefix(name, "/"):
			name = name[1:]
		case strings.HasPrefix(name, "./"):
			name = name[2:]
		default:
			name = path.Clean(name)
			switch {
			case name == ".":
				return "", nil
			case name == ".." || strings.HasPrefix(name, "../"):
				return "", errEscapes
			}
			return name, nil
		}
	}
}

// ComparePaths orders two clean relative paths component by component, the
// order in which WriteLayer emits entries and View.Walk visits nodes: a
// directory comes right before its children, so "a" < "a/b" < "a-b" (plain
// string order would put "a-b" before "a/b" because '-' < '/'). The result is
// -1, 0 or +1.
func ComparePaths(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		// A separator sorts before every other byte, as if it were NUL.
		if ca == '/' {
			return -1
		}
		if cb == '/' {
			return 1
		}
		if ca < cb {
			return -1
		}
		return 1
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}
