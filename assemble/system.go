package assemble

import (
	"archive/tar"
	"context"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/42-b3yond-6ug/ssebench/assemble/accounts"
	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/oci"
)

// accountFiles are read from the case image and rewritten.
var accountFiles = []string{"etc/passwd", "etc/group", "etc/shadow", "etc/gshadow", "etc/subuid", "etc/subgid", "etc/login.defs"}

// cacheDirs returns the directories named by CARGO_HOME, RUSTUP_HOME and
// GOPATH in env that exist in view, as resolved paths.
func cacheDirs(view *oci.View, env []string) []string {
	var dirs []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		var paths []string
		switch k {
		case "CARGO_HOME", "RUSTUP_HOME":
			paths = []string{v}
		case "GOPATH":
			paths = strings.Split(v, ":")
		}
		for _, p := range paths {
			if !path.IsAbs(p) {
				continue
			}
			if n, ok := view.Resolve(p); ok && n.Header.IsDir() {
				dirs = append(dirs, n.Path)
			}
		}
	}
	sort.Strings(dirs)
	return dirs
}

// mode is the mode of an entry at dest after steps 4 and 5 of SPEC.md
// section 4: no other-write bit except on sticky directories and symlinks,
// and inside a shared cache o+r on files and o+rx on directories. A sticky
// directory of PATH or under a toolchain variable loses it too (§12): a
// new file there is enough to shadow what a check runs.
func (b *toolBuild) mode(dest string, h *oci.Header) int64 {
	m := h.Mode
	switch h.Typeflag {
	case tar.TypeSymlink:
		return m
	case tar.TypeDir:
		if m&0o1000 == 0 || b.guard.locks(dest) {
			m &^= 0o002
		}
	default:
		m &^= 0o002
	}
	for _, c := range b.caches {
		if !under(dest, c) {
			continue
		}
		switch h.Typeflag {
		case tar.TypeReg:
			m |= 0o004
		case tar.TypeDir:
			m |= 0o005
		}
	}
	return m
}

// private reports whether the entry at rel (not followed if a symlink) is
// a regular file or a directory that uid owns, with everything under it.
func (b *toolBuild) private(rel string, uid int) bool {
	n, ok := b.view.Lookup(rel)
	if !ok || n.Header.Uid != uid || (n.Header.Typeflag != tar.TypeReg && !n.Header.IsDir()) {
		return false
	}
	if !n.Header.IsDir() {
		return true
	}
	mine := true
	b.view.Walk(func(c oci.Node) error {
		if mine && under(c.Path, rel) && c.Header.Uid != uid {
			mine = false
		}
		return nil
	})
	return mine
}

// accountOwner returns the standard owner and mode of the account file p:
// passwd, group, subuid and subgid root's, 0644; shadow and gshadow root's,
// 0640, in the case's group when it is a system group (shadow, 42 on
// Debian; model is a member of none once the accounts are rewritten), else
// root's group.
func accountOwner(p string, caseGID int) (uid, gid int, mode int64) {
	switch p {
	case "etc/shadow", "etc/gshadow":
		if caseGID > 0 && caseGID < contract.ModelGID {
			return 0, caseGID, 0o640
		}
		return 0, 0, 0o640
	}
	return 0, 0, 0o644
}

func whiteout(p string, when time.Time) *tar.Header {
	dir, base := path.Split(p)
	return &tar.Header{Typeflag: tar.TypeReg, Name: dir + ".wh." + base, Mode: 0o644, ModTime: when}
}

func opaque(dir string, when time.Time) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeReg, Name: dir + "/.wh..wh..opq", Mode: 0o644, ModTime: when}
}

func dirHeader(p string, mode int64, uid, gid int, when time.Time) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeDir, Name: p, Mode: mode, Uid: uid, Gid: gid, ModTime: when}
}

// ensureDirs returns header-only entries that make p a directory with the
// given mode and owner, creating missing parents as root 0755.
func (b *toolBuild) ensureDirs(p string, mode int64, uid, gid int) []*tar.Header {
	var hs []*tar.Header
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		parent := strings.Join(parts[:i], "/")
		if _, ok := b.view.Lookup(parent); !ok {
			hs = append(hs, dirHeader(parent, 0o755, 0, 0, b.o.when))
		}
	}
	h := dirHeader(p, mode, uid, gid, b.o.when)
	if n, ok := b.view.Lookup(p); ok && n.Header.IsDir() && !n.Implicit {
		// An existing directory keeps its time and attributes; only its
		// mode and owner change.
		h = n.Header.TarHeader(p)
		h.Mode, h.Uid, h.Gid = mode, uid, gid
	}
	return append(hs, h)
}

// accountPlan is what step 3 changes.
type accountPlan struct {
	res      *accounts.Result
	files    map[string][]byte // account files of the case image, by path
	removed  map[string]bool   // paths whited out
	headers  []*tar.Header     // whiteouts and /home/model
	contents []smallFile
}

type smallFile struct {
	hdr  *tar.Header
	data []byte
}

func (b *toolBuild) accounts(ctx context.Context) (*accountPlan, error) {
	o := b.o
	var nodes []oci.Node
	for _, p := range accountFiles {
		if l, ok := b.view.Lookup(p); ok && l.Header.Typeflag == tar.TypeSymlink {
			// Dangling or not: the target may be where model writes.
			return nil, fmt.Errorf("/%s in %s is a symlink to %q: the tool layer rewrites account files in place, so make it a regular file in the case image", p, o.caseRef, l.Header.Linkname)
		}
		n, ok := b.view.Resolve(p)
		if !ok {
			continue
		}
		if n.Header.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("/%s in %s is not a regular file: the case image's accounts cannot be rewritten", p, o.caseRef)
		}
		if n.Path != p {
			return nil, fmt.Errorf("/%s in %s is a symlink to /%s: the tool layer rewrites account files in place, so make it a regular file in the case image", p, o.caseRef, n.Path)
		}
		nodes = append(nodes, n)
	}
	data, err := o.facts.ReadSmall(ctx, b.layers, nodes)
	if err != nil {
		return nil, fmt.Errorf("reading the account files of %s: %w", o.caseRef, err)
	}
	in := accounts.Files{
		Passwd: data["etc/passwd"], Group: data["etc/group"], Shadow: data["etc/shadow"], Gshadow: data["etc/gshadow"],
		LoginDefs: data["etc/login.defs"], Subuid: data["etc/subuid"], Subgid: data["etc/subgid"],
	}
	res, err := accounts.Rewrite(in, accounts.WithDay(o.when.Unix()/86400))
	if err != nil {
		return nil, fmt.Errorf("rewriting the accounts of %s: %w", o.caseRef, err)
	}
	p := &accountPlan{res: res, files: map[string][]byte{}, removed: map[string]bool{}}
	out := map[string][]byte{
		"etc/passwd": res.Files.Passwd, "etc/group": res.Files.Group, "etc/shadow": res.Files.Shadow,
		"etc/gshadow": res.Files.Gshadow, "etc/subuid": res.Files.Subuid, "etc/subgid": res.Files.Subgid,
	}
	for _, n := range nodes {
		p.files[n.Path] = data[n.Path]
		nd, ok := out[n.Path]
		if !ok || nd == nil {
			continue // login.defs, or a file that stays as it was
		}
		h := n.Header.TarHeader(n.Path)
		// The standard owner and mode, whatever the case had: a
		// shadow that model could read (0644) or write (owned by
		// uid 1000) would give it root's hash or root itself.
		h.Uid, h.Gid, h.Mode = accountOwner(n.Path, n.Header.Gid)
		h.Uname, h.Gname = "", ""
		h.ModTime = o.when
		p.contents = append(p.contents, smallFile{hdr: h, data: nd})
	}
	sort.Slice(p.contents, func(i, j int) bool { return p.contents[i].hdr.Name < p.contents[j].hdr.Name })

	// userdel -r: a home or mail spool that exists and belongs to the
	// deleted user goes, unless the tool layer needs what is there.
	homeGone := false
	for _, r := range res.Remove {
		rel := strings.TrimPrefix(path.Clean(r.Path), "/")
		if rel == "" || under(o.sourceDir, rel) || under(rel, o.sourceDir) || under(taskDir, rel) || rel == "home" {
			continue
		}
		// Only the user's own: the path itself (a symlink is not
		// followed) and everything under it owned by the user, so a
		// uid-1000 user whose home is /etc, /usr or / takes nothing
		// of the system along.
		if !b.private(rel, r.UID) {
			continue
		}
		p.removed[rel] = true
		if rel == modelHome {
			// It is made again, empty, in the same layer.
			homeGone = true
			continue
		}
		p.headers = append(p.headers, whiteout(rel, o.when))
	}
	if homeGone {
		p.headers = append(p.headers, opaque(modelHome, o.when))
	}
	return p, nil
}
