package assemble

import (
	"archive/tar"
	"context"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
)

// linkedPaths must be what they are, not symlinks: a link there lets
// whoever controls its target (model, when it points into SOURCE_DIR,
// /home/model or /tmp) choose the accounts or read the task.
var linkedPaths = []string{"etc/passwd", "etc/shadow", "etc/group", "etc/gshadow", taskDir, repoDir, stateDir, modelHome, strings.TrimPrefix(runtimebin.Entrypoint, "/")}

// links reports the linkedPaths that are symlinks or are reached through
// one.
func (v *verifier) links() {
	for _, p := range linkedPaths {
		if n, ok := v.view.Lookup(p); ok {
			if n.Header.Typeflag == tar.TypeSymlink {
				v.fail("link", "/"+p, "a symlink to %q%s", n.Header.Linkname, v.controls(n.Header.Linkname, p))
			}
			continue
		}
		// A parent is a symlink (Lookup does not follow links).
		parts := strings.Split(p, "/")
		for i := 1; i < len(parts); i++ {
			q := strings.Join(parts[:i], "/")
			if n, ok := v.view.Lookup(q); ok && n.Header.Typeflag == tar.TypeSymlink {
				v.fail("link", "/"+p, "reached through the symlink /%s to %q%s", q, n.Header.Linkname, v.controls(n.Header.Linkname, q))
				break
			}
		}
	}
}

// controls says whether model can write the target of a link at p (or a
// directory on the way to it).
func (v *verifier) controls(target, p string) string {
	if !path.IsAbs(target) {
		target = path.Join("/", path.Dir(p), target)
	}
	t := strings.TrimPrefix(path.Clean(target), "/")
	if under(t, v.src) || under(t, modelHome) {
		return ", which model can write"
	}
	for d := t; d != "." && d != ""; d = path.Dir(d) {
		if n, ok := v.view.Lookup(d); ok && v.modelWrites(n) {
			return ", which model can write"
		}
	}
	return ""
}

// modelWrites reports whether model can write the entry n: it owns it, or
// its group or every user may write it.
func (v *verifier) modelWrites(n oci.Node) bool {
	h := n.Header
	if h.Typeflag == tar.TypeSymlink {
		return false
	}
	return h.Uid == modelUID || (h.Gid == modelGID && h.Mode&0o020 != 0) || h.Mode&0o002 != 0
}

// setuidTools are the setuid and setgid programs of a Debian or Ubuntu base
// (shadow-utils, util-linux, sudo, openssh, dbus, iputils, fuse, cron):
// root-owned, they are what a system needs, and anything else is reported.
var setuidTools = map[string]bool{
	"chage": true, "chfn": true, "chsh": true, "expiry": true, "gpasswd": true, "mount": true,
	"newgrp": true, "passwd": true, "su": true, "umount": true, "unix_chkpwd": true, "sudo": true,
	"sudoedit": true, "pkexec": true, "ping": true, "fusermount": true, "fusermount3": true,
	"ssh-agent": true, "ssh-keysign": true, "dbus-daemon-launch-helper": true, "crontab": true,
	"wall": true, "write": true, "bsd-write": true, "utempter": true, "newuidmap": true,
	"newgidmap": true, "pam_extrausers_chkpwd": true, "pam_timestamp_check": true, "dotlockfile": true,
	"plocate": true, "mlocate": true, "at": true, "Xorg.wrap": true, "polkit-agent-helper-1": true,
}

// caseUsers returns the users (uid → name) of the case image: of the
// layers below the tool image's own (AnnotationToolLayers); none when the
// image does not record them. It runs before the whole image's view is
// made, so that the two views are never in memory at once (for a case of
// 200,000 files the case's view is 10 MB).
func caseUsers(ctx context.Context, img v1.Image, layers []v1.Layer, idxs []*oci.LayerIndex) (map[int]string, error) {
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	first, _, _ := strings.Cut(m.Annotations[AnnotationToolLayers], ",")
	i := slices.IndexFunc(m.Layers, func(d v1.Descriptor) bool { return d.Digest.String() == first })
	if first == "" || i <= 0 || i > len(idxs) {
		return nil, nil
	}
	lower, err := oci.Merge(idxs[:i])
	if err != nil {
		return nil, err
	}
	n, ok := lower.Lookup("etc/passwd")
	if !ok || n.Header.Typeflag != tar.TypeReg {
		return nil, nil
	}
	files, err := (*Facts)(nil).ReadSmall(ctx, layers[:i], []oci.Node{n})
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, f := range lines(files["etc/passwd"]) {
		if len(f) < 7 {
			continue
		}
		if id, err := strconv.Atoi(f[2]); err == nil {
			out[id] = f[0]
		}
	}
	return out, nil
}

// deletedUsers returns the case image's users that the accounts change
// deleted (other than 1000, reported anyway).
func (v *verifier) deletedUsers(caseUsers map[int]string) map[int]string {
	out := map[int]string{}
	for id, name := range caseUsers {
		if _, still := v.users[id]; !still && id != modelUID {
			out[id] = name
		}
	}
	return out
}

// owners reports, outside SOURCE_DIR and /home/model, entries model owns
// or its group may write, entries owned by a deleted user's uid, and
// setuid or setgid programs a system does not need.
func (v *verifier) owners(deleted map[int]string) {
	v.view.Walk(func(n oci.Node) error {
		h := n.Header
		if n.Implicit || under(n.Path, v.src) || under(n.Path, modelHome) {
			return nil
		}
		p := "/" + n.Path
		switch {
		case h.Uid == modelUID:
			v.fail("owner", p, "owned by uid %d (model) outside SOURCE_DIR: model can change it", modelUID)
		case h.Gid == modelGID && h.Mode&0o020 != 0 && h.Typeflag != tar.TypeSymlink:
			v.fail("owner", p, "group %d (model) may write it (mode %04o)", modelGID, h.Mode)
		case deleted[h.Uid] != "":
			v.fail("owner", p, "owned by uid %d of the deleted user %q: an account made later would own it", h.Uid, deleted[h.Uid])
		}
		// Under the root-only directories model cannot run anything.
		hidden := under(n.Path, taskDir) || under(n.Path, repoDir) || under(n.Path, stateDir)
		if h.Typeflag == tar.TypeReg && h.Mode&0o6000 != 0 && h.Uid != modelUID && !hidden {
			if !setuidTools[path.Base(n.Path)] || h.Uid != 0 {
				v.fail("setuid", p, "a setuid or setgid program (mode %04o, owner %d:%d) no tool image needs: remove it, or its mode bits, in the case image", h.Mode, h.Uid, h.Gid)
			}
		}
		return nil
	})
}

// path fails every directory of PATH, and every directory under a
// toolchain variable (GOPATH, GOMODCACHE, CARGO_HOME, …), that model can
// write, sticky or not: a program model plants there runs in the grader's
// checks, which take PATH and the toolchains from the image (SPEC.md §12
// and §17). A relative PATH entry fails too: a check runs in SOURCE_DIR.
func (v *verifier) path(env []string) {
	writable := func(n oci.Node) bool {
		return v.modelWrites(n) || under(n.Path, v.src) || under(n.Path, modelHome)
	}
	// creatable says, of a directory p that does not exist, where model
	// could make it: a PATH entry or toolchain directory model creates
	// holds what model puts there.
	creatable := func(p string) (string, bool) {
		anc, at, found := landing(v.view, p)
		for _, d := range append([]string{v.src, modelHome}, scratchDirs...) {
			if under(p, d) || under(at, d) {
				return "/" + d, true
			}
		}
		if found && writable(anc) {
			return "/" + anc.Path, true
		}
		return "", false
	}
	for _, kv := range env {
		k, val, _ := strings.Cut(kv, "=")
		switch {
		case k == "PATH":
			for i, d := range strings.Split(val, ":") {
				if !path.IsAbs(d) {
					v.fail("path", "", "entry %d of PATH is %q, not an absolute path: a check would run programs from the directory it runs in", i+1, d)
					continue
				}
				n, ok := v.view.Resolve(strings.TrimPrefix(path.Clean(d), "/"))
				if !ok {
					if in, yes := creatable(strings.TrimPrefix(path.Clean(d), "/")); yes {
						v.fail("path", path.Clean(d), "does not exist, and model can create it in %s: entry %d of PATH", in, i+1)
					}
					continue
				}
				if n.Header.IsDir() && writable(n) {
					v.fail("path", "/"+n.Path, "model can add programs to this directory, entry %d of PATH (mode %04o, owner %d:%d)", i+1, n.Header.Mode, n.Header.Uid, n.Header.Gid)
				}
			}
		case isToolchainVar(k):
			for _, d := range strings.Split(val, ":") {
				if !path.IsAbs(d) {
					continue
				}
				root, ok := v.view.Resolve(strings.TrimPrefix(path.Clean(d), "/"))
				if !ok {
					if in, yes := creatable(strings.TrimPrefix(path.Clean(d), "/")); yes {
						v.fail("path", path.Clean(d), "does not exist, and model can create it in %s: %s", in, k)
					}
					continue
				}
				if !root.Header.IsDir() {
					continue
				}
				if writable(root) {
					v.fail("path", "/"+root.Path, "model can write %s (mode %04o, owner %d:%d)", k, root.Header.Mode, root.Header.Uid, root.Header.Gid)
					continue
				}
				v.view.Walk(func(n oci.Node) error {
					if !under(n.Path, root.Path) {
						if n.Header.IsDir() && !under(root.Path, n.Path) {
							return fs.SkipDir // neither the tree nor on the way to it
						}
						return nil
					}
					if n.Header.IsDir() && n.Path != root.Path && !n.Implicit && writable(n) {
						v.fail("path", "/"+n.Path, "model can add files to this directory under %s (mode %04o, owner %d:%d)", k, n.Header.Mode, n.Header.Uid, n.Header.Gid)
					}
					return nil
				})
			}
		}
	}
}
