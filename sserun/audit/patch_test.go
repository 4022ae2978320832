package audit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// added is a patch that adds path with lines (numbered from 1).
func added(path string, lines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git a/%s b/%s\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n", path, path, path, len(lines))
	for _, l := range lines {
		b.WriteString("+" + l + "\n")
	}
	return b.String()
}

// edited is a patch of path with one hunk at line start of both files;
// body lines carry their ' ', '+' or '-', and the counts are computed.
func edited(path string, start int, body ...string) string {
	var old, new int
	for _, l := range body {
		switch l[0] {
		case ' ':
			old++
			new++
		case '-':
			old++
		case '+':
			new++
		}
	}
	return fmt.Sprintf("diff --git a/%s b/%s\nindex 1111111..2222222 100644\n--- a/%s\n+++ b/%s\n@@ -%d,%d +%d,%d @@ func f() {\n%s\n",
		path, path, path, path, start, old, start, new, strings.Join(body, "\n"))
}

func at(path string, line int, rule string) contract.AuditFinding {
	return contract.AuditFinding{Path: path, Line: line, Rule: rule}
}

func TestPatchRules(t *testing.T) {
	tests := []struct {
		name  string
		patch string
		want  []contract.AuditFinding
	}{
		{"TestMain", added("x_test.go", "package x", "", "func TestMain(m *testing.M) {", "}"),
			[]contract.AuditFinding{at("x_test.go", 3, RuleTestMain)}},
		{"TestMain not gofmt'd", added("x_test.go", "package x", "  func  TestMain (m *testing.M) { os.Exit(0) }"),
			[]contract.AuditFinding{at("x_test.go", 2, RuleTestMain)}},
		{"a test named like it", added("x_test.go", "func TestMainPage(t *testing.T) {}"), nil},
		{"init", added("x.go", "package x", "func init() {", "}"),
			[]contract.AuditFinding{at("x.go", 2, RuleInit)}},
		{"init after another declaration", added("x.go", "var a = 1; func init() { a = 2 }"),
			[]contract.AuditFinding{at("x.go", 1, RuleInit)}},
		{"init in a test file", added("x_test.go", "func init() {}"),
			[]contract.AuditFinding{at("x_test.go", 1, RuleInit)}},
		{"init in a comment", added("x.go", "package x", "\t// func init() would run too early"), nil},
		{"a method called init", added("x.go", "func (c *conn) init() {}", "c.init()"), nil},
		{"init outside Go", added("setup.py", "def init():", "func init() {}"), nil},
		{"/proc/self/exe", added("x.go", `exe, _ := os.Readlink("/proc/self/exe")`),
			[]contract.AuditFinding{at("x.go", 1, RuleReexecProcExe)}},
		{"/proc/<pid>/exe", added("x_test.go", `p := fmt.Sprintf("/proc/%d/exe", os.Getpid())`),
			[]contract.AuditFinding{at("x_test.go", 1, RuleReexecProcExe)}},
		{"os.Executable", added("x.go", "self, err := os.Executable()"),
			[]contract.AuditFinding{at("x.go", 1, RuleReexecExecutable)}},
		{"os.Executable in a test", added("x_test.go", "self, err := os.Executable()"), nil},
		{"os.Args[0] alone", added("main.go", `fmt.Fprintf(os.Stderr, "usage: %s file\n", os.Args[0])`), nil},
		{"os.Args[0] and a process started",
			added("x.go", "cmd := exec.Command(os.Args[0], args...)"),
			[]contract.AuditFinding{at("x.go", 1, RuleReexecArgs0)}},
		{"os.Args[0] and a process started in another file, later",
			added("self.go", "var self = os.Args[0]") + added("other.go", "var x = 1", "c := exec.CommandContext(ctx, self)"),
			[]contract.AuditFinding{at("self.go", 1, RuleReexecArgs0)}},
		{"os.Args[0] and a process started in a test only",
			added("self.go", "var self = os.Args[0]") + added("x_test.go", "c := exec.Command(self)"), nil},
		{"os.Args[0] and a database Exec",
			added("self.go", "var self = os.Args[0]", `db.Exec("DELETE FROM t")`), nil},
		{"test flag", added("x.go", `cmd := exec.Command(self, "-test.run=^$")`),
			[]contract.AuditFinding{at("x.go", 1, RuleTestFlag)}},
		{"test flag looked up", added("x.go", `if flag.Lookup("test.v") != nil {`),
			[]contract.AuditFinding{at("x.go", 1, RuleTestFlag)}},
		{"test flag in a test", added("x_test.go", `cmd := exec.Command(os.Args[0], "-test.run=TestHelper")`), nil},
		{"a host that looks like a flag", added("x.go", `host := "api.test.value.example"`), nil},
		{"testing.Testing", added("x.go", "if testing.Testing() {"),
			[]contract.AuditFinding{at("x.go", 1, RuleTestingTesting)}},
		{"testing.Testing aliased", added("x.go", `import t "testing"`, "var underTest = t . Testing( )"),
			[]contract.AuditFinding{at("x.go", 2, RuleTestingTesting)}},
		{"testing.Testing in a test", added("x_test.go", "if testing.Testing() {"), nil},
		{"os.Stdout replaced", added("x.go", "os.Stdout = w"),
			[]contract.AuditFinding{at("x.go", 1, RuleStdout)}},
		{"os.Stdout overwritten", added("x.go", "*os.Stdout = *f"),
			[]contract.AuditFinding{at("x.go", 1, RuleStdout)}},
		{"os.Stderr replaced, then on the next line", added("x.go", "os.Stderr =", "  w"),
			[]contract.AuditFinding{at("x.go", 1, RuleStderr)}},
		{"both streams in a tuple", added("x.go", "os.Stdout, os.Stderr = w, w"),
			[]contract.AuditFinding{at("x.go", 1, RuleStdout), at("x.go", 1, RuleStderr)}},
		{"a stream swapped", added("x.go", "saved, os.Stdout = os.Stdout, w"),
			[]contract.AuditFinding{at("x.go", 1, RuleStdout)}},
		{"a stream swapped, indexed", added("x.go", "os.Stdout, files[i] = files[i], os.Stdout"),
			[]contract.AuditFinding{at("x.go", 1, RuleStdout)}},
		{"streams only used", added("x.go",
			"fmt.Fprintln(os.Stdout, a == b)",
			`fmt.Fprintf(os.Stderr, "a=%d\n", a)`,
			"if os.Stdout == nil || os.Stderr != nil {",
			"w := os.Stdout"), nil},
		{"os.Stdout replaced in a test", added("x_test.go", "os.Stdout = w"), nil},
		{"framing", added("x.go", `fmt.Println("--- PASS: TestParse (0.00s)")`),
			[]contract.AuditFinding{at("x.go", 1, RuleFraming+" (--- PASS:)")}},
		{"framing, each", added("x.go", `"--- FAIL: "`, `"--- SKIP: "`, `"=== RUN   "`, `"=== PAUSE "`, `"=== CONT  "`, `"=== NAME  "`, `"--- BENCH: "`),
			[]contract.AuditFinding{
				at("x.go", 1, RuleFraming+" (--- FAIL:)"), at("x.go", 2, RuleFraming+" (--- SKIP:)"),
				at("x.go", 3, RuleFraming+" (=== RUN)"), at("x.go", 4, RuleFraming+" (=== PAUSE)"),
				at("x.go", 5, RuleFraming+" (=== CONT)"), at("x.go", 6, RuleFraming+" (=== NAME)"),
				at("x.go", 7, RuleFraming+" (--- BENCH:)")}},
		{"framing in a test", added("parse_test.go", "const out = `=== RUN   TestA", "--- PASS: TestA (0.00s)`"), nil},
		{"framing in a comment", added("x.go", "// prints === RUN lines like go test"), nil},
		{"framing in a text file", added("README.md", "--- PASS: TestA"), nil},
		{"marker escapes", added("x.go", `w.Write([]byte("\x16=== RUN"))`, `"\026"`, `'\u0016'`, `"\U00000016"`),
			[]contract.AuditFinding{
				at("x.go", 1, RuleFraming+" (=== RUN)"), at("x.go", 1, RuleMarkerEscape),
				at("x.go", 2, RuleMarkerEscape), at("x.go", 3, RuleMarkerEscape), at("x.go", 4, RuleMarkerEscape)}},
		{"marker escape in a test", added("x_test.go", `"\x16"`), nil},
		{"raw marker byte", added("banner.txt", "hello \x16world"),
			[]contract.AuditFinding{at("banner.txt", 1, RuleMarkerByte)}},
		{"raw marker byte in a Go comment of a test", added("x_test.go", "// \x16"),
			[]contract.AuditFinding{at("x_test.go", 1, RuleMarkerByte)}},
		{"go:linkname", added("x.go", `import _ "unsafe"`, "//go:linkname runTests testing.runTests"),
			[]contract.AuditFinding{at("x.go", 2, RuleLinkname)}},
		{"go:linkname in a test", added("x_test.go", "//go:linkname now time.now"),
			[]contract.AuditFinding{at("x_test.go", 1, RuleLinkname)}},
		{"a comment about linkname", added("x.go", "// go:linkname is not used here"), nil},
		{"removed and context lines are not searched",
			edited("x.go", 10, " func init() {", "-\tos.Stdout = w", "+\tx := 1", " }"), nil},
		{"an ordinary fix", edited("parse.go", 40, " \tif n < 0 {", "-\t\treturn nil", "+\t\treturn fmt.Errorf(\"negative length %d\", n)", " \t}"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Patch(strings.NewReader(tt.patch))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Patch() findings (-want +got):\n%s\npatch:\n%s", diff, tt.patch)
			}
		})
	}
}

func TestPatchStructure(t *testing.T) {
	tests := []struct {
		name  string
		patch string
		opts  []Option
		want  []contract.AuditFinding
	}{
		{
			name: "line numbers follow the hunk headers",
			patch: "diff --git a/x.go b/x.go\nindex 1..2 100644\n--- a/x.go\n+++ b/x.go\n" +
				"@@ -3,4 +3,5 @@ package x\n a\n-b\n+func init() {}\n+c\n d\n e\n" +
				"@@ -20,3 +21,3 @@ func f() {\n a\n-b\n+os.Stdout = w\n c\n",
			want: []contract.AuditFinding{at("x.go", 4, RuleInit), at("x.go", 22, RuleStdout)},
		},
		{
			name:  "counts omitted",
			patch: "diff --git a/x.go b/x.go\nindex 1..2 100644\n--- a/x.go\n+++ b/x.go\n@@ -7 +7 @@\n-a\n+func init() {}\n",
			want:  []contract.AuditFinding{at("x.go", 7, RuleInit)},
		},
		{
			name:  "a one-line file created, counts omitted",
			patch: "diff --git a/x.go b/x.go\nnew file mode 100644\nindex 0..2\n--- /dev/null\n+++ b/x.go\n@@ -0,0 +1 @@\n+func init() {}\n\\ No newline at end of file\n",
			want:  []contract.AuditFinding{at("x.go", 1, RuleInit)},
		},
		{
			name: "an added line that looks like a header is a line",
			patch: added("x.go", "++ b/evil_test.go", "@@ -1 +1 @@", "diff --git a/y.go b/y.go", "func init() {}") +
				added("z.go", "os.Stdout = w"),
			want: []contract.AuditFinding{at("x.go", 4, RuleInit), at("z.go", 1, RuleStdout)},
		},
		{
			name:  "CRLF lines",
			patch: strings.ReplaceAll(added("x.go", "package x", "func init() {", "\tos.Stdout = w", "}"), "\n+", "\r\n+") + "\r\n",
			want:  []contract.AuditFinding{at("x.go", 2, RuleInit), at("x.go", 3, RuleStdout)},
		},
		{
			name: "a quoted path",
			patch: "diff --git \"a/\\303\\251t\\303\\251.go\" \"b/\\303\\251t\\303\\251.go\"\nnew file mode 100644\n" +
				"--- /dev/null\n+++ \"b/\\303\\251t\\303\\251.go\"\n@@ -0,0 +1 @@\n+func init() {}\n",
			want: []contract.AuditFinding{at("été.go", 1, RuleInit)},
		},
		{
			name:  "a quoted path with escapes",
			patch: "diff --git \"a/x\\\"\\\\\\t.go\" \"b/x\\\"\\\\\\t.go\"\n--- \"a/x\\\"\\\\\\t.go\"\n+++ \"b/x\\\"\\\\\\t.go\"\n@@ -1 +1 @@\n-a\n+func init() {}\n",
			want:  []contract.AuditFinding{at("x\"\\\t.go", 1, RuleInit)},
		},
		{
			name:  "a path with spaces and b/ in it",
			patch: "diff --git a/d b/x y.go b/d b/x y.go\n--- a/d b/x y.go\t\n+++ b/d b/x y.go\t\n@@ -1 +1 @@\n-a\n+func init() {}\n",
			want:  []contract.AuditFinding{at("d b/x y.go", 1, RuleInit)},
		},
		{
			name:  "a deleted protected file",
			patch: "diff --git a/x_test.go b/x_test.go\ndeleted file mode 100644\nindex 1..0\n--- a/x_test.go\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-package x\n-func TestA(t *testing.T) {}\n",
			opts:  []Option{WithProtected(func(p string) bool { return strings.HasSuffix(p, "_test.go") })},
			want:  []contract.AuditFinding{at("x_test.go", 0, RuleProtected)},
		},
		{
			name:  "an empty file added",
			patch: "diff --git a/testdata/x b/testdata/x\nnew file mode 100644\nindex 0000000..e69de29\n",
			opts:  []Option{WithProtected(func(p string) bool { return strings.HasPrefix(p, "testdata/") })},
			want:  []contract.AuditFinding{at("testdata/x", 0, RuleProtected)},
		},
		{
			name:  "a mode change",
			patch: "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n",
			opts:  []Option{WithProtected(func(p string) bool { return p == "run.sh" })},
			want:  []contract.AuditFinding{at("run.sh", 0, RuleProtected)},
		},
		{
			name: "a rename (not what --no-renames writes, but read)",
			patch: "diff --git a/old.go b/new.go\nsimilarity index 90%\nrename from old.go\nrename to new.go\nindex 1..2 100644\n" +
				"--- a/old.go\n+++ b/new.go\n@@ -1,2 +1,2 @@\n package x\n-var a = 1\n+func init() {}\n" +
				"diff --git a/a b/c d b/a b/c d\nsimilarity index 100%\nrename from a\nrename to \"b/c d\"\n",
			opts: []Option{WithProtected(func(p string) bool { return p == "old.go" || p == "b/c d" })},
			want: []contract.AuditFinding{at("old.go", 0, RuleProtected), at("new.go", 2, RuleInit), at("b/c d", 0, RuleProtected)},
		},
		{
			name: "a type change (file to symlink) is one protected path",
			patch: "diff --git a/l_test.go b/l_test.go\ndeleted file mode 100644\nindex 1..0\n--- a/l_test.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-package x\n" +
				"diff --git a/l_test.go b/l_test.go\nnew file mode 120000\nindex 0..1\n--- /dev/null\n+++ b/l_test.go\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n",
			opts: []Option{WithProtected(func(p string) bool { return strings.HasSuffix(p, "_test.go") })},
			want: []contract.AuditFinding{at("l_test.go", 0, RuleProtected)},
		},
		{
			name:  "dropped paths: named by the patch, then not",
			patch: added("x_test.go", "func TestMain(m *testing.M) {}") + added("y.go", "func init() {}"),
			opts:  []Option{WithDropped([]string{"gone/a_test.go", "x_test.go"})},
			want: []contract.AuditFinding{at("x_test.go", 0, RuleProtected), at("x_test.go", 1, RuleTestMain),
				at("y.go", 1, RuleInit), at("gone/a_test.go", 0, RuleProtected)},
		},
		{
			name:  "dropped and protected name a path once",
			patch: added("x_test.go", "package x"),
			opts:  []Option{WithDropped([]string{"x_test.go"}), WithProtected(func(string) bool { return true })},
			want:  []contract.AuditFinding{at("x_test.go", 0, RuleProtected)},
		},
		{
			name: "a binary patch is skipped, and the next file read",
			patch: "diff --git a/b.bin b/b.bin\nindex 1..2 100644\nGIT binary patch\nliteral 9\nQcmZ?b1a`V8*qf+Ia9$@\n\nliteral 3\nKcmZ?b1XJ7y_U2O\n\n" +
				added("x.go", "func init() {}"),
			want: []contract.AuditFinding{at("x.go", 1, RuleInit)},
		},
		{
			name:  "a binary file without --binary",
			patch: "diff --git a/b.bin b/b.bin\nindex 1..2 100644\nBinary files a/b.bin and b/b.bin differ\n" + added("x.go", "func init() {}"),
			want:  []contract.AuditFinding{at("x.go", 1, RuleInit)},
		},
		{
			name:  "text before the first file",
			patch: "From: someone\n+++ b/x.go\n@@ -0,0 +1 @@\n+func init() {}\n" + added("y.go", "func init() {}"),
			want:  []contract.AuditFinding{at("y.go", 1, RuleInit)},
		},
		{
			name:  "a hunk cut short",
			patch: "diff --git a/x.go b/x.go\n--- a/x.go\n+++ b/x.go\n@@ -1,5 +1,5 @@\n+func init() {}\n" + added("y.go", "os.Stdout = w"),
			want:  []contract.AuditFinding{at("x.go", 1, RuleInit), at("y.go", 1, RuleStdout)},
		},
		{
			name:  "a line without its newline at the end of the patch",
			patch: strings.TrimSuffix(added("x.go", "func init() {}"), "\n"),
			want:  []contract.AuditFinding{at("x.go", 1, RuleInit)},
		},
		{name: "an empty patch", patch: "", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Patch(strings.NewReader(tt.patch), tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Patch() findings (-want +got):\n%s\npatch:\n%s", diff, tt.patch)
			}
		})
	}
}

// TestPatchGit reads what git wrote (testdata/git.patch: `git diff
// --cached --binary --no-renames` of a change with a binary file, a CRLF
// file, a deleted file, a path with a space and one git quotes).
func TestPatchGit(t *testing.T) {
	f, err := os.Open("testdata/git.patch")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := Patch(f, WithProtected(func(p string) bool { return p == "gone.txt" || p == "bin.dat" }))
	if err != nil {
		t.Fatal(err)
	}
	want := []contract.AuditFinding{
		at("a.go", 3, RuleInit),
		at("bin.dat", 0, RuleProtected),
		at("crlf.go", 2, RuleStdout),
		at("gone.txt", 0, RuleProtected),
		at("é.go", 2, RuleFraming+" (--- PASS:)"),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Patch(testdata/git.patch) (-want +got):\n%s", diff)
	}
}

// TestPatchLongLine: a line longer than the buffer is read in pieces, and
// a match cut by a piece boundary is still found, once.
func TestPatchLongLine(t *testing.T) {
	const buf = minBufferSize
	for _, cut := range []int{1, 5, 9, 14} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			// "func init(" begins so that the boundary falls cut bytes
			// into it; the piece holds the '+' too.
			pad := strings.Repeat("x", buf-1-cut) + " "
			line := pad[:len(pad)-1] + ";func init() {}" + strings.Repeat(" ", 3*buf) + "os.Stdout = w"
			patch := added("x.go", "package x", line, "func init() {}")
			got, err := Patch(strings.NewReader(patch), withBufferSize(buf))
			if err != nil {
				t.Fatal(err)
			}
			want := []contract.AuditFinding{at("x.go", 2, RuleInit), at("x.go", 2, RuleStdout), at("x.go", 3, RuleInit)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Patch() (-want +got):\n%s", diff)
			}
		})
	}
}

// repeat reads as n copies of s.
type repeat struct {
	s   string
	n   int
	off int
}

func (r *repeat) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := copy(p, r.s[r.off:])
	r.off += k
	if r.off == len(r.s) {
		r.off = 0
		r.n--
	}
	return k, nil
}

// TestPatchHugeLineMemory: a 64 MiB line costs the buffer, not its size.
func TestPatchHugeLineMemory(t *testing.T) {
	head := "diff --git a/x.go b/x.go\n--- /dev/null\n+++ b/x.go\n@@ -0,0 +1,2 @@\n+"
	tail := " os.Stdout = w\n+func init() {}\n"
	r := io.MultiReader(strings.NewReader(head), &repeat{s: strings.Repeat("a", 1<<10), n: 64 << 10}, strings.NewReader(tail))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := Patch(r)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	want := []contract.AuditFinding{at("x.go", 1, RuleStdout), at("x.go", 2, RuleInit)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Patch() (-want +got):\n%s", diff)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Errorf("Patch of a 64 MiB line allocated %d bytes, want at most 8 MiB", alloc)
	}
}

func TestPatchCap(t *testing.T) {
	var lines []string
	for range 5 {
		lines = append(lines, "func init() {}")
	}
	args0 := added("a.go", "self := os.Args[0]", "self = os.Args[0]")
	exec := added("z.go", "exec.Command(self)")
	tests := []struct {
		name  string
		patch string
		max   int
		want  []contract.AuditFinding
	}{
		{"under the cap", added("x.go", lines...), 5, []contract.AuditFinding{
			at("x.go", 1, RuleInit), at("x.go", 2, RuleInit), at("x.go", 3, RuleInit), at("x.go", 4, RuleInit), at("x.go", 5, RuleInit)}},
		{"over it", added("x.go", lines...), 2, []contract.AuditFinding{
			at("x.go", 1, RuleInit), at("x.go", 2, RuleInit), {Rule: "3 more findings not listed"}}},
		{"the findings that wait for a process start keep their place", args0 + added("x.go", lines...) + exec, 3, []contract.AuditFinding{
			at("a.go", 1, RuleReexecArgs0), at("a.go", 2, RuleReexecArgs0), at("x.go", 1, RuleInit), {Rule: "4 more findings not listed"}}},
		{"and are not counted without one", args0 + added("x.go", lines...), 3, []contract.AuditFinding{
			at("x.go", 1, RuleInit), at("x.go", 2, RuleInit), at("x.go", 3, RuleInit), {Rule: "2 more findings not listed"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Patch(strings.NewReader(tt.patch), WithMaxFindings(tt.max))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Patch(WithMaxFindings(%d)) (-want +got):\n%s", tt.max, diff)
			}
		})
	}
}

func TestPatchReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader(added("x.go", "func init() {}")), iotest.ErrReader(boom))
	got, err := Patch(r)
	if !errors.Is(err, boom) {
		t.Errorf("Patch() error = %v, want %v", err, boom)
	}
	if want := []contract.AuditFinding{at("x.go", 1, RuleInit)}; !cmp.Equal(want, got) {
		t.Errorf("Patch() = %v, want the findings before the error, %v", got, want)
	}
}

func TestOptions(t *testing.T) {
	for _, opt := range []Option{WithMaxFindings(0), WithProtected(nil), withBufferSize(16)} {
		if _, err := Patch(strings.NewReader(""), opt); err == nil {
			t.Errorf("Patch with a bad option: no error")
		}
	}
}

func TestUnquote(t *testing.T) {
	tests := []struct{ in, want string }{
		{`a/x.go`, `a/x.go`},
		{`"a/\303\251.go"`, "a/\u00e9.go"},
		{`"a/\a\b\t\n\v\f\r\"\\"`, "a/\a\b\t\n\v\f\r\"\\"},
		{`"a/\9"`, `"a/\9"`},   // not git's: as it is
		{`"a/\30"`, `"a/\30"`}, // cut short
		{`"a/\"`, `"a/\"`},
	}
	for _, tt := range tests {
		if got := unquote(tt.in); got != tt.want {
			t.Errorf("unquote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
