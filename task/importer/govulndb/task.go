package govulndb

import (
	"archive/zip"
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"

	"github.com/42-b3yond-6ug/ssebench/task"
)

// Limits on what makes a sound task. A fix larger than this is no longer
// one bug's fix; a module with more requirements takes long to fetch and
// is more likely to break on today's toolchain.
const (
	maxPatchLines = 1000
	maxPatchFiles = 12
	maxTestLines  = 4000
	maxFileBytes  = 1 << 20
	maxRequires   = 60
	maxZipFiles   = 20000
	// baseGo is the Go of the generic-go base image: a module that asks
	// for a newer one cannot build there (GOTOOLCHAIN=local).
	baseGo = "v1.26.8"
)

// modZip is a module version's zip, its files by their path in the module.
type modZip struct {
	files map[string]*zip.File
}

func openModZip(r *zip.Reader, modPath, version string) (*modZip, error) {
	prefix := modPath + "@v" + version + "/"
	if len(r.File) > maxZipFiles {
		return nil, skipf("the module has %d files, more than %d", len(r.File), maxZipFiles)
	}
	z := &modZip{files: map[string]*zip.File{}}
	for _, f := range r.File {
		name, ok := strings.CutPrefix(f.Name, prefix)
		if !ok || name == "" || strings.HasSuffix(name, "/") {
			continue
		}
		z.files[name] = f
	}
	return z, nil
}

func (z *modZip) read(name string) ([]byte, bool, error) {
	f, ok := z.files[name]
	if !ok {
		return nil, false, nil
	}
	if f.UncompressedSize64 > maxFileBytes {
		return nil, true, skipf("%s is %d bytes, more than a fix's file should be", name, f.UncompressedSize64)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, true, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxFileBytes+1))
	return b, true, err
}

// fileKind says what a file of a package directory is to the task: part of
// the fix ("patch"), of its tests ("test"), or neither ("").
func fileKind(pkgDir, name string) string {
	rel := name
	if pkgDir != "." {
		var ok bool
		if rel, ok = strings.CutPrefix(name, pkgDir+"/"); !ok {
			return ""
		}
	}
	switch {
	case rel == "testdata" || strings.HasPrefix(rel, "testdata/"):
		return "test"
	case strings.Contains(rel, "/"):
		return "" // a subdirectory is another package
	case strings.HasSuffix(rel, "_test.go"):
		return "test"
	case rel == "go.mod" || rel == "go.sum":
		// A fix that needs other dependencies cannot be applied
		// offline; verify finds out whether it works without.
		return ""
	}
	return "patch"
}

// plan is what the importer writes for one report.
type plan struct {
	report     *Report
	mod        Module
	fixed      string
	pkgDirs    []string // the affected packages' directories, "." for the root
	patch      string
	test       string
	patchLines int
	time       string     // the vulnerable version's time, for the commit
	tests      task.Tests // the lists an earlier verify wrote
	// old and nw are the two versions' zips (open while the task is
	// written), changedGo the Go files of the fix and its tests that the
	// fixed version has.
	old, nw   *modZip
	changedGo []string
	// patchNames are the files the reference patch changes, sorted.
	patchNames []string
	// api is what the hidden tests need that only the fix declares;
	// stubs and variant the patches verify grades beside the reference
	// (alternatives); notes what the import table says of the task.
	api            *fixAPI
	stubs, variant string
	notes          []string
}

// makePlan diffs the affected packages between the vulnerable and the
// fixed zip.
func makePlan(r *Report, m Module, fixed string, vuln, fix *zip.Reader) (*plan, error) {
	old, err := openModZip(vuln, m.Module, m.VulnerableAt)
	if err != nil {
		return nil, err
	}
	nw, err := openModZip(fix, m.Module, fixed)
	if err != nil {
		return nil, err
	}
	gomod, ok, err := old.read("go.mod")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, skipf("not a module at v%s: no go.mod (the toolchain cannot vendor it)", m.VulnerableAt)
	}
	mf, err := modfile.ParseLax("go.mod", gomod, nil)
	if err != nil {
		return nil, skipf("go.mod at v%s does not parse: %s", m.VulnerableAt, oneLine(err.Error()))
	}
	if mf.Go != nil && semver.Compare("v"+mf.Go.Version, baseGo) > 0 {
		return nil, skipf("needs Go %s, newer than the base image's", mf.Go.Version)
	}
	if len(mf.Require) > maxRequires {
		return nil, skipf("%d requirements, more than %d", len(mf.Require), maxRequires)
	}
	if _, vendored := old.files["vendor/modules.txt"]; vendored {
		return nil, skipf("the module zip carries its own vendor directory")
	}

	p := &plan{report: r, mod: m, fixed: fixed, old: old, nw: nw}
	seen := map[string]bool{}
	for _, pkg := range m.Packages {
		dir := "."
		if pkg.Package != m.Module {
			dir = strings.TrimPrefix(pkg.Package, m.Module+"/")
		}
		if !seen[dir] {
			seen[dir] = true
			p.pkgDirs = append(p.pkgDirs, dir)
		}
	}
	sort.Strings(p.pkgDirs)
	names := map[string]bool{}
	for n := range old.files {
		names[n] = true
	}
	for n := range nw.files {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)

	// A fix may move code into a package the release adds (rs/cors 1.11.0
	// adds internal/ for its affected root package): that package's files
	// belong to the fix, or the patched package does not build.
	d, err := diffDirs(sorted, append(slices.Clone(p.pkgDirs), importedDirs(m.Module, p.pkgDirs, old, nw, false)...), old, nw)
	if err != nil {
		return nil, err
	}
	if d.patchGo == 0 {
		// No Go file of the affected packages changed: the fix is in the
		// packages they import (shamaton/msgpack/v2 2.4.1 fixes its
		// internal/ decoders; the database names the exported API).
		if d, err = diffDirs(sorted, append(slices.Clone(p.pkgDirs), importedDirs(m.Module, p.pkgDirs, old, nw, true)...), old, nw); err != nil {
			return nil, err
		}
	}
	switch {
	case d.goFiles == 0:
		return nil, skipf("no Go files in the affected packages at v%s", m.VulnerableAt)
	case d.patch == "":
		return nil, skipf("the fix changes no non-test file of the affected packages")
	case d.test == "":
		return nil, skipf("no test in the fix (no _test.go or testdata change in the affected packages)")
	case d.patchLines > maxPatchLines || d.patchFiles > maxPatchFiles:
		return nil, skipf("the fix is too large: %d changed lines in %d files (at most %d in %d)", d.patchLines, d.patchFiles, maxPatchLines, maxPatchFiles)
	case d.testLines > maxTestLines:
		return nil, skipf("the fix's tests are too large: %d changed lines (at most %d)", d.testLines, maxTestLines)
	}
	p.patch, p.test, p.patchLines, p.changedGo, p.patchNames = d.patch, d.test, d.patchLines, d.changedGo, d.patchNames
	return p, nil
}

// dirDiff is the fix and its tests in some package directories.
type dirDiff struct {
	patch, test                     string
	patchLines, patchFiles, patchGo int      // patchGo: changed non-test Go files
	testLines, goFiles              int      // goFiles: non-test Go files at the vulnerable version
	changedGo                       []string // changed Go files the fixed version has, sorted
	patchNames                      []string // the files the patch changes, sorted
}

// diffDirs diffs the files named (sorted) of the package directories dirs
// between the vulnerable and the fixed version.
func diffDirs(names, dirs []string, old, nw *modZip) (*dirDiff, error) {
	var patch, test strings.Builder
	r := &dirDiff{}
	for _, name := range names {
		kind := ""
		for _, d := range dirs {
			if k := fileKind(d, name); k != "" {
				kind = k
				break
			}
		}
		if kind == "" {
			continue
		}
		a, inOld, err := old.read(name)
		if err != nil {
			return nil, err
		}
		b, inNew, err := nw.read(name)
		if err != nil {
			return nil, err
		}
		isGo := strings.HasSuffix(name, ".go")
		if inOld && kind == "patch" && isGo {
			r.goFiles++
			if bytes.Contains(a, []byte("\nimport \"C\"")) {
				return nil, skipf("%s uses cgo", name)
			}
		}
		if inOld == inNew && bytes.Equal(a, b) {
			continue
		}
		d, n, err := fileDiff(name, a, b, inOld, inNew)
		if err != nil {
			return nil, err
		}
		if isGo && inNew {
			r.changedGo = append(r.changedGo, name)
		}
		if kind == "patch" {
			r.patchNames = append(r.patchNames, name)
			patch.WriteString(d)
			r.patchLines += n
			r.patchFiles++
			if isGo {
				r.patchGo++
			}
		} else {
			test.WriteString(d)
			r.testLines += n
		}
	}
	r.patch, r.test = patch.String(), test.String()
	return r, nil
}

// importedDirs lists the directories of the packages of module modPath
// that the fixed version of the packages in dirs imports, directly or
// through each other, sorted: every one with all, else those that the
// vulnerable version does not have.
func importedDirs(modPath string, dirs []string, old, nw *modZip, all bool) []string {
	hasGo := func(z *modZip, dir string) bool {
		for n := range z.files {
			if path.Dir(n) == dir && strings.HasSuffix(n, ".go") {
				return true
			}
		}
		return false
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		seen[d] = true
	}
	var added []string
	queue := slices.Clone(dirs)
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		for name := range nw.files {
			if path.Dir(name) != dir || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			src, _, err := nw.read(name)
			if err != nil {
				continue // too large or unreadable: makePlan says so
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
			if err != nil {
				continue
			}
			for _, im := range f.Imports {
				ip, err := strconv.Unquote(im.Path.Value)
				if err != nil {
					continue
				}
				d, ok := strings.CutPrefix(ip, modPath+"/")
				if !ok || seen[d] {
					continue
				}
				seen[d] = true
				if hasGo(nw, d) && (all || !hasGo(old, d)) {
					added = append(added, d)
					queue = append(queue, d)
				}
			}
		}
	}
	sort.Strings(added)
	return added
}

// fileDiff is one file's diff in git's format, which `patch -p1` and the
// grader's hidden-test step both read, and the number of changed lines.
func fileDiff(name string, a, b []byte, inOld, inNew bool) (string, int, error) {
	if isBinary(a) || isBinary(b) {
		return "", 0, skipf("%s is a binary file, which a text diff cannot carry", name)
	}
	from, to := "a/"+name, "b/"+name
	var h strings.Builder
	fmt.Fprintf(&h, "diff --git a/%s b/%s\n", name, name)
	switch {
	case !inOld:
		h.WriteString("new file mode 100644\n")
		from = "/dev/null"
	case !inNew:
		h.WriteString("deleted file mode 100644\n")
		to = "/dev/null"
	}
	edits := udiff.Lines(string(a), string(b))
	u, err := udiff.ToUnified(from, to, string(a), edits, udiff.DefaultContextLines)
	if err != nil {
		return "", 0, fmt.Errorf("diffing %s: %w", name, err)
	}
	n := 0
	for _, l := range strings.Split(u, "\n") {
		if (strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-")) && !strings.HasPrefix(l, "+++ ") && !strings.HasPrefix(l, "--- ") {
			n++
		}
	}
	return h.String() + u, n, nil
}

func isBinary(b []byte) bool {
	return bytes.IndexByte(b, 0) >= 0 || !slices.Equal([]byte(strings.ToValidUTF8(string(b), "\uFFFD")), b)
}

// project is the short name of a module: its last element that is not a
// major-version suffix.
func project(modPath string) string {
	elems := strings.Split(modPath, "/")
	last := elems[len(elems)-1]
	if len(elems) > 1 && len(last) > 1 && last[0] == 'v' && strings.Trim(last[1:], "0123456789") == "" {
		last = elems[len(elems)-2]
	}
	last = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '-'
	}, last)
	if strings.Trim(last, ".") == "" {
		return "module"
	}
	return last
}

// pkgArgs are the affected packages as go command arguments.
func (p *plan) pkgArgs() []string {
	var out []string
	for _, d := range p.pkgDirs {
		if d == "." {
			out = append(out, ".")
		} else {
			out = append(out, "./"+path.Clean(d))
		}
	}
	return out
}
