package sserun

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"math/big"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
	"golang.org/x/mod/modfile"
)

// The canary (SPEC.md section 17.1): a test report is written by the test
// binary, which holds the agent's code, so a report that parses proves
// nothing. Before a check judged by name runs the test script, the grader
// adds two tests of its own to each Go package the hidden tests touch: one
// that must pass and one that must fail, under names drawn at random for
// the run, in a test file drawn at random (test order follows files, so a
// forger cannot drop "the first two tests"). A report in which the test
// that must fail passed, or in which either is missing although the
// package's binary ran to its end, was rewritten: an integrity verdict of
// its own, never a FAILED check.
//
// Only go-test-json has a canary. A junit-xml report comes from harnesses
// the grader knows nothing about. libtest's comes from `cargo test`, which
// stops at the first test target that fails: a test that must fail would
// hide every later target's tests, unless the task's script passes
// --no-fail-fast, which nothing makes it do.

// maxCanaryFile bounds a test file the grader reads to add its tests to:
// a larger one is passed over.
const maxCanaryFile = 4 << 20

// canary is the grader's pair of tests in one package.
type canary struct {
	// Dir is the package's directory in the tree, slash-separated; Pkg
	// its import path, "" when no go.mod above it says it.
	Dir, Pkg string
	// File is the test file holding the pair, slash-separated, in the
	// tree.
	File string
	// Pass and Fail are the test that must pass and the one that must
	// fail.
	Pass, Fail string
	// orig is File's content before, mode, uid and gid its permissions
	// and owner; orig is nil when the grader created File.
	orig     []byte
	mode     fs.FileMode
	uid, gid int
}

// canaryDirs returns the package directories the hidden tests touch: the
// directories of the *_test.go files the task's future_test diff adds or
// changes, sorted; none when the task has no future_test.
func (d *Daemon) canaryDirs() ([]string, error) {
	file := d.cfg.Files.FutureTest
	if file == "" {
		return nil, nil
	}
	patch, err := os.ReadFile(path.Join(d.root, file))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	return testDirs(patch)
}

// testDirs returns the directories of the *_test.go files a diff leaves in
// the tree, sorted: the packages its tests are in. Directories go does
// not build (testdata, names starting with _ or .) are left out.
func testDirs(patch []byte) ([]string, error) {
	files, _, err := gitdiff.Parse(bytes.NewReader(patch))
	if err != nil {
		return nil, fmt.Errorf("reading the hidden tests' diff: %w", err)
	}
	strip := !bytes.HasPrefix(patch, []byte("diff --git ")) && !bytes.Contains(patch, []byte("\ndiff --git "))
	var dirs []string
	for _, f := range files {
		if f.IsDelete {
			continue
		}
		name, err := diffPath(f.NewName, strip)
		if err != nil {
			return nil, err
		}
		if !strings.HasSuffix(name, "_test.go") || !goBuilds(name) {
			continue
		}
		dirs = append(dirs, path.Dir(name))
	}
	slices.Sort(dirs)
	return slices.Compact(dirs), nil
}

// goBuilds reports whether the go command would build the file at p: no
// part of its path is testdata or starts with _ or . (a slash path).
func goBuilds(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == "testdata" || (part != "." && (strings.HasPrefix(part, "_") || strings.HasPrefix(part, "."))) {
			return false
		}
	}
	return true
}

// plantCanaries adds a canary to each package of dirs in the tree at src,
// returning one for each directory that holds a Go package (notes say
// which did not and why). Each canary goes into a test file of the
// package drawn at random among those without build constraints that are
// the runner's (uid) regular files of one link; without one, into a new
// test file, owned by uid:gid, when create is set (else the package gets
// none: a package without tests would get a test binary of its own, the
// whole cost of the canary). Every line of a file keeps its number: the
// tests go at the end, and use the file's import of "testing" or one on
// the package clause's line. On error the tree is as it was.
//
// Only the daemon and the runner's scripts write to the tree, and none of
// the runner's processes outlive their script, so nothing changes it
// while this runs.
func plantCanaries(src string, dirs []string, uid, gid int, create bool) (_ []*canary, notes []string, retErr error) {
	root, err := os.OpenRoot(src)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	var out []*canary
	defer func() {
		if retErr != nil {
			_ = unplantCanaries(src, out)
			out = nil
		}
	}()
	names := map[string]bool{}
	for _, dir := range dirs {
		c, why, err := plantCanary(root, dir, uid, gid, create, names)
		if err != nil {
			return nil, nil, fmt.Errorf("adding the grader's tests to %s: %w", dir, err)
		}
		if c == nil {
			notes = append(notes, fmt.Sprintf("%s: %s", dir, why))
			continue
		}
		out = append(out, c)
	}
	return out, notes, nil
}

// unplantCanaries puts back each file plantCanaries changed and removes
// each it created.
func unplantCanaries(src string, cs []*canary) error {
	if len(cs) == 0 {
		return nil
	}
	root, err := os.OpenRoot(src)
	if err != nil {
		return err
	}
	defer root.Close()
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.unplant(root))
	}
	return errors.Join(errs...)
}

// unplant puts back the file c changed, or removes the one it created.
func (c *canary) unplant(root *os.Root) error {
	// The test script, the agent's code, may have replaced the file with
	// anything: remove it, then write what was there.
	if err := root.Remove(c.File); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if c.orig == nil {
		return nil
	}
	f, err := root.OpenFile(c.File, os.O_WRONLY|os.O_CREATE|os.O_EXCL, c.mode)
	if err != nil {
		return err
	}
	_, err = f.Write(c.orig)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Lchown(c.File, c.uid, c.gid)
	}
	if err == nil {
		// The umask applied to the mode OpenFile set.
		err = root.Chmod(c.File, c.mode)
	}
	return err
}

// plantCanary adds a canary to the package in dir; it returns nil and why
// when dir holds no Go package, or no test file and create is not set.
// names are the names drawn so far, which the new ones must differ from.
func plantCanary(root *os.Root, dir string, uid, gid int, create bool, names map[string]bool) (*canary, string, error) {
	fi, err := root.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "not in the tree", nil
	}
	if err != nil {
		return nil, "", err
	}
	if !fi.IsDir() {
		return nil, "not a directory", nil
	}
	f, err := root.Open(dir)
	if err != nil {
		return nil, "", err
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return nil, "", err
	}
	var candidates []string
	var pkgName, constrainedName string
	// The package's own text: a name drawn must not be in it (an alias
	// equal to one of its identifiers would not compile).
	var text [][]byte
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || !e.Type().IsRegular() || !goBuilds(name) {
			continue
		}
		p := path.Join(dir, name)
		data, ok := readGoFile(root, p)
		if !ok {
			continue
		}
		text = append(text, data)
		fset := token.NewFileSet()
		pf, err := parser.ParseFile(fset, name, data, parser.PackageClauseOnly)
		if err != nil {
			continue
		}
		constrained := hasConstraint(data[:fset.Position(pf.Package).Offset]) || osArchName(name)
		test := strings.HasSuffix(name, "_test.go")
		switch n := strings.TrimSuffix(pf.Name.Name, "_test"); {
		case !test && !constrained && pkgName == "":
			pkgName = n
		case constrainedName == "":
			constrainedName = n
		}
		if test && !constrained && writable(root, p, uid) {
			candidates = append(candidates, p)
		}
	}
	if pkgName == "" {
		pkgName = constrainedName
	}
	if pkgName == "" {
		return nil, "no Go package", nil
	}
	if len(candidates) == 0 && !create {
		return nil, "no test file to add them to", nil
	}
	c := &canary{Dir: dir, Pkg: importPath(root, dir), mode: 0o644, uid: uid, gid: gid}
	fresh := func(draw func() string) func() string {
		return func() string {
			for {
				n := draw()
				if !slices.ContainsFunc(text, func(b []byte) bool { return bytes.Contains(b, []byte(n)) }) {
					return n
				}
			}
		}
	}
	c.Pass = drawName(names, fresh(testName))
	c.Fail = drawName(names, fresh(testName))
	if len(candidates) == 0 {
		c.File = path.Join(dir, drawName(names, func() string {
			for {
				n := randLetters(5+randInt(6), false)
				if !slices.ContainsFunc(ents, func(e fs.DirEntry) bool { return e.Name() == n+"_test.go" }) {
					return n
				}
			}
		})+"_test.go")
		body := fmt.Sprintf("package %s\n\nimport \"testing\"\n%s%s", pkgName, canaryTest("testing", c.Pass, true), canaryTest("testing", c.Fail, false))
		w, err := root.OpenFile(c.File, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return nil, "", err
		}
		_, err = w.WriteString(body)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = root.Lchown(c.File, uid, gid)
		}
		if err != nil {
			_ = root.Remove(c.File)
			return nil, "", err
		}
		return c, "", nil
	}
	c.File = candidates[randInt(len(candidates))]
	data, ok := readGoFile(root, c.File)
	if !ok || !writable(root, c.File, uid) {
		return nil, "", fmt.Errorf("%s changed while it was read", c.File)
	}
	if fi, err := root.Lstat(c.File); err == nil {
		c.mode = fi.Mode().Perm()
	}
	var b bytes.Buffer
	b.Grow(len(data) + 1024)
	// The tests use the file's own name for "testing" when it has one, as
	// the file's tests do; else an import of their own under a fresh name.
	// `package x; import a "testing"`: the clause's line gains a
	// declaration and keeps its number, whatever follows the name (a
	// comment, an explicit semicolon), and so does every other line.
	name := testingName(data)
	if name == "" {
		fset := token.NewFileSet()
		pf, err := parser.ParseFile(fset, c.File, data, parser.PackageClauseOnly)
		if err != nil {
			return nil, "", err
		}
		name = drawName(names, fresh(func() string { return randLetters(6+randInt(4), false) }))
		end := fset.Position(pf.Name.End()).Offset
		b.Write(data[:end])
		fmt.Fprintf(&b, "; import %s \"testing\"", name)
		b.Write(data[end:])
	} else {
		b.Write(data)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString(canaryTest(name, c.Pass, true))
	b.WriteString(canaryTest(name, c.Fail, false))
	c.orig = data
	// O_TRUNC on the file the checks above read: it keeps its owner and
	// mode.
	w, err := root.OpenFile(c.File, os.O_WRONLY|os.O_TRUNC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, "", err
	}
	_, err = w.Write(b.Bytes())
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = c.unplant(root)
		return nil, "", err
	}
	return c, "", nil
}

// readGoFile reads the Go file at p for plantCanary: a regular file of at
// most maxCanaryFile bytes.
func readGoFile(root *os.Root, p string) ([]byte, bool) {
	fi, err := root.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxCanaryFile {
		return nil, false
	}
	data, err := root.ReadFile(p)
	if err != nil || len(data) > maxCanaryFile {
		return nil, false
	}
	return data, true
}

// writable reports whether plantCanary may write the file at p: the
// runner's (uid: the tree is its copy) and of one link. A hard link the
// agent's code made to a file that is not the tree's is never written.
func writable(root *os.Root, p string, uid int) bool {
	fi, err := root.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 1 && int(st.Uid) == uid
}

// testingName returns the name under which the Go file in data imports
// "testing", "" when it does not (or only as _ or .).
func testingName(data []byte) string {
	f, err := parser.ParseFile(token.NewFileSet(), "", data, parser.ImportsOnly)
	if err != nil {
		return ""
	}
	for _, imp := range f.Imports {
		if imp.Path.Value != `"testing"` {
			continue
		}
		if imp.Name == nil {
			return "testing"
		}
		if n := imp.Name.Name; n != "_" && n != "." {
			return n
		}
	}
	return ""
}

// hasConstraint reports whether the header of a Go file (what precedes
// its package clause) has a build constraint line.
func hasConstraint(header []byte) bool {
	for _, line := range strings.Split(string(header), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "//go:build") || strings.HasPrefix(line, "// +build") {
			return true
		}
	}
	return false
}

// osArchName reports whether a Go file's name constrains it to a GOOS or
// GOARCH (x_linux.go, x_arm64_test.go), as go/build reads it.
func osArchName(name string) bool {
	name, _, _ = strings.Cut(name, ".")
	i := strings.Index(name, "_")
	if i < 0 {
		return false
	}
	l := strings.Split(name[i:], "_")
	if n := len(l); n > 0 && l[n-1] == "test" {
		l = l[:n-1]
	}
	n := len(l)
	if n >= 2 && knownOS[l[n-2]] && knownArch[l[n-1]] {
		return true
	}
	return n >= 1 && (knownOS[l[n-1]] || knownArch[l[n-1]])
}

// knownOS and knownArch are go/build's (internal/syslist of Go 1.26).
var (
	knownOS = map[string]bool{
		"aix": true, "android": true, "darwin": true, "dragonfly": true, "freebsd": true,
		"hurd": true, "illumos": true, "ios": true, "js": true, "linux": true, "nacl": true,
		"netbsd": true, "openbsd": true, "plan9": true, "solaris": true, "wasip1": true,
		"windows": true, "zos": true,
	}
	knownArch = map[string]bool{
		"386": true, "amd64": true, "amd64p32": true, "arm": true, "armbe": true, "arm64": true,
		"arm64be": true, "loong64": true, "mips": true, "mipsle": true, "mips64": true,
		"mips64le": true, "mips64p32": true, "mips64p32le": true, "ppc": true, "ppc64": true,
		"ppc64le": true, "riscv": true, "riscv64": true, "s390": true, "s390x": true,
		"sparc": true, "sparc64": true, "wasm": true,
	}
)

// importPath returns the import path of the package in dir from the
// nearest go.mod at or above it in the tree; "" when there is none.
func importPath(root *os.Root, dir string) string {
	for d := dir; ; d = path.Dir(d) {
		data, ok := readGoMod(root, path.Join(d, "go.mod"))
		if ok {
			mod := modfile.ModulePath(data)
			if mod == "" {
				return ""
			}
			rel := strings.TrimPrefix(strings.TrimPrefix(dir, d), "/")
			if d == "." {
				rel = dir
			}
			return path.Join(mod, rel)
		}
		if d == "." {
			return ""
		}
	}
}

func readGoMod(root *os.Root, p string) ([]byte, bool) {
	fi, err := root.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxCanaryFile {
		return nil, false
	}
	data, err := root.ReadFile(p)
	return data, err == nil
}

// canaryTest is a test that must pass or must fail, in one of a few
// shapes an ordinary test has: nothing in it says whose it is.
func canaryTest(alias, name string, pass bool) string {
	off := 0
	if !pass {
		off = 1 + randInt(9)
	}
	switch randInt(3) {
	case 0:
		s := randLetters(3+randInt(12), false)
		return fmt.Sprintf("\nfunc %s(t *%s.T) {\n\ts := %q\n\tif got, want := len(s), %d; got != want {\n\t\tt.Errorf(\"len(%%q) = %%d, want %%d\", s, got, want)\n\t}\n}\n",
			name, alias, s, len(s)+off)
	case 1:
		a, b := 1+randInt(500), 1+randInt(500)
		return fmt.Sprintf("\nfunc %s(t *%s.T) {\n\ta, b := %d, %d\n\tif got := a + b; got != %d {\n\t\tt.Fatalf(\"%%d + %%d = %%d, want %%d\", a, b, got, %d)\n\t}\n}\n",
			name, alias, a, b, a+b+off, a+b+off)
	default:
		// No range over an int: the module's go line may be older than
		// Go 1.22.
		n := 2 + randInt(8)
		return fmt.Sprintf("\nfunc %s(t *%s.T) {\n\tvar xs []int\n\tfor i := 0; i < %d; i++ {\n\t\txs = append(xs, i)\n\t}\n\tif len(xs) != %d {\n\t\tt.Errorf(\"got %%d items, want %%d\", len(xs), %d)\n\t}\n}\n",
			name, alias, n, n+off, n+off)
	}
}

// testName draws a test's name: Test and two capitalised words of random
// letters, such as TestQmvoRtak.
func testName() string {
	return "Test" + randLetters(3+randInt(5), true) + randLetters(2+randInt(5), true)
}

// drawName draws names with draw until one is not in names, and adds it.
// Keywords are drawn again: an alias must be an identifier.
func drawName(names map[string]bool, draw func() string) string {
	for {
		n := draw()
		if !names[n] && !token.IsKeyword(n) {
			names[n] = true
			return n
		}
	}
}

// randLetters returns n random letters from crypto/rand, lower case, the
// first upper case when title is set.
func randLetters(n int, title bool) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, n)
	for i := range b {
		b[i] = letters[randInt(len(letters))]
	}
	if title && n > 0 {
		b[0] -= 'a' - 'A'
	}
	return string(b)
}

// randInt returns a uniform random int in [0, n) from crypto/rand.
func randInt(n int) int {
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		// crypto/rand's Reader does not fail (Go 1.24 and later).
		panic(err)
	}
	return int(v.Int64())
}

// canaryVerdict is what the canaries of one check showed.
type canaryVerdict struct {
	// OK: every canary of a package the report has behaved.
	OK bool
	// Forged says why the report is forged; "" when it is not.
	Forged string
	// Failed says why the check fails when the report is not forged but
	// the canaries do not make it pass (a crash before they ran).
	Failed string
	// Lines say what each canary showed, for the check's log.
	Lines []string
}

// judgeCanaries reads the canaries' outcomes in rep. The test that must
// fail passed: forged, whatever else happened (no binary that runs it
// honestly passes it). Either is missing, skipped or wrong otherwise:
// forged when the package's binary ran to its end, else (a crash, a build
// failure) only not passed. A package the report does not have at all was
// not tested by the script (a task may test fewer packages than its hidden
// tests touch): its canary is not judged, but one of some package must
// be.
func judgeCanaries(rep *TestReport, cs []*canary) canaryVerdict {
	v := canaryVerdict{OK: true}
	judged := 0
	for _, c := range cs {
		pass, passGroup := canaryOutcomes(rep, c.Pass)
		fail, failGroup := canaryOutcomes(rep, c.Fail)
		pkg := cmp.Or(passGroup, failGroup, c.Pkg)
		present, ended := rep.RanToEnd(pkg)
		where := c.Dir
		if pkg != "" {
			where = pkg
		}
		v.Lines = append(v.Lines, fmt.Sprintf("[ssebench: the grader's tests in %s (%s): %s must pass: %s; %s must fail: %s]",
			where, path.Base(c.File), c.Pass, outcomeText(pass), c.Fail, outcomeText(fail)))
		if pkg != "" && !present {
			v.Lines = append(v.Lines, fmt.Sprintf("[ssebench: the test report has no package %s: the test script does not test it]", pkg))
			continue
		}
		judged++
		var wrong string
		switch {
		case slices.Contains(fail, TestPass):
			v.OK = false
			v.Forged = cmp.Or(v.Forged, "the test that must fail passed")
			continue
		case !only(pass, TestPass):
			wrong = "the test that must pass " + outcomeWhy(pass)
		case !only(fail, TestFail):
			wrong = "the test that must fail " + outcomeWhy(fail)
		default:
			continue
		}
		v.OK = false
		if ended {
			v.Forged = cmp.Or(v.Forged, wrong+" in a test run that ran to its end")
			continue
		}
		v.Lines = append(v.Lines, fmt.Sprintf("[ssebench: the tests of %s did not run to their end (a crash, a timeout, an os.Exit or a build failure): %s]", where, wrong))
		v.Failed = cmp.Or(v.Failed, "the tests of "+where+" did not run to their end")
	}
	if judged == 0 && len(cs) > 0 {
		v.OK = false
		v.Failed = cmp.Or(v.Failed, "the test report has none of the packages the hidden tests touch")
	}
	return v
}

// canaryOutcomes are the outcomes the report has for the test called
// name, and the package of the first.
func canaryOutcomes(rep *TestReport, name string) (outcomes []string, group string) {
	for _, t := range rep.Tests {
		if t.Name != name {
			continue
		}
		if group == "" {
			group = t.Group
		}
		if !slices.Contains(outcomes, t.Outcome) {
			outcomes = append(outcomes, t.Outcome)
		}
	}
	return outcomes, group
}

// withoutCanaries returns rep's tests without the canaries': they are the
// grader's, and no list nor `dataset verify --write-tests` may see them.
func withoutCanaries(tests []TestResult, cs []*canary) []TestResult {
	return slices.DeleteFunc(tests, func(t TestResult) bool {
		return slices.ContainsFunc(cs, func(c *canary) bool { return t.Name == c.Pass || t.Name == c.Fail })
	})
}

// only reports whether outcomes is exactly the one outcome want.
func only(outcomes []string, want string) bool {
	return len(outcomes) == 1 && outcomes[0] == want
}

func outcomeText(outcomes []string) string {
	if len(outcomes) == 0 {
		return "not in the report"
	}
	return strings.Join(outcomes, ", ")
}

func outcomeWhy(outcomes []string) string {
	switch {
	case len(outcomes) == 0:
		return "is missing"
	case slices.Contains(outcomes, TestUnfinished):
		return "did not finish"
	case slices.Contains(outcomes, TestSkip):
		return "was skipped"
	case slices.Contains(outcomes, TestFail):
		return "failed"
	}
	return "passed"
}
