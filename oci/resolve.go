package oci

import (
	"fmt"
	"strings"
)

// PathEntry is what ResolveInRoot needs to know of one path component.
type PathEntry struct {
	// Exists is false for a name the tree lacks.
	Exists bool
	// Dir is true for a directory; Link is a symlink's target and
	// IsLink true for a symlink.
	Dir    bool
	IsLink bool
	Link   string
}

// Tree is a file tree that ResolveInRoot walks one component at a time.
// H is the tree's handle of a node (a *node, a relative path, ...).
type Tree[H any] interface {
	// Child returns the child name of the directory parent. A missing
	// child is PathEntry{} with no error; an error stops the resolution.
	Child(parent H, name string) (H, PathEntry, error)
}

// NotDirError is a path component that exists but is no directory, with
// more components after it.
type NotDirError struct{ Path string }

func (e *NotDirError) Error() string { return fmt.Sprintf("%q: %s", e.Path, errNotDir) }

// Unwrap makes errors.Is(err, errNotDir) hold.
func (e *NotDirError) Unwrap() error { return errNotDir }

// ResolveInRoot walks the slash-separated path p from root, following
// symlinks in every component (and in the last one too when followLast),
// inside the root: an absolute target starts again at the root and ".."
// at the root stays there (or fails with escape when escape is not nil),
// like the kernel inside a chroot, BuildKit's fs.RootPath and
// github.com/moby/sys/symlink.FollowSymlinkInScope. A missing component
// does not stop the walk: what follows is resolved lexically below it.
//
// It returns the resolved path's components, the handle and PathEntry of the
// last one (Exists false when the path does not exist). It fails on more
// than 255 links, on a non-directory followed by more components
// (*NotDirError), and on a resolved path beyond PATH_MAX, in time linear
// in the length of what it walks: the oci view, the agent's build context
// and the agent image's layers share it, so that a symlink means the same
// thing wherever ssebench follows one.
func ResolveInRoot[H any](t Tree[H], root H, p string, followLast bool, escape error) ([]string, H, PathEntry, error) {
	var zero H
	names := []string{}
	handles := []H{root}
	entries := []PathEntry{{Exists: true, Dir: true}}
	links, length := 0, 0 // length of "/" + strings.Join(names, "/"), less one
	rest := p
	for rest != "" {
		var c string
		c, rest, _ = strings.Cut(rest, "/")
		switch c {
		case "", ".":
			continue
		case "..":
			if len(names) == 0 {
				if escape != nil {
					return nil, zero, PathEntry{}, escape
				}
				continue
			}
			length -= 1 + len(names[len(names)-1])
			names = names[:len(names)-1]
			handles = handles[:len(handles)-1]
			entries = entries[:len(entries)-1]
			continue
		}
		cur, ce := handles[len(handles)-1], entries[len(entries)-1]
		var next H
		var ne PathEntry
		if ce.Exists {
			if !ce.Dir {
				return nil, zero, PathEntry{}, &NotDirError{Path: strings.Join(names, "/")}
			}
			var err error
			if next, ne, err = t.Child(cur, c); err != nil {
				return nil, zero, PathEntry{}, err
			}
		}
		if ne.Exists && ne.IsLink && (rest != "" || followLast) {
			links++
			if links > maxSymlinks {
				return nil, zero, PathEntry{}, errTooManyLinks
			}
			if strings.HasPrefix(ne.Link, "/") {
				names, handles, entries, length = names[:0], handles[:1], entries[:1], 0
			}
			if rest != "" {
				rest = ne.Link + "/" + rest
			} else {
				rest = ne.Link
			}
			continue
		}
		names = append(names, c)
		handles = append(handles, next)
		entries = append(entries, ne)
		if length += 1 + len(c); length >= PathMax {
			// Through symlinks a short name can lead anywhere deep; no
			// runtime goes there, and a deeper tree would cost memory
			// quadratic in its depth.
			return nil, zero, PathEntry{}, errNameTooLong
		}
	}
	return names, handles[len(handles)-1], entries[len(entries)-1], nil
}
