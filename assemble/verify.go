package assemble

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
)

// Failure is one check of Verify that an image does not pass.
type Failure struct {
	// Check names the rule, e.g. "mode" or "accounts".
	Check string
	// Path is the file the failure is about, absolute, or "" for the config.
	Path string
	// Msg says what was found and what was expected.
	Msg string
}

func (f Failure) String() string {
	if f.Path == "" {
		return fmt.Sprintf("%s: %s", f.Check, f.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", f.Check, f.Path, f.Msg)
}

// Verify checks a tool image against the contract of SPEC.md sections 4 and
// 12 without running it: modes and owners of the key paths, the accounts,
// other-writable entries, SOURCE_DIR owned by model with a one-commit
// repository, and the entrypoint. sourceDir "" means the SOURCE_DIR the
// image's manifest records (AnnotationSourceDir).
//
// It returns the failed checks; the error is for images it cannot read.
func Verify(ctx context.Context, img v1.Image, sourceDir string) ([]Failure, error) {
	if sourceDir == "" {
		m, err := img.Manifest()
		if err != nil {
			return nil, fmt.Errorf("reading the manifest: %w", err)
		}
		sourceDir = m.Annotations[AnnotationSourceDir]
		if sourceDir == "" {
			return nil, fmt.Errorf("the image does not record its SOURCE_DIR (annotation %s): pass --source", AnnotationSourceDir)
		}
	}
	src := strings.TrimPrefix(path.Clean("/"+sourceDir), "/")
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("reading the layers: %w", err)
	}
	view, err := (*Facts)(nil).View(ctx, layers)
	if err != nil {
		return nil, err
	}
	v := &verifier{view: view}

	if !slices.Equal(cf.Config.Entrypoint, []string{runtimebin.Entrypoint}) {
		v.fail("entrypoint", "", "ENTRYPOINT is %q, want [%q]", cf.Config.Entrypoint, runtimebin.Entrypoint)
	}
	if n, ok := v.node("entrypoint", strings.TrimPrefix(runtimebin.Entrypoint, "/")); ok {
		switch {
		case n.Header.Typeflag != tar.TypeReg:
			v.fail("entrypoint", "/"+n.Path, "not a regular file")
		case n.Header.Mode&0o111 == 0:
			v.fail("entrypoint", "/"+n.Path, "not executable (mode %04o)", n.Header.Mode)
		case n.Header.Uid != 0:
			v.fail("entrypoint", "/"+n.Path, "owned by uid %d, want root", n.Header.Uid)
		}
	}
	v.dir(taskDir, 0o700, 0, 0)
	v.dir(stateDir, 0o700, 0, 0)
	v.dir(modelHome, 0o755, modelUID, modelGID)
	if n, ok := v.node("mode", repoDir); ok && (!n.Header.IsDir() || n.Header.Mode&0o777 != 0o700) {
		v.fail("mode", "/"+repoDir, "%s, want a directory with mode 0700", describe(n))
	}

	// Every entry: no other-write bit outside sticky directories; inside
	// SOURCE_DIR, owned by model; no .git directory but the new one.
	var gitDirs []string
	view.Walk(func(n oci.Node) error {
		h := n.Header
		sticky := h.IsDir() && h.Mode&0o1000 != 0
		if h.Typeflag != tar.TypeSymlink && !sticky && h.Mode&0o002 != 0 {
			v.fail("other-write", "/"+n.Path, "mode %04o lets every user write it", h.Mode)
		}
		if under(n.Path, src) {
			if h.Uid != modelUID || h.Gid != modelGID {
				v.fail("owner", "/"+n.Path, "owned by %d:%d, want %d:%d", h.Uid, h.Gid, modelUID, modelGID)
			}
			if h.IsDir() && path.Base(n.Path) == ".git" {
				gitDirs = append(gitDirs, n.Path)
			}
		}
		return nil
	})
	if _, ok := v.node("source", src); ok {
		want := src + "/.git"
		for _, g := range gitDirs {
			if g != want {
				v.fail("git", "/"+g, "a .git directory other than SOURCE_DIR's own: it may hold history")
			}
		}
		if !slices.Contains(gitDirs, want) {
			v.fail("git", "/"+want, "missing: SOURCE_DIR has no repository")
		} else if err := v.oneCommit(ctx, layers, want); err != nil {
			v.fail("git", "/"+want, "%v", err)
		}
	}
	if err := v.accounts(ctx, layers); err != nil {
		return nil, err
	}
	return v.failures, nil
}

type verifier struct {
	view     *oci.View
	failures []Failure
}

func (v *verifier) fail(check, p, format string, args ...any) {
	v.failures = append(v.failures, Failure{Check: check, Path: p, Msg: fmt.Sprintf(format, args...)})
}

func (v *verifier) node(check, p string) (oci.Node, bool) {
	n, ok := v.view.Lookup(p)
	if !ok {
		v.fail(check, "/"+p, "missing")
	}
	return n, ok
}

func describe(n oci.Node) string {
	kind := "a file"
	switch n.Header.Typeflag {
	case tar.TypeDir:
		kind = "a directory"
	case tar.TypeSymlink:
		kind = "a symlink"
	}
	return fmt.Sprintf("%s with mode %04o owned by %d:%d", kind, n.Header.Mode, n.Header.Uid, n.Header.Gid)
}

func (v *verifier) dir(p string, mode int64, uid, gid int) {
	n, ok := v.node("mode", p)
	if !ok {
		return
	}
	if !n.Header.IsDir() || n.Header.Mode&0o7777 != mode || n.Header.Uid != uid || n.Header.Gid != gid {
		v.fail("mode", "/"+p, "%s, want a directory with mode %04o owned by %d:%d", describe(n), mode, uid, gid)
	}
}

// accounts checks the model and sse-runner accounts.
func (v *verifier) accounts(ctx context.Context, layers []v1.Layer) error {
	var nodes []oci.Node
	for _, p := range []string{"etc/passwd", "etc/group"} {
		if n, ok := v.node("accounts", p); ok && n.Header.Typeflag == tar.TypeReg {
			nodes = append(nodes, n)
		}
	}
	files, err := (*Facts)(nil).ReadSmall(ctx, layers, nodes)
	if err != nil {
		return err
	}
	users := map[string]bool{}
	for _, f := range lines(files["etc/passwd"]) {
		if len(f) < 7 {
			continue
		}
		users[f[0]] = true
		switch {
		case f[0] == "model":
			if f[2] != "1000" || f[3] != "1000" || f[5] != "/home/model" || f[6] != "/bin/bash" {
				v.fail("accounts", "/etc/passwd", "model is %q, want model:x:1000:1000::/home/model:/bin/bash", strings.Join(f, ":"))
			}
		case f[2] == "1000":
			v.fail("accounts", "/etc/passwd", "user %q also has uid 1000", f[0])
		}
	}
	for _, u := range []string{"model", "sse-runner"} {
		if !users[u] {
			v.fail("accounts", "/etc/passwd", "no user %s", u)
		}
	}
	for _, f := range lines(files["etc/group"]) {
		if len(f) < 4 {
			continue
		}
		if f[0] != "model" && f[2] == "1000" {
			v.fail("accounts", "/etc/group", "group %q also has gid 1000", f[0])
		}
		for _, m := range strings.Split(f[3], ",") {
			if m == "model" || m == "sse-runner" {
				v.fail("accounts", "/etc/group", "%s is a member of group %q: it must have no supplementary groups", m, f[0])
			}
		}
	}
	return nil
}

func lines(b []byte) [][]string {
	var out [][]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, strings.Split(l, ":"))
		}
	}
	return out
}

// oneCommit checks that HEAD of the repository at gitDir names a commit
// without parents. It reads loose objects and (non-delta) packed ones, as
// a fresh repository has them.
func (v *verifier) oneCommit(ctx context.Context, layers []v1.Layer, gitDir string) error {
	facts := (*Facts)(nil)
	read := func(p string) ([]byte, error) {
		n, ok := v.view.Resolve(p)
		if !ok || n.Header.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("/%s is missing", p)
		}
		m, err := facts.ReadSmall(ctx, layers, []oci.Node{n})
		if err != nil {
			return nil, err
		}
		return m[n.Path], nil
	}
	head, err := read(gitDir + "/HEAD")
	if err != nil {
		return err
	}
	id := strings.TrimSpace(string(head))
	if ref, ok := strings.CutPrefix(id, "ref: "); ok {
		b, err := read(gitDir + "/" + ref)
		if err != nil {
			return fmt.Errorf("HEAD names %s, which is missing", ref)
		}
		id = strings.TrimSpace(string(b))
	}
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != 20 {
		return fmt.Errorf("HEAD is %q, not a commit id", id)
	}
	commit, err := v.object(ctx, layers, gitDir, id, raw, read)
	if err != nil {
		return fmt.Errorf("reading commit %s: %w", id, err)
	}
	for _, l := range strings.Split(string(commit), "\n") {
		if l == "" {
			break
		}
		if strings.HasPrefix(l, "parent ") {
			return fmt.Errorf("commit %s has a parent: the history must be one commit", id)
		}
	}
	return nil
}

// object returns the content of the commit object id.
func (v *verifier) object(ctx context.Context, layers []v1.Layer, gitDir, id string, raw []byte, read func(string) ([]byte, error)) ([]byte, error) {
	if b, err := read(gitDir + "/objects/" + id[:2] + "/" + id[2:]); err == nil {
		zr, err := zlib.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(zr)
		if err != nil {
			return nil, err
		}
		hdr, body, ok := bytes.Cut(data, []byte{0})
		if !ok || !bytes.HasPrefix(hdr, []byte("commit ")) {
			return nil, errors.New("not a commit")
		}
		return body, nil
	}
	var found []byte
	var packErr error = errors.New("not found in loose objects or packs")
	v.view.Walk(func(n oci.Node) error {
		if !strings.HasPrefix(n.Path, gitDir+"/objects/pack/") || !strings.HasSuffix(n.Path, ".idx") || found != nil {
			return nil
		}
		idx, err := read(n.Path)
		if err != nil {
			return nil
		}
		off, ok := idxOffset(idx, raw)
		if !ok {
			return nil
		}
		pn, ok := v.view.Resolve(strings.TrimSuffix(n.Path, ".idx") + ".pack")
		if !ok {
			packErr = fmt.Errorf("/%s has no pack", n.Path)
			return nil
		}
		packErr = oci.ReadFiles(ctx, layers, []oci.Node{pn}, func(_ oci.Node, r io.Reader) error {
			if _, err := io.CopyN(io.Discard, r, off); err != nil {
				return err
			}
			br := bufio.NewReader(r)
			c, err := br.ReadByte()
			if err != nil {
				return err
			}
			if typ := (c >> 4) & 7; typ != 1 {
				return fmt.Errorf("packed as type %d, not a whole commit", typ)
			}
			for c&0x80 != 0 {
				if c, err = br.ReadByte(); err != nil {
					return err
				}
			}
			zr, err := zlib.NewReader(br)
			if err != nil {
				return err
			}
			found, err = io.ReadAll(io.LimitReader(zr, 1<<20))
			return err
		})
		return nil
	})
	if found != nil {
		return found, nil
	}
	return nil, packErr
}

// idxOffset finds id in a version 2 pack index.
func idxOffset(idx, id []byte) (int64, bool) {
	if len(idx) < 8+256*4 || !bytes.Equal(idx[:4], []byte{0xff, 't', 'O', 'c'}) || binary.BigEndian.Uint32(idx[4:8]) != 2 {
		return 0, false
	}
	fan := idx[8 : 8+256*4]
	n := int(binary.BigEndian.Uint32(fan[255*4:]))
	names := 8 + 256*4
	if len(idx) < names+n*(20+4+4) {
		return 0, false
	}
	// Names are sorted: binary search.
	k := sort.Search(n, func(k int) bool { return bytes.Compare(idx[names+k*20:names+k*20+20], id) >= 0 })
	if k == n || !bytes.Equal(idx[names+k*20:names+k*20+20], id) {
		return 0, false
	}
	o := binary.BigEndian.Uint32(idx[names+n*20+n*4+k*4:])
	if o&0x80000000 != 0 {
		return 0, false // a large offset: not in a fresh repository's pack
	}
	return int64(o), true
}
