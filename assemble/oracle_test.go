package assemble_test

import (
	"archive/tar"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/images/buildkit"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// The oracle test builds the tool image twice from one case image and one
// runtime image: once with BuildKit running the real tools through SPEC.md
// section 4 (testdata/oracle/reference/Dockerfile), once with assemble.Tool,
// and compares the two filesystems entry by entry. It needs buildkitd, the
// shared registry and the Debian OS image (scripts/setup.sh); it skips under
// -short or without them.

const (
	// oracleSourceDir is the case image's SOURCE_DIR (its config.yaml says so).
	oracleSourceDir = "/src/proj"
	// oracleEpoch is the build time given to both sides: SOURCE_DATE_EPOCH
	// for the reference (shadow-utils and git read it), WithTime for Tool.
	oracleEpoch = 1750000000
	// oracleRepo is where the test's images go in the shared registry.
	oracleRepo = "ssebench-test/assemble-oracle"
)

// allowedDiff is a path whose difference between the reference and the
// native tool image is expected, with the reason.
type allowedDiff struct {
	match  func(p string) bool
	reason string
}

func exact(ps ...string) func(string) bool {
	return func(p string) bool {
		for _, q := range ps {
			if p == q {
				return true
			}
		}
		return false
	}
}

func below(dirs ...string) func(string) bool {
	return func(p string) bool {
		for _, d := range dirs {
			if strings.HasPrefix(p, d+"/") {
				return true
			}
		}
		return false
	}
}

// gitDir is the new repository, relative to the root.
var gitDir = strings.TrimPrefix(oracleSourceDir, "/") + "/.git"

// allowedDiffs lists every difference the oracle accepts. Anything else is
// a failure. Timestamps are never compared (see entry).
var allowedDiffs = []allowedDiff{
	{below(gitDir + "/objects"), "git object storage: real git writes loose objects, ssebench one pack; the commit and tree ids are compared instead"},
	{exact(gitDir + "/index"), "the index holds stat data (times, inode, device) of the checkout; its entries are checked by `git status` on the native image"},
	{exact(gitDir+"/description", gitDir+"/COMMIT_EDITMSG", gitDir+"/ORIG_HEAD"), "written by git init's template or by git commit for its own use; nothing reads them"},
	{below(gitDir+"/hooks", gitDir+"/info", gitDir+"/branches"), "git init's template (sample hooks, info/exclude): inert"},
	{exact(gitDir+"/hooks", gitDir+"/info", gitDir+"/branches"), "git init's template directories"},
	{exact("etc/passwd-", "etc/group-", "etc/shadow-", "etc/gshadow-", "etc/subuid-", "etc/subgid-"), "shadow-utils' backup copies, optional by SPEC.md section 4 step 3"},
	{exact("var/log/lastlog", "var/log/faillog"), "login records that useradd/userdel update; ssebench leaves them as the case image had them"},
	{exact("etc/.pwd.lock"), "shadow-utils' lock file"},
}

func allowed(p string) (string, bool) {
	for _, a := range allowedDiffs {
		if a.match(p) {
			return a.reason, true
		}
	}
	return "", false
}

func TestOracleTool(t *testing.T) {
	bkAddr := testenv.RequireBuildKit(t)
	reg := testenv.RequireRegistry(t)
	osImage := testenv.OSImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	var progress testenv.LockedBuffer
	c, err := buildkit.New(ctx, buildkit.WithAddress(bkAddr), buildkit.WithProgress(&progress),
		buildkit.WithProgressMode(buildkit.ProgressPlain), buildkit.WithTempDir(t.TempDir()))
	if err != nil {
		t.Fatalf("buildkit.New() = %v", err)
	}
	defer c.Close()
	platform := "linux/" + runtime.GOARCH
	push := func(what string, req buildkit.Request) string {
		t.Helper()
		req.Platform = platform
		req.Push = fmt.Sprintf("%s/%s/%s:latest", reg, oracleRepo, what)
		start := time.Now()
		res, err := c.Build(ctx, req)
		if err != nil {
			t.Fatalf("building the %s image: %v\n%s", what, err, tail(progress.String(), 60))
		}
		ref := fmt.Sprintf("%s/%s/%s@%s", reg, oracleRepo, what, res.Digest)
		t.Logf("%s image %s (%s)", what, ref, time.Since(start).Round(time.Millisecond))
		return ref
	}
	td := filepath.Join("testdata", "oracle")
	runtimeRef := push("runtime", buildkit.Request{ContextDir: filepath.Join(td, "runtime")})
	caseRef := push("case", buildkit.Request{ContextDir: filepath.Join(td, "case"), BuildArgs: map[string]string{"OS_IMAGE": osImage}})
	refRef := push("reference", buildkit.Request{
		ContextDir:    filepath.Join(td, "reference"),
		ImageContexts: map[string]string{"case": caseRef, "runtime": runtimeRef},
		BuildArgs:     map[string]string{"SOURCE_DIR": oracleSourceDir, "SOURCE_DATE_EPOCH": strconv.Itoa(oracleEpoch)},
	})

	res, err := remote.NewResolver(remote.WithInsecureRegistries(reg))
	if err != nil {
		t.Fatal(err)
	}
	image := func(ref string) v1.Image {
		t.Helper()
		img, err := res.Image(ctx, ref)
		if err != nil {
			t.Fatalf("reading %s: %v", ref, err)
		}
		return img
	}
	caseImg, runtimeImg, refImg := image(caseRef), image(runtimeRef), image(refRef)

	start := time.Now()
	native, err := assemble.Tool(ctx, caseImg, runtimeImg,
		assemble.WithSourceDir(oracleSourceDir),
		assemble.WithTempDir(t.TempDir()),
		assemble.WithTime(time.Unix(oracleEpoch, 0)),
		assemble.WithRefs(caseRef, runtimeRef))
	if err != nil {
		t.Fatalf("assemble.Tool() = %v", err)
	}
	defer native.Close()
	t.Logf("assemble.Tool: %s, tree %s, commit %s", time.Since(start).Round(time.Millisecond), native.TreeID, native.CommitID)

	// The same inputs give the same image, with or without the facts
	// cache, and from a warm cache.
	facts, err := assemble.NewFacts(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	nd, err := native.Digest()
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"cold facts cache", "warm facts cache"} {
		again, err := assemble.Tool(ctx, caseImg, runtimeImg,
			assemble.WithSourceDir(oracleSourceDir),
			assemble.WithTempDir(t.TempDir()),
			assemble.WithTime(time.Unix(oracleEpoch, 0)),
			assemble.WithFacts(facts))
		if err != nil {
			t.Fatalf("assemble.Tool() with a %s = %v", run, err)
		}
		d, err := again.Digest()
		again.Close()
		if err != nil {
			t.Fatal(err)
		}
		if d != nd {
			t.Errorf("assemble.Tool() with a %s gave image %s, without one %s", run, d, nd)
		}
	}
	if err := validate.Image(native); err != nil {
		t.Errorf("validate.Image(native tool image) = %v", err)
	}

	want := flatten(ctx, t, refImg)
	got := flatten(ctx, t, native)

	t.Run("filesystem", func(t *testing.T) {
		diffs, accepted := compareTrees(want, got)
		for _, reason := range sortedKeys(accepted) {
			ds := accepted[reason]
			more := ""
			if len(ds) > 3 {
				more = fmt.Sprintf("\n… and %d more", len(ds)-3)
				ds = ds[:3]
			}
			t.Logf("allowed, %d differences: %s; for example\n%s%s", len(accepted[reason]), reason, strings.Join(ds, "\n"), more)
		}
		if len(diffs) > 0 {
			t.Errorf("the native tool image differs from the reference (BuildKit + real tools) in %d places (reference first, then native; see allowedDiffs for what may differ):\n%s",
				len(diffs), strings.Join(diffs, "\n"))
		}
	})

	t.Run("config", func(t *testing.T) {
		wcf, err := refImg.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		gcf, err := native.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wcf.Config, gcf.Config); diff != "" {
			t.Errorf("image config (-reference +native):\n%s", diff)
		}
		if wcf.OS != gcf.OS || wcf.Architecture != gcf.Architecture || wcf.Variant != gcf.Variant {
			t.Errorf("platform = %s/%s/%s, reference %s/%s/%s", gcf.OS, gcf.Architecture, gcf.Variant, wcf.OS, wcf.Architecture, wcf.Variant)
		}
	})

	t.Run("verify", func(t *testing.T) {
		// A tool image of a real Debian case passes every check, warnings
		// included, but for the setuid programs the case plants to test
		// that modes are kept.
		fails, err := assemble.Verify(ctx, native.Image, "")
		if err != nil {
			t.Fatalf("assemble.Verify() = %v", err)
		}
		for _, f := range fails {
			if f.Check == "setuid" && (f.Path == "/opt/suid" || f.Path == "/opt/sgid") {
				continue
			}
			t.Errorf("assemble.Verify(native tool image): %s", f)
		}
	})

	t.Run("repository", func(t *testing.T) {
		commit, tree, err := headCommit(want)
		if err != nil {
			t.Fatalf("reading the reference repository: %v", err)
		}
		if tree != native.TreeID {
			t.Errorf("tree id = %s, real git's %s", native.TreeID, tree)
		}
		if commit != native.CommitID {
			t.Errorf("commit id = %s, real git's %s (same tree, time, identity and message give the same commit)", native.CommitID, commit)
		}
		if e := got[gitDir+"/HEAD"]; e == nil {
			t.Errorf("native image has no /%s/HEAD", gitDir)
		}
		checkWithGit(t, want, got, native.TreeID)
	})
}

// entry is what the comparison sees of one path of a flattened image: its
// metadata without times, a hash of its content and its hard-link group.
type entry struct {
	typ      byte
	mode     int64
	uid, gid int
	size     int64
	sha      string
	link     string
	xattrs   string
	hardlink string // the other names of the same inode, sorted
	content  []byte // kept for the few files the test reads
}

func (e *entry) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %04o %d:%d", typeName(e.typ), e.mode, e.uid, e.gid)
	switch e.typ {
	case tar.TypeReg:
		fmt.Fprintf(&b, " size=%d sha256=%.12s", e.size, e.sha)
	case tar.TypeSymlink:
		fmt.Fprintf(&b, " -> %q", e.link)
	}
	if e.hardlink != "" {
		fmt.Fprintf(&b, " hardlinked with [%s]", e.hardlink)
	}
	if e.xattrs != "" {
		fmt.Fprintf(&b, " xattrs=%s", e.xattrs)
	}
	return b.String()
}

func typeName(t byte) string {
	switch t {
	case tar.TypeReg:
		return "file"
	case tar.TypeDir:
		return "dir"
	case tar.TypeSymlink:
		return "symlink"
	case tar.TypeChar:
		return "chardev"
	case tar.TypeBlock:
		return "blockdev"
	case tar.TypeFifo:
		return "fifo"
	}
	return fmt.Sprintf("type%q", t)
}

// keepContent says which files' bytes the test needs after flattening.
func keepContent(p string) bool {
	return under(p, strings.TrimPrefix(oracleSourceDir, "/")) || strings.HasPrefix(p, "etc/")
}

func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// flatten merges img's layers (with the oci package's view, which follows
// the image-spec rules) and hashes every regular file.
func flatten(ctx context.Context, t *testing.T, img v1.Image) map[string]*entry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	idxs := make([]*oci.LayerIndex, len(layers))
	for i, l := range layers {
		if idxs[i], err = oci.IndexLayer(ctx, l); err != nil {
			t.Fatalf("indexing layer %d: %v", i, err)
		}
	}
	view, err := oci.Merge(idxs)
	if err != nil {
		t.Fatalf("merging layers: %v", err)
	}
	out := map[string]*entry{}
	var files []oci.Node
	groups := map[[2]int][]string{}
	err = view.Walk(func(n oci.Node) error {
		h := n.Header
		e := &entry{typ: h.Typeflag, mode: h.Mode, uid: h.Uid, gid: h.Gid, link: h.Linkname}
		if n.Implicit {
			e.mode, e.uid, e.gid = 0o755, 0, 0
		}
		if len(h.Xattrs) > 0 {
			var ks []string
			for k, v := range h.Xattrs {
				ks = append(ks, fmt.Sprintf("%s=%x", k, v))
			}
			sort.Strings(ks)
			e.xattrs = strings.Join(ks, ",")
		}
		if h.Typeflag == tar.TypeReg {
			e.size = h.Size
			files = append(files, n)
			k := [2]int{n.Layer, n.Entry}
			groups[k] = append(groups[k], n.Path)
		}
		if h.Typeflag == tar.TypeChar || h.Typeflag == tar.TypeBlock {
			e.link = fmt.Sprintf("%d,%d", h.Devmajor, h.Devminor)
		}
		out[n.Path] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, names := range groups {
		if len(names) < 2 {
			continue
		}
		for _, p := range names {
			var others []string
			for _, q := range names {
				if q != p {
					others = append(others, "/"+q)
				}
			}
			sort.Strings(others)
			out[p].hardlink = strings.Join(others, " ")
		}
	}
	err = oci.ReadFiles(ctx, layers, files, func(n oci.Node, r io.Reader) error {
		h := sha256.New()
		var buf bytes.Buffer
		w := io.Writer(h)
		if keepContent(n.Path) {
			w = io.MultiWriter(h, &buf)
		}
		if _, err := io.Copy(w, r); err != nil {
			return err
		}
		e := out[n.Path]
		e.sha = hex.EncodeToString(h.Sum(nil))
		if keepContent(n.Path) {
			e.content = buf.Bytes()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading files: %v", err)
	}
	return out
}

// hardlinkReason explains why a hard link may be kept by ssebench where
// the reference has two files.
const hardlinkReason = "hard links that the reference lost: a RUN step that changes the metadata of a hard-linked file of a lower layer " +
	"(step 4's chmod o-w) makes overlayfs copy each name up on its own, so BuildKit's layer holds two files; " +
	"ssebench keeps the case image's link, and both names have the same type, mode, owner and content either way"

// compareTrees lists every difference between the reference (want) and
// the native image (got), and separately the differences it accepted, by
// reason.
func compareTrees(want, got map[string]*entry) (diffs []string, accepted map[string][]string) {
	accepted = map[string][]string{}
	paths := map[string]bool{}
	for p := range want {
		paths[p] = true
	}
	for p := range got {
		paths[p] = true
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Slice(sorted, func(i, j int) bool { return oci.ComparePaths(sorted[i], sorted[j]) < 0 })
	for _, p := range sorted {
		w, g := want[p], got[p]
		var d string
		switch {
		case w == nil:
			d = fmt.Sprintf("/%s: only in native: %s", p, g)
		case g == nil:
			d = fmt.Sprintf("/%s: only in reference: %s", p, w)
		default:
			d = compareEntry(p, w, g)
		}
		if d == "" {
			continue
		}
		if reason, ok := allowed(p); ok {
			accepted[reason] = append(accepted[reason], d)
			continue
		}
		if w != nil && g != nil && w.hardlink == "" && g.hardlink != "" {
			nw, ng := *w, *g
			nw.hardlink, ng.hardlink = "", ""
			if nw.String() == ng.String() {
				accepted[hardlinkReason] = append(accepted[hardlinkReason], d)
				continue
			}
		}
		diffs = append(diffs, d)
	}
	return diffs, accepted
}

func compareEntry(p string, w, g *entry) string {
	ws, gs := w.String(), g.String()
	if ws == gs {
		return ""
	}
	d := fmt.Sprintf("/%s:\n\treference %s\n\tnative    %s", p, ws, gs)
	if w.content != nil && g.content != nil && !bytes.Equal(w.content, g.content) && isText(w.content) && isText(g.content) {
		d += "\n\tcontent (-reference +native):\n" + indent(cmp.Diff(string(w.content), string(g.content)))
	}
	return d
}

// isText says whether b is worth showing as a text diff.
func isText(b []byte) bool {
	return len(b) < 8192 && utf8.Valid(b) && !bytes.ContainsRune(b, 0)
}

func indent(s string) string {
	return "\t\t" + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n\t\t")
}

// headCommit follows the reference repository's HEAD to its commit and
// reads the commit's tree from the loose object real git wrote.
func headCommit(fs map[string]*entry) (commit, tree string, err error) {
	head := fs[gitDir+"/HEAD"]
	if head == nil {
		return "", "", fmt.Errorf("no /%s/HEAD", gitDir)
	}
	ref, ok := strings.CutPrefix(strings.TrimSpace(string(head.content)), "ref: ")
	if !ok {
		return "", "", fmt.Errorf("HEAD is %q, not a symbolic ref", head.content)
	}
	r := fs[gitDir+"/"+ref]
	if r == nil {
		return "", "", fmt.Errorf("HEAD names %s, which is not a loose ref", ref)
	}
	commit = strings.TrimSpace(string(r.content))
	obj := fs[gitDir+"/objects/"+commit[:2]+"/"+commit[2:]]
	if obj == nil {
		return "", "", fmt.Errorf("commit %s is not a loose object", commit)
	}
	zr, err := zlib.NewReader(bytes.NewReader(obj.content))
	if err != nil {
		return "", "", err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return "", "", err
	}
	_, body, _ := bytes.Cut(raw, []byte{0})
	first, _, _ := strings.Cut(string(body), "\n")
	tree, ok = strings.CutPrefix(first, "tree ")
	if !ok {
		return "", "", fmt.Errorf("commit %s starts with %q", commit, first)
	}
	return commit, tree, nil
}

// extract writes the SOURCE_DIR of a flattened image to dir (contents,
// permission bits and symlinks; owners are not needed by git).
func extract(t *testing.T, fs map[string]*entry, dir string) {
	t.Helper()
	src := strings.TrimPrefix(oracleSourceDir, "/")
	var paths []string
	for p := range fs {
		if under(p, src) {
			paths = append(paths, p)
		}
	}
	sort.Slice(paths, func(i, j int) bool { return oci.ComparePaths(paths[i], paths[j]) < 0 })
	for _, p := range paths {
		e := fs[p]
		dst := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(strings.TrimPrefix(p, src), "/")))
		var err error
		switch e.typ {
		case tar.TypeDir:
			err = os.MkdirAll(dst, 0o755)
		case tar.TypeReg:
			err = os.WriteFile(dst, e.content, os.FileMode(e.mode&0o777))
		case tar.TypeSymlink:
			err = os.Symlink(e.link, dst)
		}
		if err != nil {
			t.Fatalf("writing a checkout: %v", err)
		}
	}
}

// gitRunner runs real git in dir, failing the test when git does.
func gitRunner(t *testing.T, gitBin, dir string) func(args ...string) string {
	home := t.TempDir()
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command(gitBin, append([]string{"-c", "safe.directory=*", "-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

// checkWithGit writes both images' SOURCE_DIR to disk and asks real git
// about the native one: the repository must be sound, HEAD's tree must be
// treeID, the working tree must be clean, and its files must be those of
// the reference commit.
func checkWithGit(t *testing.T, want, got map[string]*entry, treeID string) {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Log("git not found: the native repository is not checked with git")
		return
	}
	wdir, gdir := t.TempDir(), t.TempDir()
	extract(t, want, wdir)
	extract(t, got, gdir)
	wgit, ggit := gitRunner(t, gitBin, wdir), gitRunner(t, gitBin, gdir)
	if got := ggit("rev-parse", "HEAD^{tree}"); got != treeID {
		t.Errorf("git rev-parse HEAD^{tree} = %q, want %s", got, treeID)
	}
	ggit("fsck", "--strict", "--no-dangling")
	if got := ggit("status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Errorf("git status --porcelain in the native checkout is not empty:\n%s", got)
	}
	wantLog := fmt.Sprintf("SSEBench Agent <agent@ssebench.invalid>|SSEBench Agent <agent@ssebench.invalid>|%d|%d|buggy commit", oracleEpoch, oracleEpoch)
	if got := ggit("log", "-1", "--format=%an <%ae>|%cn <%ce>|%at|%ct|%s"); got != wantLog {
		t.Errorf("git log -1 = %q, want %q", got, wantLog)
	}
	if diff := cmp.Diff(wgit("ls-tree", "-r", "-t", "HEAD"), ggit("ls-tree", "-r", "-t", "HEAD")); diff != "" {
		t.Errorf("git ls-tree -r -t HEAD (-reference +native):\n%s", diff)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
