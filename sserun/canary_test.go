package sserun

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTestDirs(t *testing.T) {
	patch := "diff --git a/p/a_test.go b/p/a_test.go\n--- a/p/a_test.go\n+++ b/p/a_test.go\n@@ -1 +1 @@\n-x\n+y\n" +
		"diff --git a/q/r/new_test.go b/q/r/new_test.go\nnew file mode 100644\n--- /dev/null\n+++ b/q/r/new_test.go\n@@ -0,0 +1 @@\n+z\n" +
		"diff --git a/gone/old_test.go b/gone/old_test.go\ndeleted file mode 100644\n--- a/gone/old_test.go\n+++ /dev/null\n@@ -1 +0,0 @@\n-z\n" +
		"diff --git a/p/testdata/x_test.go b/p/testdata/x_test.go\nnew file mode 100644\n--- /dev/null\n+++ b/p/testdata/x_test.go\n@@ -0,0 +1 @@\n+z\n" +
		"diff --git a/lib.go b/lib.go\n--- a/lib.go\n+++ b/lib.go\n@@ -1 +1 @@\n-x\n+y\n" +
		"diff --git a/root_test.go b/root_test.go\n--- a/root_test.go\n+++ b/root_test.go\n@@ -1 +1 @@\n-x\n+y\n"
	got, err := testDirs([]byte(patch))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{".", "p", "q/r"}, got); diff != "" {
		t.Errorf("testDirs (-want +got):\n%s", diff)
	}
}

// writeTree writes files (slash path → content) under a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		write(t, filepath.Join(dir, filepath.FromSlash(name)), content, 0o644)
	}
	return dir
}

// TestPlantCanaryKeepsLines: the tests go at the end of the file and use
// its own import of "testing"; a file without one gets its import on the
// package clause's own line, whatever follows the name there. So every
// line of the file keeps its number (a test's failure names its line), and
// unplanting gives the file back byte for byte.
func TestPlantCanaryKeepsLines(t *testing.T) {
	cases := []struct {
		name, file string
		clause     bool // the package clause's line gains the import
	}{
		{name: "plain", file: "package calc\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {\n\tt.Log(1)\n}\n"},
		{name: "named import", file: "package calc\n\nimport (\n\ttt \"testing\"\n)\n\nfunc TestX(t *tt.T) {}"},
		{name: "helpers only", file: "package calc\n\nfunc helper() int { return 1 }\n", clause: true},
		{name: "blank import", file: "package calc\n\nimport _ \"testing\"\n", clause: true},
		{name: "header and import comment", file: "// Copyright\n// the authors.\n\n// Package calc adds.\npackage calc // import \"example.invalid/m/c4\"\n\nvar x = 1\n", clause: true},
		{name: "block comment across lines", file: "package calc /* one\ntwo */\n\nvar x = 1", clause: true},
		{name: "semicolon", file: "package calc_test; var x = 1\n", clause: true},
	}
	// One package a case, in one module.
	files := map[string]string{"go.mod": "module example.invalid/m\n\ngo 1.16\n"}
	var dirs []string
	for i, tt := range cases {
		dir := fmt.Sprintf("c%d", i)
		dirs = append(dirs, dir)
		files[dir+"/calc.go"] = "package calc\n"
		files[dir+"/calc_test.go"] = tt.file
	}
	tree := writeTree(t, files)
	cs, notes, err := plantCanaries(tree, dirs, os.Getuid(), os.Getgid(), false)
	if err != nil || len(cs) != len(cases) || len(notes) != 0 {
		t.Fatalf("plantCanaries = %v, %q, %v", cs, notes, err)
	}
	for i, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c := cs[i]
			if c.File != dirs[i]+"/calc_test.go" || c.Pkg != "example.invalid/m/"+dirs[i] {
				t.Fatalf("the canary went into %s of %s, want %s/calc_test.go of example.invalid/m/%[3]s", c.File, c.Pkg, dirs[i])
			}
			data, err := os.ReadFile(filepath.Join(tree, filepath.FromSlash(c.File)))
			if err != nil {
				t.Fatal(err)
			}
			before, after := strings.Split(strings.TrimSuffix(tt.file, "\n"), "\n"), strings.Split(string(data), "\n")
			changed := 0
			for i, line := range before {
				if after[i] == line {
					continue
				}
				changed++
				if f := strings.Fields(line); !strings.HasPrefix(line, "package ") || !strings.HasPrefix(after[i], "package "+strings.Trim(f[1], ";")+"; import ") {
					t.Errorf("line %d = %q, want %q", i+1, after[i], line)
				}
			}
			if want := map[bool]int{true: 1}[tt.clause]; changed != want {
				t.Errorf("%d lines changed, want %d\n%s", changed, want, data)
			}
			f, err := parser.ParseFile(token.NewFileSet(), c.File, data, 0)
			if err != nil {
				t.Fatalf("the planted file does not parse: %v\n%s", err, data)
			}
			var funcs []string
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok {
					funcs = append(funcs, fd.Name.Name)
				}
			}
			if !slices.Contains(funcs, c.Pass) || !slices.Contains(funcs, c.Fail) || c.Pass == c.Fail {
				t.Errorf("the file's tests are %q, want %s and %s among them", funcs, c.Pass, c.Fail)
			}
		})
	}
	// The planted files compile (a go line older than Go 1.22 included),
	// and the canaries do what they must.
	if !testing.Short() {
		cmd := exec.Command("go", "test", "-count=1", "-json", "./...")
		cmd.Dir, cmd.Env = tree, append(goEnv(), "HOME="+t.TempDir())
		out, _ := cmd.Output()
		rep, err := ParseTestReport(bytes.NewReader(out), FormatGoTestJSON)
		if err != nil {
			t.Fatal(err)
		}
		if v := judgeCanaries(rep, cs); !v.OK {
			t.Errorf("judgeCanaries = %+v, want ok; go test said:\n%s", v, rep.Output)
		}
	}
	if err := unplantCanaries(tree, cs); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if back, _ := os.ReadFile(filepath.Join(tree, filepath.FromSlash(name))); string(back) != content {
			t.Errorf("after unplanting %s is %q, want %q", name, back, content)
		}
	}
}

// TestPlantCanaryChoosesFile: a file with a build constraint (a line or
// a GOOS/GOARCH suffix) never gets the canary, the others each get it
// some time; without any, a new file in the package's name does (when
// plantCanaries may create one), and unplanting removes it. A directory
// without a package gets none.
func TestPlantCanaryChoosesFile(t *testing.T) {
	constrained := map[string]string{
		"p/p.go":               "package p\n",
		"p/gen.go":             "//go:build ignore\n\npackage main\n",
		"p/a_linux_test.go":    "package p\n",
		"p/b_amd64_test.go":    "package p\n",
		"p/c_test.go":          "// +build linux\n\npackage p\n",
		"p/d_test.go":          "//go:build !windows\n\npackage p_test\n",
		"p/_e_test.go":         "package p\n",
		"p/testdata/f_test.go": "package p\n",
	}
	t.Run("none left", func(t *testing.T) {
		dir := writeTree(t, constrained)
		cs, _, err := plantCanaries(dir, []string{"p", "nothere", "empty"}, os.Getuid(), os.Getgid(), true)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 1 {
			t.Fatalf("got %d canaries, want 1 (in p)", len(cs))
		}
		c := cs[0]
		if _, ok := constrained[c.File]; ok || c.orig != nil {
			t.Fatalf("the canary went into %s, want a new file", c.File)
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(c.File)))
		if err != nil || !strings.HasPrefix(string(data), "package p\n") {
			t.Errorf("the new file %s = %q, %v; want package p", c.File, data, err)
		}
		if err := unplantCanaries(dir, cs); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(c.File))); err == nil {
			t.Errorf("%s is still there after unplanting", c.File)
		}
		// Without create, the package gets none.
		if cs, notes, err := plantCanaries(dir, []string{"p"}, os.Getuid(), os.Getgid(), false); err != nil || len(cs) != 0 || len(notes) != 1 {
			t.Errorf("plantCanaries without create = %v, %q, %v; want none and a note", cs, notes, err)
		}
	})
	t.Run("random among the others", func(t *testing.T) {
		files := map[string]string{"p/x_test.go": "package p\n", "p/y_test.go": "package p_test\n", "p/z_unix_test.go": "package p\n"}
		for k, v := range constrained {
			files[k] = v
		}
		dir := writeTree(t, files)
		seen := map[string]int{}
		names := map[string]bool{}
		for range 60 {
			cs, _, err := plantCanaries(dir, []string{"p"}, os.Getuid(), os.Getgid(), false)
			if err != nil || len(cs) != 1 {
				t.Fatalf("plantCanaries = %v, %v", cs, err)
			}
			seen[cs[0].File]++
			names[cs[0].Pass], names[cs[0].Fail] = true, true
			if err := unplantCanaries(dir, cs); err != nil {
				t.Fatal(err)
			}
		}
		// Each of three files is missed 60 times in a row with a
		// chance of (2/3)^60, about 3e-11.
		if len(seen) != 3 || seen["p/x_test.go"] == 0 || seen["p/y_test.go"] == 0 || seen["p/z_unix_test.go"] == 0 {
			t.Errorf("the canary went into %v, want each of x_test.go, y_test.go and z_unix_test.go and nothing else", seen)
		}
		if len(names) != 120 {
			t.Errorf("60 plantings drew %d distinct names, want 120", len(names))
		}
		for n := range names {
			if !strings.HasPrefix(n, "Test") || n[4] < 'A' || n[4] > 'Z' {
				t.Errorf("name %q is not a test name go test runs", n)
			}
		}
		for name, content := range files {
			if back, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name))); string(back) != content {
				t.Errorf("%s = %q after the plantings, want %q", name, back, content)
			}
		}
	})
}

// canaryReport is a go-test-json report of package p whose canary (TestPp,
// TestFf) came out as pass and fail say ("" leaves it out); end says
// whether p's binary printed its closing line.
func canaryReport(pass, fail string, end bool) string {
	var b strings.Builder
	ev := func(action, test, output string) {
		fmt.Fprintf(&b, `{"Action":%q,"Package":"ex.invalid/m/p","Test":%q,"Output":%q}`+"\n", action, test, output)
	}
	ev("start", "", "")
	ev("run", "TestListed", "")
	ev("pass", "TestListed", "")
	for _, x := range []struct{ name, outcome string }{{"TestPp", pass}, {"TestFf", fail}} {
		if x.outcome == "" {
			continue
		}
		ev("run", x.name, "")
		if x.outcome != TestUnfinished {
			ev(x.outcome, x.name, "")
		}
	}
	if end {
		ev("output", "", "FAIL\n")
	}
	ev("output", "", "FAIL\tex.invalid/m/p\t0.01s\n")
	ev("fail", "", "")
	return b.String()
}

func TestJudgeCanaries(t *testing.T) {
	cs := []*canary{{Dir: "p", Pkg: "ex.invalid/m/p", File: "p/a_test.go", Pass: "TestPp", Fail: "TestFf"}}
	for _, tt := range []struct {
		name, pass, fail string
		end              bool
		ok               bool
		forged, failed   string
	}{
		{name: "honest", pass: TestPass, fail: TestFail, end: true, ok: true},
		{name: "must fail passed", pass: TestPass, fail: TestPass, end: true, forged: "the test that must fail passed"},
		{name: "must fail passed, then a crash", pass: TestPass, fail: TestPass, forged: "the test that must fail passed"},
		{name: "must pass failed", pass: TestFail, fail: TestFail, end: true, forged: "the test that must pass failed in a test run that ran to its end"},
		{name: "must fail skipped", pass: TestPass, fail: TestSkip, end: true, forged: "the test that must fail was skipped in a test run that ran to its end"},
		{name: "both missing", end: true, forged: "the test that must pass is missing in a test run that ran to its end"},
		{name: "must fail missing", pass: TestPass, end: true, forged: "the test that must fail is missing in a test run that ran to its end"},
		{name: "missing after a crash", failed: "the tests of ex.invalid/m/p did not run to their end"},
		{name: "unfinished", pass: TestPass, fail: TestUnfinished, end: true, failed: "the tests of ex.invalid/m/p did not run to their end"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := ParseTestReport(strings.NewReader(canaryReport(tt.pass, tt.fail, tt.end)), FormatGoTestJSON)
			if err != nil {
				t.Fatal(err)
			}
			v := judgeCanaries(rep, cs)
			if v.OK != tt.ok || v.Forged != tt.forged || v.Failed != tt.failed {
				t.Errorf("judgeCanaries = ok %t, forged %q, failed %q; want %t, %q, %q\n%s", v.OK, v.Forged, v.Failed, tt.ok, tt.forged, tt.failed, strings.Join(v.Lines, "\n"))
			}
			if got := withoutCanaries(rep.Tests, cs); len(got) != 1 || got[0].Name != "TestListed" {
				t.Errorf("withoutCanaries = %v, want TestListed alone", got)
			}
		})
	}
	t.Run("a package the script does not test", func(t *testing.T) {
		rep, err := ParseTestReport(strings.NewReader(canaryReport(TestPass, TestFail, true)), FormatGoTestJSON)
		if err != nil {
			t.Fatal(err)
		}
		other := &canary{Dir: "q", Pkg: "ex.invalid/m/q", File: "q/q_test.go", Pass: "TestQp", Fail: "TestQf"}
		if v := judgeCanaries(rep, append([]*canary{other}, cs...)); !v.OK {
			t.Errorf("judgeCanaries with q untested = %+v, want ok", v)
		}
		if v := judgeCanaries(rep, []*canary{other}); v.OK || v.Forged != "" || v.Failed == "" {
			t.Errorf("judgeCanaries with no package tested = %+v, want failed, not forged", v)
		}
	})
}
