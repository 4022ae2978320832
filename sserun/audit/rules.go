package audit

import (
	"bytes"
	"regexp"
	"strings"
)

// The rules (contract.AuditFinding.Rule): short phrases a reader understands without
// this package, stable so that reports can count them. The package doc
// says where each applies and why.
const (
	RuleTestMain         = "TestMain added"
	RuleInit             = "init added"
	RuleReexecProcExe    = "re-exec of the test binary (/proc/self/exe)"
	RuleReexecExecutable = "re-exec of the test binary (os.Executable)"
	RuleReexecArgs0      = "re-exec of the test binary (os.Args[0])"
	RuleTestFlag         = "test binary flag in non-test code"
	RuleTestingTesting   = "testing.Testing() in non-test code"
	RuleStdout           = "os.Stdout replaced"
	RuleStderr           = "os.Stderr replaced"
	RuleMarkerEscape     = "test2json marker \\x16 in non-test code"
	RuleMarkerByte       = "raw 0x16 byte (the test2json marker)"
	RuleLinkname         = "go:linkname added"
	RuleProtected        = "protected path changed"
)

// RuleFraming is the rule of test2json framing text in non-test code:
// RuleFraming + " (" + the text + ")", e.g. "test2json framing in non-test
// code (--- PASS:)".
const RuleFraming = "test2json framing in non-test code"

// framing is the text test2json reads as the start or end of a test in
// the test binary's output (cmd/internal/test2json: the "=== " and
// "--- " prefixes it knows; "=== NAME" since Go 1.20). Code linked into
// the test binary that prints it can end a test that never ran, or pass
// one that failed.
var framing = []string{"--- PASS:", "--- FAIL:", "--- SKIP:", "--- BENCH:", "=== RUN", "=== PAUSE", "=== CONT", "=== NAME"}

// markerEscapes are the ways a Go literal spells the byte 0x16 (^V), which
// `go test -json` (Go 1.24 and later) puts before each framing line so
// that test2json can tell framing from a test's own output: code that
// writes it can forge a report however it is spelt.
var markerEscapes = []string{`\x16`, `\026`, `\u0016`, `\U00000016`}

// kind is what a file is, for the rules that apply to some files only.
type kind struct {
	goFile   bool // ends in .go
	testFile bool // ends in _test.go
}

func kindOf(path string) kind {
	return kind{goFile: strings.HasSuffix(path, ".go"), testFile: strings.HasSuffix(path, "_test.go")}
}

// nonTestGo is a Go file that is not a test: the code a fix changes, and
// the code that runs inside both the test binary and the real program.
func (k kind) nonTestGo() bool { return k.goFile && !k.testFile }

// A rule looks at one added line (or a window of a long one).
type rule struct {
	name string
	// applies says in which files the rule looks.
	applies func(kind) bool
	// code rules skip comment lines ("// ..."): what a comment says runs
	// nowhere, and comments that explain (`// the init below ...`) are
	// common.
	code bool
	// needsExec: reported only when the patch also starts a process in
	// non-test Go code (see RuleReexecArgs0).
	needsExec bool
	match     func(line []byte) bool
}

func anyGo(k kind) bool   { return k.goFile }
func anyFile(kind) bool   { return true }
func nonTest(k kind) bool { return k.nonTestGo() }

// re returns a matcher that looks for each of lits first (cheap, and
// rare in most lines) and only then runs the expression.
func re(expr string, lits ...string) func([]byte) bool {
	x := regexp.MustCompile(expr)
	var ls [][]byte
	for _, l := range lits {
		ls = append(ls, []byte(l))
	}
	return func(b []byte) bool {
		for _, l := range ls {
			if !bytes.Contains(b, l) {
				return false
			}
		}
		return x.Match(b)
	}
}

func contains(lit string) func([]byte) bool {
	l := []byte(lit)
	return func(b []byte) bool { return bytes.Contains(b, l) }
}

func containsAny(lits []string) func([]byte) bool {
	var ls [][]byte
	for _, l := range lits {
		ls = append(ls, []byte(l))
	}
	return func(b []byte) bool {
		for _, l := range ls {
			if bytes.Contains(b, l) {
				return true
			}
		}
		return false
	}
}

// streamReplaced matches an assignment to os.Stdout or os.Stderr: `os.Stdout
// = w`, `*os.Stdout = *f`, and the tuple forms `os.Stdout, os.Stderr = w,
// w` and `w, os.Stdout = os.Stdout, w` (the regexp starts at the stream,
// then allows further plain operands before the `=`, not `==`). A call
// `fmt.Fprintln(os.Stdout, a == b)` does not match: its `==` is not an
// assignment, and a quoted argument stops the operand list.
func streamReplaced(name string) func([]byte) bool {
	return re(`\bos\s*\.\s*`+name+`\s*(,\s*\*?[\w.]+(\[[^\]]*\])?\s*)*=([^=]|$)`, name, "=")
}

// rules are the line rules, in the order their findings for one line are
// listed.
var rules = []rule{
	// TestMain takes over the test binary: it decides what runs and what
	// the binary exits with. A fix never needs one; a TestMain in a
	// non-test file is not run by go test, but is as odd.
	{name: RuleTestMain, applies: anyGo, code: true, match: re(`\bfunc\s+TestMain\s*\(`, "TestMain", "func")},
	// An init runs in the test binary before any test, from non-test code
	// too; a fix does not need to run code at load time. `func init(` is
	// always a top-level declaration: a method has its receiver first and a
	// function literal has no name.
	{name: RuleInit, applies: anyGo, code: true, match: re(`\bfunc\s+init\s*\(`, "init", "func")},
	// Naming the running binary through procfs serves only to run or
	// read it again, in a test or not: flagged alone. /proc/<pid>/exe and
	// /proc/thread-self/exe are the same file.
	{name: RuleReexecProcExe, applies: anyGo, code: true, match: re(`/proc/[^/\s"]*/exe`, "/exe", "/proc/")},
	// In the test binary os.Executable is the test binary; a library's fix
	// does not need where its own program lies. Flagged alone, in non-test
	// code only: a test that re-runs itself as a helper process is a Go
	// idiom (and test files are protected paths anyway).
	{name: RuleReexecExecutable, applies: nonTest, code: true, match: re(`\bos\s*\.\s*Executable\s*\(`, "Executable")},
	// os.Args[0] alone is mostly a usage message's program name, which a
	// fix to a command may well touch; it is flagged only when the patch
	// also starts a process from non-test code (processStart), anywhere in
	// the patch, so that moving the two into different files does not hide
	// it.
	{name: RuleReexecArgs0, applies: nonTest, code: true, needsExec: true, match: re(`\bos\s*\.\s*Args\s*\[\s*0\s*\]`, "Args")},
	// The test binary's flags ("-test.run=^$", flag.Lookup("test.v")) are
	// how code re-runs the binary on a chosen set of tests, or learns that
	// it is under test; non-test code never needs them.
	{name: RuleTestFlag, applies: nonTest, code: true, match: re(`["\-]test\.(run|v|skip|list|count|timeout|failfast|shuffle|parallel|cpu|short|bench|benchtime|benchmem|paniconexit0|testlogfile|outputdir|fullpath|gocoverdir|coverprofile|cpuprofile|memprofile|blockprofile|mutexprofile|trace)\b`, "test.")},
	// testing.Testing reports whether the code runs under go test: code
	// that asks can behave one way for the grader and another for users.
	// Any call of a Testing() with no arguments is matched, so an
	// aliased or dot import of "testing" does not hide it.
	{name: RuleTestingTesting, applies: nonTest, code: true, match: re(`\bTesting\s*\(\s*\)`, "Testing")},
	// Replacing the output streams lets code linked into the test binary
	// filter or rewrite what test2json reads. Only non-test code: a test
	// capturing output this way is common, and test files are protected.
	{name: RuleStdout, applies: nonTest, code: true, match: streamReplaced("Stdout")},
	{name: RuleStderr, applies: nonTest, code: true, match: streamReplaced("Stderr")},
	// The framing text and the marker byte are test2json's input: written
	// by non-test code they forge test results. Test files are not
	// searched: a test of code that parses `go test` output holds them
	// (and test files are protected paths). Text in comments is skipped.
	{name: RuleFraming, applies: nonTest, code: true, match: containsAny(framing)},
	{name: RuleMarkerEscape, applies: nonTest, code: true, match: containsAny(markerEscapes)},
	// A raw 0x16 byte has no business in any text file, test or not, Go or
	// not (a data file can be embedded and printed): flagged everywhere,
	// comments included.
	{name: RuleMarkerByte, applies: anyFile, match: func(b []byte) bool { return bytes.IndexByte(b, 0x16) >= 0 }},
	// go:linkname reaches into another package's unexported symbols (the
	// testing package's, the runtime's): a fix never needs it.
	{name: RuleLinkname, applies: anyGo, match: contains("//go:linkname")},
}

// processStart matches the start of a process from Go: with os.Args[0] it
// makes a re-exec (RuleReexecArgs0). Package names are required, so that
// database/sql's db.Exec does not count.
var processStart = func() func([]byte) bool {
	lits := containsAny([]string{"Command", "StartProcess", "Exec"})
	x := re(`\b(exec\s*\.\s*Command(Context)?|os\s*\.\s*StartProcess|syscall\s*\.\s*(Exec|ForkExec|StartProcess)|unix\s*\.\s*Exec)\s*\(`)
	return func(b []byte) bool { return lits(b) && x(b) }
}()

// framingRule names the framing text a line holds: RuleFraming with the
// first framing text found.
func framingRule(line []byte) string {
	for _, f := range framing {
		if bytes.Contains(line, []byte(f)) {
			return RuleFraming + " (" + f + ")"
		}
	}
	return RuleFraming
}
