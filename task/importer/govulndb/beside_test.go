package govulndb

import (
	"errors"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/42-b3yond-6ug/ssebench/task"
)

// corsBuggy is corsFixed as v1.5.0 has it: without the new field and with
// the bug.
func corsBuggy() string {
	return strings.NewReplacer(
		"\n\t// Allows to add custom schema like tauri://\n\tCustomSchemas []string\n", "",
		"\tif c.CustomSchemas != nil {\n\t\tallowedSchemas = append(allowedSchemas, c.CustomSchemas...)\n\t}\n", "",
		"[]string{o[:i], \"*\"}", "[]string{o[:i-1], \"*\"}",
	).Replace(corsFixed)
}

var corsSymbols = map[string][]string{"github.com/gin-contrib/cors": {"Config.parseWildcardRules"}}

// corsPkg is the cors fixture with the given fixed code and tests.
func corsPkg(fixed, buggyTests, tests string) []pkgFiles {
	return []pkgFiles{{Path: "github.com/gin-contrib/cors", Dir: ".", Buggy: files1("cors.go", corsBuggy()), Fixed: files1("cors.go", fixed), Tests: files1("cors_test.go", tests), BuggyTests: files1("cors_test.go", buggyTests)}}
}

// dropCors runs dropBeside on the cors fixture as alternatives does.
func dropCors(t *testing.T, pkgs []pkgFiles) (*besideDrop, error) {
	t.Helper()
	api, err := analyzeFix(pkgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(api.newFields()) == 0 {
		t.Fatalf("the fixture's tests set no new field: %+v", api.Needed)
	}
	return dropBeside(pkgs, api, corsSymbols, "1.5.0")
}

const corsOldTests = "package cors\n\nimport \"testing\"\n\nfunc TestNothing(t *testing.T) {}\n"

// TestDropBesideCors: in GO-2024-2955 (trimmed), the new TestValidateTauri
// sets Config.CustomSchemas, which the fix release adds and which
// Config.parseWildcardRules, the vulnerable symbol, does not use: the test
// goes, with the import only it used, and what is left needs nothing a
// stub cannot declare.
func TestDropBesideCors(t *testing.T) {
	pkgs := corsPkg(corsFixed, corsOldTests, corsTest)
	b, err := dropCors(t, pkgs)
	if err != nil {
		t.Fatal(err)
	}
	want := []droppedTest{{Name: "TestValidateTauri", Features: []string{"Config.CustomSchemas"}}}
	if diff := cmp.Diff(want, b.Dropped); diff != "" {
		t.Fatalf("dropped (-want +got):\n%s", diff)
	}
	if got := b.Dropped[0].Note(); got != "dropped TestValidateTauri: it tests Config.CustomSchemas, a feature beside the fix" {
		t.Errorf("note %q", got)
	}
	wantSrc := strings.Replace(corsTest, "\n\t\"github.com/stretchr/testify/assert\"\n", "", 1)
	wantSrc = wantSrc[:strings.Index(wantSrc, "func TestValidateTauri")] + wantSrc[strings.Index(wantSrc, "func TestParseWildcardRules"):]
	if diff := cmp.Diff(wantSrc, string(b.Pruned["cors_test.go"])); diff != "" {
		t.Errorf("pruned tests (-want +got):\n%s", diff)
	}
	if got := string(b.Pkgs[0].Tests["cors_test.go"]); got != string(b.Pruned["cors_test.go"]) {
		t.Errorf("the packages do not have the pruned tests:\n%s", got)
	}
	api, err := analyzeFix(b.Pkgs)
	if err != nil {
		t.Fatal(err)
	}
	if api.blocked() || strings.Contains(api.IssueText(), "CustomSchemas") {
		t.Errorf("the pruned tests still need the feature: %+v", api)
	}
}

// TestDropBesideKeepsTheFix: when the vulnerable symbol uses the new field,
// the field is the fix's own, and no test of it is dropped.
func TestDropBesideKeepsTheFix(t *testing.T) {
	fixed := strings.Replace(corsFixed, "\tfor _, o := range c.AllowOrigins {\n\t\tif !strings.Contains(o, \"*\") {", "\tfor _, o := range append(c.AllowOrigins, c.CustomSchemas...) {\n\t\tif !strings.Contains(o, \"*\") {", 1)
	if fixed == corsFixed {
		t.Fatal("the fixture did not change")
	}
	b, err := dropCors(t, corsPkg(fixed, corsOldTests, corsTest))
	if err != nil {
		t.Fatal(err)
	}
	if b.Pkgs != nil || len(b.Dropped) > 0 {
		t.Errorf("dropped %+v", b.Dropped)
	}
	if got := b.Used["Config.CustomSchemas"]; got != "Config.parseWildcardRules" {
		t.Errorf("Used = %v, want Config.CustomSchemas used by Config.parseWildcardRules", b.Used)
	}
}

// TestDropBesideSkips: the only test of the fix cannot be dropped; a
// test the vulnerable version has that sets a field beside the fix is
// not dropped either, but kept, with the field's stub.
func TestDropBesideSkips(t *testing.T) {
	onlyTauri := corsTest[:strings.Index(corsTest, "func TestParseWildcardRules")]
	_, err := dropCors(t, corsPkg(corsFixed, corsOldTests, onlyTauri))
	if want := "no hidden test exercises the vulnerable code once the tests of what the fix release adds beside the fix are dropped (TestValidateTauri)"; !errors.Is(err, errSkip) || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("err = %v, want a skip: %s", err, want)
	}
	oldTauri := strings.Replace(corsOldTests, "func TestNothing", "func TestValidateTauri", 1)
	b, err := dropCors(t, corsPkg(corsFixed, oldTauri, corsTest))
	if err != nil || len(b.Dropped) > 0 {
		t.Errorf("an old test that sets the new field: dropped %+v, %v; want it kept", b, err)
	}
}

// TestPruneFile: a dropped function goes with its doc comment and the
// blank line before it, and so do the imports only it used, named or not
// named as their path ends; an import another function uses stays. An
// import the dropped code uses that cannot be told is an error.
func TestPruneFile(t *testing.T) {
	src := "package p\n\nimport (\n\t\"example.com/thinglib\"\n\t\"fmt\"\n\tstr \"strings\"\n\t\"testing\"\n)\n\nfunc TestA(t *testing.T) { fmt.Println() }\n\n// TestB is dropped.\nfunc TestB(t *testing.T) {\n\t_ = str.ToUpper(\"b\")\n\tthing.Do()\n\tfmt.Println()\n}\n\nfunc TestC(t *testing.T) {}\n"
	want := "package p\n\nimport (\n\t\"fmt\"\n\t\"testing\"\n)\n\nfunc TestA(t *testing.T) { fmt.Println() }\n\nfunc TestC(t *testing.T) {}\n"
	fset := token.NewFileSet()
	fs, err := parseFiles(fset, files1("p_test.go", src))
	if err != nil {
		t.Fatal(err)
	}
	info := newInfo()
	typecheck(fset, "example.com/p", astFiles(fs), fakeImporter{}, info)
	got, err := pruneFile(fs[0], fs[0].f.Decls[2:3], info)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("pruned (-want +got):\n%s", diff)
	}

	fs[0].src = []byte(strings.Replace(src, "example.com/thinglib", "example.com/lib", 1))
	fs[0].f, _ = parser.ParseFile(fset, "p_test.go", fs[0].src, parser.ParseComments)
	info = newInfo()
	typecheck(fset, "example.com/p", astFiles(fs), fakeImporter{}, info)
	if got, err := pruneFile(fs[0], fs[0].f.Decls[2:3], info); err == nil || !strings.Contains(err.Error(), "cannot tell which import thing is") {
		t.Errorf("an import that cannot be told: %v\n%s", err, got)
	}
}

// TestReplaceFileDiff: one file's diff is replaced, or removed, in a diff
// of many.
func TestReplaceFileDiff(t *testing.T) {
	a := "diff --git a/a_test.go b/a_test.go\n--- a/a_test.go\n+++ b/a_test.go\n@@ -1 +1 @@\n-x\n+y\n"
	b := "diff --git a/b_test.go b/b_test.go\n--- a/b_test.go\n+++ b/b_test.go\n@@ -1 +1 @@\n-diff --git a/a_test.go b/a_test.go\n+z\n"
	c := "diff --git a/c.txt b/c.txt\n--- a/c.txt\n+++ b/c.txt\n@@ -1 +1 @@\n-1\n+2\n"
	nb := strings.ReplaceAll(b, "+z", "+w")
	if got := replaceFileDiff(a+b+c, "b_test.go", nb); got != a+nb+c {
		t.Errorf("replaced:\n%s", got)
	}
	if got := replaceFileDiff(a+b+c, "a_test.go", ""); got != b+c {
		t.Errorf("removed:\n%s", got)
	}
}

// The origins fixture, in the shape of GO-2024-2955: v1.0.1 fixes Match
// and adds Config.Custom, which only Schemas uses and only the new
// TestCustom sets.
const (
	originsBuggy = `package origins

import "strings"

// Config is the allowed origins.
type Config struct {
	Origins []string
}

// Match says whether origin matches one of the origins, which may end in
// a wildcard.
func (c Config) Match(origin string) bool {
	for _, o := range c.Origins {
		if prefix, ok := strings.CutSuffix(o, "*"); ok && strings.HasPrefix(origin, prefix[:len(prefix)-1]) {
			return true
		}
		if o == origin {
			return true
		}
	}
	return false
}

// Schemas are the schemas an origin may have.
func (c Config) Schemas() []string {
	return []string{"http://", "https://"}
}
`
	originsOldTests = `package origins

import "testing"

func TestSchemas(t *testing.T) {
	if got := (Config{}).Schemas(); len(got) != 2 {
		t.Fatal(got)
	}
}
`
	originsNewTests = originsOldTests + `
func TestMatch(t *testing.T) {
	c := Config{Origins: []string{"https://example.com/*"}}
	if c.Match("https://example.community/") {
		t.Error("example.com/* matches example.community/")
	}
}

// TestCustom checks the custom schemas.
func TestCustom(t *testing.T) {
	c := Config{Custom: []string{"tauri://"}}
	if got := c.Schemas(); !reflect.DeepEqual(got, []string{"http://", "https://", "tauri://"}) {
		t.Error(got)
	}
}
`
)

// originsFixed is the fixed code; with reached, Match uses the new field.
func originsFixed(reached bool) string {
	s := strings.NewReplacer(
		"\tOrigins []string\n", "\tOrigins []string\n\t// Custom are more schemas.\n\tCustom []string\n",
		"prefix[:len(prefix)-1]", "prefix",
		"return []string{\"http://\", \"https://\"}", "return append([]string{\"http://\", \"https://\"}, c.Custom...)",
	).Replace(originsBuggy)
	if reached {
		s = strings.Replace(s, "range c.Origins", "range append(c.Origins, c.Custom...)", 1)
	}
	return s
}

// originsProxy serves GO-2099-0040, whose fix release is originsFixed.
func originsProxy(reached bool) fakeProxy {
	p := fixture()
	p["golang.org/x/vulndb@v"+testDB]["data/reports/GO-2099-0040.yaml"] = strings.NewReplacer("GO-2099-0001", "GO-2099-0040", "example.com/fixme/parse", "example.com/origins", "example.com/fixme", "example.com/origins", "- Field", "- Config.Match").Replace(report1)
	gomod := "module example.com/origins\n\ngo 1.21\n"
	p["example.com/origins@v1.0.0"] = map[string]string{"go.mod": gomod, "origins.go": originsBuggy, "origins_test.go": originsOldTests}
	newTests := strings.Replace(originsNewTests, "import \"testing\"", "import (\n\t\"reflect\"\n\t\"testing\"\n)", 1)
	p["example.com/origins@v1.0.1"] = map[string]string{"go.mod": gomod, "origins.go": originsFixed(reached), "origins_test.go": newTests}
	return p
}

// TestImportDropsTestBeside: the new test of a field the fix release adds
// beside the fix is dropped from the hidden tests, and the task imports:
// its table row says what was dropped, its test.diff and issue text do
// not have it, and the hidden tests compile on the vulnerable version,
// where the test of the fix fails, and pass with the fix.
func TestImportDropsTestBeside(t *testing.T) {
	p := originsProxy(false)
	dir := t.TempDir()
	rows := importInto(t, fetcher(t, p), dir, "GO-2099-0040")
	if len(rows) != 1 || rows[0].Status != "imported" || rows[0].Reason != "dropped TestCustom: it tests Config.Custom, a feature beside the fix" {
		t.Fatalf("rows: %+v", rows)
	}
	folder := filepath.Join(dir, "go-2099-0040")
	test, _ := os.ReadFile(filepath.Join(folder, "sse/diffs/test.diff"))
	if strings.Contains(string(test), "TestCustom") || strings.Contains(string(test), "reflect") || !strings.Contains(string(test), "+func TestMatch(") {
		t.Errorf("test.diff:\n%s", test)
	}
	if cfg, _ := os.ReadFile(filepath.Join(folder, "sse/config.yaml")); strings.Contains(string(cfg), "Custom") {
		t.Errorf("the issue text names the dropped feature:\n%s", cfg)
	}
	old := p["example.com/origins@v1.0.0"]
	buggy := apply(t, test, old)
	if _, err := os.Stat(filepath.Join(folder, task.StubsFile)); err == nil {
		t.Errorf("stubs for tests that need none")
	}
	mod := writeModule(t, ".", map[string][]byte{"origins.go": []byte(buggy["origins.go"]), "origins_test.go": []byte(buggy["origins_test.go"])})
	out, err := goCmd(mod, "test", "-count=1", ".")
	if err == nil || !strings.Contains(out, "--- FAIL: TestMatch") || strings.Contains(out, "[build failed]") {
		t.Errorf("the hidden tests on the vulnerable version:\n%s", out)
	}
	patch, _ := os.ReadFile(filepath.Join(folder, "sse/diffs/patch.diff"))
	if err := os.WriteFile(filepath.Join(mod, "origins.go"), []byte(apply(t, patch, old)["origins.go"]), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := goCmd(mod, "test", "-count=1", "."); err != nil {
		t.Errorf("the hidden tests with the fix:\n%s", out)
	}
}

// TestImportKeepsTheFixsField: when the vulnerable symbol uses the new
// field, its test is the fix's: it stays, the issue text names the
// field, and stubs.diff adds the field to the vulnerable struct, where
// the hidden tests then compile and the test of the fix fails.
func TestImportKeepsTheFixsField(t *testing.T) {
	p := originsProxy(true)
	dir := t.TempDir()
	rows := importInto(t, fetcher(t, p), dir, "GO-2099-0040")
	if len(rows) != 1 || rows[0].Status != "imported" {
		t.Fatalf("rows: %+v, want imported", rows)
	}
	folder := filepath.Join(dir, "go-2099-0040")
	if cfg, _ := os.ReadFile(filepath.Join(folder, "sse/config.yaml")); !strings.Contains(string(cfg), "field `Custom []string` of struct `Config`") {
		t.Errorf("the issue text does not name the field:\n%s", cfg)
	}
	stubs, err := os.ReadFile(filepath.Join(folder, task.StubsFile))
	if err != nil || !strings.Contains(string(stubs), "--- a/origins.go") || !strings.Contains(string(stubs), "+\tCustom []string") {
		t.Fatalf("stubs.diff (%v):\n%s", err, stubs)
	}
	test, _ := os.ReadFile(filepath.Join(folder, "sse/diffs/test.diff"))
	old := p["example.com/origins@v1.0.0"]
	stubbed := apply(t, stubs, apply(t, test, old))
	mod := writeModule(t, ".", map[string][]byte{"origins.go": []byte(stubbed["origins.go"]), "origins_test.go": []byte(stubbed["origins_test.go"])})
	out, err := goCmd(mod, "test", "-count=1", ".")
	if err == nil || !strings.Contains(out, "--- FAIL: TestMatch") || strings.Contains(out, "[build failed]") {
		t.Errorf("the hidden tests on the vulnerable version with the stubs:\n%s", out)
	}
}

// TestDropBesideTestError: a new test that passes a new type as an
// interface the vulnerable code does not use fails to compile on the
// vulnerable version for a method no stub declares: the test error names
// the method, beside the fix, and the test is dropped.
func TestDropBesideTestError(t *testing.T) {
	buggy := "package p\n\n// Rule matches strings.\ntype Rule interface{ Match(s string) bool }\n\n// Apply counts the strings r matches.\nfunc Apply(r Rule, ss ...string) int {\n\tn := 0\n\tfor _, s := range ss {\n\t\tif r.Match(s) {\n\t\t\tn++\n\t\t}\n\t}\n\treturn n\n}\n\n// Field is the first field of s.\nfunc Field(s string) string {\n\tfor i := range s {\n\t\tif s[i] == ',' {\n\t\t\treturn s[:i+1]\n\t\t}\n\t}\n\treturn s\n}\n"
	fixed := strings.Replace(buggy, "s[:i+1]", "s[:i]", 1) + "\n// Prefix matches the strings it starts.\ntype Prefix string\n\n// Match says whether s starts with p.\nfunc (p Prefix) Match(s string) bool { return len(s) >= len(p) && s[:len(p)] == string(p) }\n"
	oldTests := "package p\n\nimport \"testing\"\n\nfunc TestApply(t *testing.T) {}\n"
	tests := oldTests + "\nfunc TestField(t *testing.T) {\n\tif Field(\"a,b\") != \"a\" {\n\t\tt.Fatal(Field(\"a,b\"))\n\t}\n}\n\nfunc TestPrefix(t *testing.T) {\n\tif Apply(Prefix(\"a\"), \"ab\", \"b\") != 1 {\n\t\tt.Fatal(\"a\")\n\t}\n}\n"
	pkgs := []pkgFiles{{Path: "example.com/m/p", Dir: "p", Buggy: files1("p.go", buggy), Fixed: files1("p.go", fixed), Tests: files1("p_test.go", tests), BuggyTests: files1("p_test.go", oldTests)}}
	api, err := analyzeFix(pkgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(api.TestErrors) != 1 || len(api.Unstubbable)+len(api.Changed) > 0 || !strings.Contains(api.TestErrors[0], "missing method Match") {
		t.Fatalf("the fixture's tests are blocked otherwise: %+v", api)
	}
	b, err := dropBeside(pkgs, api, map[string][]string{"example.com/m/p": {"Field"}}, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]droppedTest{{Name: "TestPrefix", Features: []string{"Prefix.Match"}}}, b.Dropped); diff != "" {
		t.Fatalf("dropped (-want +got):\n%s", diff)
	}
	if api, err := analyzeFix(b.Pkgs); err != nil || api.blocked() {
		t.Errorf("the pruned tests: %+v, %v", api, err)
	}
}
