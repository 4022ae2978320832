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
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/contract"
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
	// Rule is the rule of SPEC.md the check enforces, e.g. "SPEC.md §12:
	// model must not read /ssebench, /ssebench-repo or /var/lib/ssebench".
	Rule string
	// Warning is true for a finding that weakens the contract without
	// breaking it (a directory early in PATH that model can write, say):
	// it is reported, and does not fail the image.
	Warning bool
}

func (f Failure) String() string {
	s := f.Check + ": "
	if f.Path != "" {
		s += f.Path + ": "
	}
	s += f.Msg
	if f.Rule != "" {
		s += " (" + f.Rule + ")"
	}
	return s
}

// Rules of SPEC.md the checks of Verify enforce, by check.
var rules = map[string]string{
	"entrypoint":  "SPEC.md §4 step 9: the entrypoint runs the agent's CMD as model",
	"metadata":    "SPEC.md §4: the tool image is the case image plus its layers, one a runtime can pull and unpack",
	"env":         "SPEC.md §16: variables the runtime reads are set by the run, not inherited",
	"mode":        "SPEC.md §12: model must not read /ssebench, /ssebench-repo or /var/lib/ssebench",
	"link":        "SPEC.md §12: model must not read /ssebench, /ssebench-repo or /var/lib/ssebench, nor choose the accounts",
	"source":      "SPEC.md §4 step 2: SOURCE_DIR is a directory owned by model",
	"owner":       "SPEC.md §12: model must not change a toolchain a check uses",
	"other-write": "SPEC.md §12: no other-writable files outside sticky directories",
	"setuid":      "SPEC.md §12: model must not become another user",
	"path":        "SPEC.md §12: model must not change a toolchain a check uses",
	"git":         "SPEC.md §12: one commit only, every earlier .git gone",
	"accounts":    "SPEC.md §12: no uid-1000 leftovers, no other root, no passwordless account, no supplementary groups",
	"task-files":  "SPEC.md §12: nothing model can write is read or run by the grader",
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
	// The indexes are kept: the layers below the tool's own are merged
	// again to find the users the accounts change deleted.
	v := &verifier{src: src}
	// Metadata a runtime would choke on is a failure, not a reason to stop.
	diffIDs, merr := checkMetadata(img, "the image")
	if merr != nil {
		v.fail("metadata", "", "%v", merr)
	}
	if len(layers) > MaxLayers {
		v.fail("metadata", "", "%d layers, more than the %d overlayfs stacks", len(layers), MaxLayers)
	}
	idxs, err := (*Facts)(nil).indexes(ctx, layers)
	if err != nil {
		return nil, err
	}
	if merr == nil {
		if err := checkDiffIDs("the image", layers, diffIDs, idxs); err != nil {
			v.fail("metadata", "", "%v", err)
		}
	}
	caseUsers, err := caseUsers(ctx, img, layers, idxs)
	if err != nil {
		return nil, err
	}
	view, err := oci.Merge(idxs)
	if err != nil {
		return nil, err
	}
	v.view = view
	for _, kv := range cf.Config.Env {
		if k, _, _ := strings.Cut(kv, "="); contract.RunOnly(k) {
			v.fail("env", "", "ENV sets %s, which only the run may set", k)
		}
	}

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
	v.links()
	v.taskFiles()
	v.owners(v.deletedUsers(caseUsers))
	v.path(cf.Config.Env)
	return v.failures, nil
}

// taskFiles fails every entry under /ssebench the grader would read from
// somewhere else, or model could change: a symlink or hard link out of
// /ssebench (into SOURCE_DIR, /home/model, /tmp, or anywhere: the task
// folder has no such link, so the case image made it), and a file or
// directory model can write.
func (v *verifier) taskFiles() {
	v.view.Walk(func(n oci.Node) error {
		if !under(n.Path, taskDir) || n.Path == taskDir {
			return nil
		}
		h := n.Header
		switch h.Typeflag {
		case tar.TypeSymlink:
			target := h.Linkname
			if !path.IsAbs(target) {
				target = path.Join("/", path.Dir(n.Path), target)
			}
			if !under(strings.TrimPrefix(path.Clean(target), "/"), taskDir) {
				v.fail("task-files", "/"+n.Path, "a symlink to %q, out of /%s%s", h.Linkname, taskDir, v.controls(h.Linkname, n.Path))
			}
		default:
			// A hard link's content is the file it names (the view
			// resolves it); one named outside /ssebench is another
			// path's file.
			if c := strings.TrimPrefix(path.Clean("/"+n.ContentPath), "/"); n.ContentPath != "" && !under(c, taskDir) {
				v.fail("task-files", "/"+n.Path, "a hard link to /%s, out of /%s", c, taskDir)
			} else if v.modelWrites(n) {
				v.fail("task-files", "/"+n.Path, "%s: model can write it", describe(n))
			}
		}
		return nil
	})
}

type verifier struct {
	view     *oci.View
	src      string
	failures []Failure
	users    map[int]string // uid → name, from /etc/passwd
	packIdx  []string       // the pack indexes of SOURCE_DIR's repository
}

func (v *verifier) fail(check, p, format string, args ...any) {
	v.failures = append(v.failures, Failure{Check: check, Path: p, Msg: fmt.Sprintf(format, args...), Rule: rules[check]})
}

func (v *verifier) warn(check, p, format string, args ...any) {
	v.failures = append(v.failures, Failure{Check: check, Path: p, Msg: fmt.Sprintf(format, args...), Rule: rules[check], Warning: true})
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
	if n, ok := v.view.Lookup("etc/shadow"); ok && n.Header.Typeflag == tar.TypeReg {
		nodes = append(nodes, n)
	}
	files, err := (*Facts)(nil).ReadSmall(ctx, layers, nodes)
	if err != nil {
		return err
	}
	users := map[string]bool{}
	v.users = map[int]string{}
	for _, f := range lines(files["etc/passwd"]) {
		if len(f) < 7 {
			continue
		}
		users[f[0]] = true
		if id, err := strconv.Atoi(f[2]); err == nil {
			v.users[id] = f[0]
		}
		if f[1] == "" && !strings.HasPrefix(f[0], "+") && !strings.HasPrefix(f[0], "-") {
			// (A NIS line's empty field means "from NIS", not "none".)
			v.fail("accounts", "/etc/passwd", "user %q has no password: anyone can log in as it", f[0])
		}
		switch {
		case f[0] == "model":
			if f[2] != "1000" || f[3] != "1000" || f[5] != "/home/model" || f[6] != "/bin/bash" {
				v.fail("accounts", "/etc/passwd", "model is %q, want model:x:1000:1000::/home/model:/bin/bash", strings.Join(f, ":"))
			}
		case f[2] == "0" && f[0] != "root":
			v.fail("accounts", "/etc/passwd", "user %q has uid 0: a second root", f[0])
		case f[2] == "1000":
			v.fail("accounts", "/etc/passwd", "user %q also has uid 1000", f[0])
		}
	}
	for _, u := range []string{"model", "sse-runner"} {
		if !users[u] {
			v.fail("accounts", "/etc/passwd", "no user %s", u)
		}
	}
	for _, f := range lines(files["etc/shadow"]) {
		if len(f) >= 2 && f[1] == "" && !strings.HasPrefix(f[0], "+") && !strings.HasPrefix(f[0], "-") {
			v.fail("accounts", "/etc/shadow", "user %q has an empty password: anyone can log in as it", f[0])
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
	// HEAD, the refs and the pack indexes are read in one pass over the
	// layers: read one at a time, they took a pass each over the source
	// layer, whose repository the tool layer holds last (and a download
	// each, for an image in a registry).
	var batch []oci.Node
	if n, ok := v.view.Resolve(gitDir + "/HEAD"); ok && n.Header.Typeflag == tar.TypeReg {
		batch = append(batch, n)
	}
	var idxPaths []string
	if err := walkUnder(v.view, gitDir, func(n oci.Node) {
		rel := strings.TrimPrefix(n.Path, gitDir+"/")
		if strings.HasPrefix(rel, "objects/pack/") && strings.HasSuffix(rel, ".idx") {
			idxPaths = append(idxPaths, n.Path) // read resolves a link
		} else if !strings.HasPrefix(rel, "refs/") {
			return
		}
		if n.Header.Typeflag == tar.TypeReg {
			batch = append(batch, n)
		}
	}); err != nil {
		return err
	}
	small, err := facts.ReadSmall(ctx, layers, batch)
	if err != nil {
		return err
	}
	read := func(p string) ([]byte, error) {
		n, ok := v.view.Resolve(p)
		if !ok || n.Header.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("/%s is missing", p)
		}
		if b, ok := small[n.Path]; ok {
			return b, nil
		}
		m, err := facts.ReadSmall(ctx, layers, []oci.Node{n})
		if err != nil {
			return nil, err
		}
		return m[n.Path], nil
	}
	v.packIdx = idxPaths
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
	for _, p := range v.packIdx {
		if found != nil {
			break
		}
		idx, err := read(p)
		if err != nil {
			continue
		}
		off, ok := idxOffset(idx, raw)
		if !ok {
			continue
		}
		pn, ok := v.view.Resolve(strings.TrimSuffix(p, ".idx") + ".pack")
		if !ok {
			packErr = fmt.Errorf("/%s has no pack", p)
			continue
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
	}
	if found != nil {
		return found, nil
	}
	return nil, packErr
}

// walkUnder calls fn for every node under dir (not dir itself), in path
// order, without visiting the rest of the view.
func walkUnder(view *oci.View, dir string, fn func(oci.Node)) error {
	return view.Walk(func(n oci.Node) error {
		switch {
		case strings.HasPrefix(n.Path, dir+"/"):
			fn(n)
		case n.Path == dir || strings.HasPrefix(dir, n.Path+"/"):
		case n.Header.IsDir():
			return fs.SkipDir
		}
		// SkipDir on a file would skip the rest of its directory.
		return nil
	})
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
