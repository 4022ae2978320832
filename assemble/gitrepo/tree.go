package gitrepo

import (
	"bytes"
	"sort"
	"strings"
)

// Git file modes, as written in trees and the index.
const (
	modeFile    = 0o100644
	modeExec    = 0o100755
	modeSymlink = 0o120000
	modeTree    = 0o40000
)

// fileEntry is one path of the commit: 48 bytes in this order, where
// mode before size took 56 (Finish holds one per file).
type fileEntry struct {
	path string
	size int64
	id   objectID
	mode uint32
}

// treeEntry is one line of a tree object.
type treeEntry struct {
	name string
	mode uint32
	id   objectID
}

// sortKey is how git orders tree entries: by name, a tree's name compared
// as if it ended with "/".
func (e treeEntry) sortKey() string {
	if e.mode == modeTree {
		return e.name + "/"
	}
	return e.name
}

// buildTrees computes the tree objects of files (sorted by path) and
// returns the root tree followed by every tree, children first, each once.
func buildTrees(files []fileEntry, c *memCompressor) (*object, []*object, error) {
	var trees []*object
	seen := map[objectID]bool{}
	// build makes the tree of files[i:j], all of which start with prefix.
	var build func(prefix string, fs []fileEntry) (*object, error)
	build = func(prefix string, fs []fileEntry) (*object, error) {
		var entries []treeEntry
		for i := 0; i < len(fs); {
			rest := fs[i].path[len(prefix):]
			slash := strings.IndexByte(rest, '/')
			if slash < 0 {
				entries = append(entries, treeEntry{name: rest, mode: fs[i].mode, id: fs[i].id})
				i++
				continue
			}
			// Files are sorted by path, so everything under this
			// directory is contiguous.
			dir := rest[:slash+1]
			j := i + 1
			for j < len(fs) && strings.HasPrefix(fs[j].path[len(prefix):], dir) {
				j++
			}
			sub, err := build(prefix+dir, fs[i:j])
			if err != nil {
				return nil, err
			}
			entries = append(entries, treeEntry{name: rest[:slash], mode: modeTree, id: sub.id})
			i = j
		}
		sort.Slice(entries, func(a, b int) bool { return entries[a].sortKey() < entries[b].sortKey() })
		var buf bytes.Buffer
		for _, e := range entries {
			buf.WriteString(modeString(e.mode))
			buf.WriteByte(' ')
			buf.WriteString(e.name)
			buf.WriteByte(0)
			buf.Write(e.id[:])
		}
		o, err := c.hashObject(typeTree, buf.Bytes())
		if err != nil {
			return nil, err
		}
		if !seen[o.id] {
			seen[o.id] = true
			trees = append(trees, o)
		}
		return o, nil
	}
	root, err := build("", files)
	if err != nil {
		return nil, nil, err
	}
	return root, trees, nil
}

// modeString is the octal mode as a tree writes it, without leading zeros.
func modeString(m uint32) string {
	switch m {
	case modeExec:
		return "100755"
	case modeSymlink:
		return "120000"
	case modeTree:
		return "40000"
	}
	return "100644"
}
