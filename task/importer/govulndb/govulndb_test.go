package govulndb

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
	"golang.org/x/mod/module"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
	"github.com/42-b3yond-6ug/ssebench/task"
)

const testDB = "0.0.0-20990101000000-abcdefabcdef"

// fakeProxy serves module zips as the Go module proxy does: enough of its
// HTTP API (.info, .mod, .zip) for `go mod download`.
type fakeProxy map[string]map[string]string // "path@version" -> file -> contents

func (p fakeProxy) zip(modver string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := make([]string, 0, len(p[modver]))
	for n := range p[modver] {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		w, _ := zw.Create(modver + "/" + n)
		w.Write([]byte(p[modver][n]))
	}
	zw.Close()
	return buf.Bytes()
}

func (p fakeProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	escPath, rest, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/@v/")
	modPath, err := module.UnescapePath(escPath)
	if !ok || err != nil {
		http.NotFound(w, r)
		return
	}
	ext := filepath.Ext(rest)
	ver, err := module.UnescapeVersion(strings.TrimSuffix(rest, ext))
	files, found := p[modPath+"@"+ver]
	if err != nil || !found {
		http.NotFound(w, r)
		return
	}
	switch ext {
	case ".info":
		fmt.Fprintf(w, `{"Version":%q,"Time":"2024-05-06T07:08:09Z"}`, ver)
	case ".mod":
		if m, ok := files["go.mod"]; ok {
			fmt.Fprint(w, m)
		} else {
			fmt.Fprintf(w, "module %s\n", modPath)
		}
	case ".zip":
		w.Write(p.zip(modPath + "@" + ver))
	default:
		http.NotFound(w, r)
	}
}

const parseV1 = `package parse

// Field returns the n-th comma-separated field of s.
func Field(s string, n int) string {
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			if n == 0 {
				return s[start:i]
			}
			n--
			start = i + 1
		}
	}
	return s[start:]
}
`

const parseV2 = `package parse

// Field returns the n-th comma-separated field of s, or "" when s has
// fewer fields.
func Field(s string, n int) string {
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			if n == 0 {
				return s[start:i]
			}
			n--
			start = i + 1
		}
	}
	if n > 0 {
		return ""
	}
	return s[start:]
}
`

const report1 = `id: GO-2099-0001
modules:
    - module: example.com/fixme
      versions:
        - introduced: 0.9.0
        - fixed: 1.0.1
        - fixed: 2.0.0
      vulnerable_at: 1.0.0
      packages:
        - package: example.com/fixme/parse
          symbols:
            - Field
summary: Wrong field in example.com/fixme/parse
description: |-
    Field returns the last field when asked for one past the end.
cves:
    - CVE-2099-0001
`

// fixture is a database of a few reports and the modules they name.
func fixture() fakeProxy {
	gomod := "module example.com/fixme\n\ngo 1.21\n"
	db := map[string]string{
		"go.mod":                         "module golang.org/x/vulndb\n",
		"data/reports/GO-2099-0001.yaml": report1,
		"data/reports/GO-2099-0002.yaml": strings.NewReplacer("GO-2099-0001", "GO-2099-0002", "example.com/fixme/parse", "example.com/fixme/other").Replace(report1),
		"data/reports/GO-2099-0010.yaml": strings.NewReplacer("GO-2099-0001", "GO-2099-0010", "example.com/fixme/parse", "example.com/moved", "example.com/fixme", "example.com/moved").Replace(report1),
		"data/reports/GO-2099-0011.yaml": strings.NewReplacer("GO-2099-0001", "GO-2099-0011", "example.com/fixme/parse", "example.com/inner", "example.com/fixme", "example.com/inner").Replace(report1),
		"data/reports/GO-2099-0003.yaml": "id: GO-2099-0003\nmodules:\n    - module: std\n      versions:\n        - fixed: 1.22.1\n      vulnerable_at: 1.22.0\n      packages:\n        - package: net/http\nsummary: A standard library bug\n",
	}
	movedMod := "module example.com/moved\n\ngo 1.21\n"
	innerMod := "module example.com/inner\n\ngo 1.21\n"
	innerAPI := "package inner\n\nimport \"example.com/inner/internal/field\"\n\n// Field returns the n-th comma-separated field of s.\nfunc Field(s string, n int) string { return field.Field(s, n) }\n"
	return fakeProxy{
		"golang.org/x/vulndb@v" + testDB: db,
		// The database names the exported API; the fix is in the
		// internal package behind it.
		"example.com/inner@v1.0.0": {
			"go.mod": innerMod, "inner.go": innerAPI, "README.md": "v1.0.0\n", "inner_test.go": "package inner\n",
			"internal/field/field.go": strings.Replace(parseV1, "package parse", "package field", 1),
			"other/other.go":          "package other\n\nconst A = 1\n",
		},
		"example.com/inner@v1.0.1": {
			"go.mod": innerMod, "inner.go": innerAPI, "README.md": "v1.0.1\n",
			"inner_test.go":           "package inner\n\nimport \"testing\"\n\nfunc TestField(t *testing.T) {}\n",
			"internal/field/field.go": strings.Replace(parseV2, "package parse", "package field", 1),
			"other/other.go":          "package other\n\nconst A = 2\n",
		},
		// The fix moves the code into a package the release adds.
		"example.com/moved@v1.0.0": {
			"go.mod": movedMod, "moved.go": strings.Replace(parseV1, "package parse", "package moved", 1),
			"moved_test.go": "package moved\n",
		},
		"example.com/moved@v1.0.1": {
			"go.mod": movedMod, "moved.go": "package moved\n\nimport \"example.com/moved/internal/field\"\n\n// Field returns the n-th comma-separated field of s.\nfunc Field(s string, n int) string { return field.Field(s, n) }\n",
			"moved_test.go":           "package moved\n\nimport \"testing\"\n\nfunc TestField(t *testing.T) {}\n",
			"internal/field/field.go": strings.Replace(parseV2, "package parse", "package field", 1),
			// Another package the release adds, which the fix does not use.
			"extra/extra.go": "package extra\n",
		},
		"example.com/fixme@v1.0.0": {
			"go.mod": gomod, "parse/parse.go": parseV1,
			"parse/parse_test.go": "package parse\n\nimport \"testing\"\n\nfunc TestField(t *testing.T) {\n\tif Field(\"a,b\", 1) != \"b\" {\n\t\tt.Fatal(\"b\")\n\t}\n}\n",
			"other/other.go":      "package other\n\nconst A = 1\n",
		},
		"example.com/fixme@v1.0.1": {
			"go.mod": gomod, "parse/parse.go": parseV2,
			"parse/parse_test.go":  "package parse\n\nimport \"testing\"\n\nfunc TestField(t *testing.T) {\n\tif Field(\"a,b\", 1) != \"b\" {\n\t\tt.Fatal(\"b\")\n\t}\n}\n\nfunc TestFieldPastTheEnd(t *testing.T) {\n\tif Field(\"a,b\", 2) != \"\" {\n\t\tt.Fatal(\"past the end\")\n\t}\n}\n",
			"parse/testdata/x.txt": "a,b\n",
			// An unrelated change of the release: not in the task.
			"other/other.go": "package other\n\nconst A = 2\n",
		},
	}
}

// fetcher fetches from p through the go command, as the importer does for
// real, into a module cache of the test.
func fetcher(t *testing.T, p fakeProxy) Fetcher {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("the importer runs the go command: put it on PATH")
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	cache := t.TempDir()
	return GoFetcher{Env: []string{"GOPROXY=" + srv.URL, "GOSUMDB=off", "GONOSUMDB=", "GOMODCACHE=" + cache, "GOFLAGS=-modcacherw", "GOTOOLCHAIN=local"}}
}

func importInto(t *testing.T, f Fetcher, dir string, ids ...string) []Row {
	t.Helper()
	rows, err := Import(context.Background(), Options{IDs: ids, Into: dir, DBVersion: testDB, Fetch: f})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestImportReport: a report becomes a task folder whose config is valid,
// whose patch is the fix of the affected package only and applies to the
// vulnerable version to give the fixed one, whose hidden tests are the
// fix's tests, and whose issue text leaves the symbols to the lower
// difficulty levels.
func TestImportReport(t *testing.T) {
	p := fixture()
	dir := t.TempDir()
	rows := importInto(t, fetcher(t, p), dir, "GO-2099-0001")
	if len(rows) != 1 || rows[0].Status != "imported" {
		t.Fatalf("rows: %+v", rows)
	}
	folder := filepath.Join(dir, "go-2099-0001")
	data, err := os.ReadFile(filepath.Join(folder, "sse/config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, ps := task.ParseConfig("config.yaml", data)
	if len(ps) > 0 {
		t.Fatalf("config problems: %v\n%s", ps, data)
	}
	if ps := task.Validate(folder); len(ps) > 0 {
		t.Fatalf("task folder problems: %v", ps)
	}
	issue, bug := *cfg.TaskDescription.Issue, *cfg.TaskDescription.BugDescription
	if !strings.Contains(issue, "one past the end") || !strings.Contains(issue, "CVE-2099-0001") || strings.Contains(issue, "Field") && strings.Contains(issue, "- package") {
		t.Errorf("issue:\n%s", issue)
	}
	if strings.Contains(issue, "example.com/fixme/parse: Field") || !strings.Contains(bug, "example.com/fixme/parse: Field") {
		t.Errorf("the symbols belong in the bug description only:\nissue:\n%s\nbug:\n%s", issue, bug)
	}
	if cfg.Tests == nil || cfg.Tests.Format != "go-test-json" {
		t.Errorf("tests: %+v", cfg.Tests)
	}

	patch, _ := os.ReadFile(filepath.Join(folder, "sse/diffs/patch.diff"))
	test, _ := os.ReadFile(filepath.Join(folder, "sse/diffs/test.diff"))
	if strings.Contains(string(patch), "other/") || strings.Contains(string(patch), "_test.go") {
		t.Errorf("the patch holds more than the affected package's fix:\n%s", patch)
	}
	if !strings.Contains(string(test), "b/parse/parse_test.go") || !strings.Contains(string(test), "b/parse/testdata/x.txt") {
		t.Errorf("the hidden tests lack the fix's tests:\n%s", test)
	}
	old := p["example.com/fixme@v1.0.0"]
	if got := apply(t, patch, old)["parse/parse.go"]; got != parseV2 {
		t.Errorf("the patch applied to v1.0.0 gives\n%s\nwant the fixed version's file", got)
	}
	if got := apply(t, test, old)["parse/parse_test.go"]; got != p["example.com/fixme@v1.0.1"]["parse/parse_test.go"] {
		t.Errorf("the hidden tests applied give\n%s", got)
	}

	df, _ := os.ReadFile(filepath.Join(folder, "Dockerfile"))
	for _, want := range []string{"go mod download 'example.com/fixme@v1.0.0'", "go mod vendor", "GOFLAGS=-mod=vendor GOPROXY=off", "go build -o /dev/null './parse'", "COPY sse/ /ssebench/", "2024-05-06T07:08:09Z"} {
		if !strings.Contains(string(df), want) {
			t.Errorf("Dockerfile lacks %q:\n%s", want, df)
		}
	}
	env, _ := os.ReadFile(filepath.Join(folder, "sse/scripts/env.sh"))
	if !strings.Contains(string(env), "GOFLAGS=-mod=vendor GOPROXY=off") {
		t.Errorf("the run is not offline:\n%s", env)
	}
	if tsv, _ := os.ReadFile(filepath.Join(dir, TableFile)); !strings.Contains(string(tsv), "GO-2099-0001\texample.com/fixme\t1.0.0\t1.0.1\timported") {
		t.Errorf("table:\n%s", tsv)
	}
}

// apply applies a diff to files with the grader's diff reader.
func apply(t *testing.T, diff []byte, files map[string]string) map[string]string {
	t.Helper()
	fds, _, err := gitdiff.Parse(bytes.NewReader(diff))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for k, v := range files {
		out[k] = v
	}
	for _, fd := range fds {
		var b bytes.Buffer
		if err := gitdiff.Apply(&b, strings.NewReader(files[fd.OldName]), fd); err != nil {
			t.Fatalf("%s: %v", fd.NewName, err)
		}
		out[fd.NewName] = b.String()
	}
	return out
}

// TestImportAddedPackage: a fix that moves code into a package its release
// adds carries that package, or the patched package would not build; a
// package the release adds for something else stays out.
func TestImportAddedPackage(t *testing.T) {
	p := fixture()
	dir := t.TempDir()
	if rows := importInto(t, fetcher(t, p), dir, "GO-2099-0010"); len(rows) != 1 || rows[0].Status != "imported" {
		t.Fatalf("rows: %+v", rows)
	}
	patch, _ := os.ReadFile(filepath.Join(dir, "go-2099-0010", "sse/diffs/patch.diff"))
	if strings.Contains(string(patch), "extra/") {
		t.Errorf("the patch holds a package the fix does not use:\n%s", patch)
	}
	got := apply(t, patch, p["example.com/moved@v1.0.0"])
	for _, f := range []string{"moved.go", "internal/field/field.go"} {
		if got[f] != p["example.com/moved@v1.0.1"][f] {
			t.Errorf("the patch applied to v1.0.0 gives %s:\n%s\nwant the fixed version's", f, got[f])
		}
	}
}

// TestImportFixBehindTheAPI: when no Go file of the affected packages
// changes, the fix is in the packages of the module they import, and the
// patch carries those; a package they do not import stays out.
func TestImportFixBehindTheAPI(t *testing.T) {
	p := fixture()
	dir := t.TempDir()
	if rows := importInto(t, fetcher(t, p), dir, "GO-2099-0011"); len(rows) != 1 || rows[0].Status != "imported" {
		t.Fatalf("rows: %+v", rows)
	}
	patch, _ := os.ReadFile(filepath.Join(dir, "go-2099-0011", "sse/diffs/patch.diff"))
	if strings.Contains(string(patch), "other/") {
		t.Errorf("the patch holds a package the affected one does not import:\n%s", patch)
	}
	f := "internal/field/field.go"
	if got := apply(t, patch, p["example.com/inner@v1.0.0"])[f]; got != p["example.com/inner@v1.0.1"][f] {
		t.Errorf("the patch applied to v1.0.0 gives %s:\n%s\nwant the fixed version's", f, got)
	}
}

// TestImportSkips: a report that cannot make a sound task is skipped, with
// the reason in the table, and leaves no folder.
func TestImportSkips(t *testing.T) {
	dir := t.TempDir()
	rows := importInto(t, fetcher(t, fixture()), dir, "GO-2099-0002", "GO-2099-0003")
	want := map[string]string{
		"GO-2099-0002": "no test in the fix (no _test.go or testdata change in the affected packages)",
		"GO-2099-0003": "a standard library or toolchain report",
	}
	for _, r := range rows {
		if r.Status != "skipped" || r.Reason != want[r.ID] {
			t.Errorf("%s: %s %q, want skipped %q", r.ID, r.Status, r.Reason, want[r.ID])
		}
		if _, err := os.Stat(filepath.Join(dir, TaskID(r.ID))); err == nil {
			t.Errorf("%s: a skipped report left a folder", r.ID)
		}
	}
	tsv, _ := os.ReadFile(filepath.Join(dir, TableFile))
	if !strings.Contains(string(tsv), "GO-2099-0003\t\t\t\tskipped\ta standard library or toolchain report") {
		t.Errorf("table:\n%s", tsv)
	}
}

// TestImportDeterministic: a second import gives byte-identical folders
// (contents and modes), and keeps the tests an earlier verify listed.
func TestImportDeterministic(t *testing.T) {
	f := fetcher(t, fixture())
	// The same folder name: dataset.yaml's version is made of it.
	a, b := filepath.Join(t.TempDir(), "govuln"), filepath.Join(t.TempDir(), "govuln")
	importInto(t, f, a, "GO-2099-0001", "GO-2099-0002", "GO-2099-0003")
	importInto(t, f, b, "GO-2099-0001", "GO-2099-0002", "GO-2099-0003")
	if ha, hb := treeHash(t, a), treeHash(t, b); ha != hb {
		t.Fatalf("two imports differ:\n%s\n---\n%s", ha, hb)
	}
	// The lists `dataset verify --write-tests` writes survive a new import.
	cfg := filepath.Join(a, "go-2099-0001/sse/config.yaml")
	data, _ := os.ReadFile(cfg)
	withTests := strings.Replace(string(data), "tests:\n  format: go-test-json\n", "tests:\n  format: go-test-json\n  fail_to_pass:\n    - TestFieldPastTheEnd\n  pass_to_pass:\n    - TestField\n", 1)
	os.WriteFile(cfg, []byte(withTests), 0o644)
	before := treeHash(t, a)
	importInto(t, f, a, "GO-2099-0001")
	if after := treeHash(t, a); after != before {
		t.Fatalf("a new import changed the folder:\n%s\n---\n%s", before, after)
	}
}

func treeHash(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, _ := d.Info()
		rel, _ := filepath.Rel(dir, p)
		sum := ""
		if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			sum = fmt.Sprintf("%x", sha256.Sum256(b))
		}
		lines = append(lines, fmt.Sprintf("%s %v %s", rel, info.Mode(), sum))
		return nil
	})
	return strings.Join(lines, "\n")
}

// TestKeep: after verify, the tasks that verified are kept and the others
// dropped, their folders removed and the reason in the table.
func TestKeep(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"go-2099-0001", "go-2099-0002", "go-2099-0004", "go-2099-0005", "go-2099-0006", "go-2099-0007"} {
		os.MkdirAll(filepath.Join(dir, id, "sse"), 0o755)
	}
	// Verified by exit status: --write-tests found no fail_to_pass test.
	os.WriteFile(filepath.Join(dir, "go-2099-0007", "sse/config.yaml"), []byte("id: go-2099-0007\ntests:\n  format: go-test-json\n"), 0o644)
	// Verified without pass_to_pass tests: the table says so.
	os.WriteFile(filepath.Join(dir, "go-2099-0002", "sse/config.yaml"), []byte("id: go-2099-0002\ntests:\n  format: go-test-json\n  fail_to_pass: [TestA]\n"), 0o644)
	MergeTable(dir, []Row{
		{ID: "GO-2099-0001", Module: "m", Status: "imported"},
		{ID: "GO-2099-0002", Module: "m", Status: "imported", Reason: "dropped TestB: it tests T.F, a feature beside the fix"},
		{ID: "GO-2099-0004", Module: "m", Status: "imported"},
		{ID: "GO-2099-0003", Status: "skipped", Reason: "std"},
		// Verified before, on a machine whose store this one lacks.
		{ID: "GO-2099-0005", Module: "m", Status: "verified"},
		// Verified before, and failing now.
		{ID: "GO-2099-0006", Module: "m", Status: "verified"},
		{ID: "GO-2099-0007", Module: "m", Status: "imported"},
	})
	reasons, _ := ReadVerifyReasons(strings.NewReader("TASK  AGENT  CHECK  RESULT  WHY\ngo-2099-0004  reference  intent_test  FAILED  fails with the reference patch\ngo-2099-0001  reference  build  ok\ngo-2099-0006  dummy  intent_test  FAILED  passes without the fix\n"))
	kept, dropped, err := Keep(dir, func(id string) bool { return id == "go-2099-0001" || id == "go-2099-0002" || id == "go-2099-0007" }, reasons)
	if err != nil || kept != 3 || dropped != 3 {
		t.Fatalf("kept %d dropped %d: %v", kept, dropped, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go-2099-0005")); err != nil {
		t.Error("a task verified before, with no failed run here, is gone")
	}
	if _, err := os.Stat(filepath.Join(dir, "go-2099-0006")); err == nil {
		t.Error("a task verified before that failed here is still there")
	}
	if _, err := os.Stat(filepath.Join(dir, "go-2099-0004")); err == nil {
		t.Error("the task that did not verify is still there")
	}
	if _, err := os.Stat(filepath.Join(dir, "go-2099-0001")); err != nil {
		t.Error("the verified task is gone")
	}
	tsv, _ := os.ReadFile(filepath.Join(dir, TableFile))
	for _, want := range []string{"GO-2099-0001\tm\t\t\tverified\t\n", "GO-2099-0002\tm\t\t\tverified\tdropped TestB: it tests T.F, a feature beside the fix; no pass_to_pass test: no other test of the affected packages passes on both the vulnerable and the fixed tree\n", "GO-2099-0004\tm\t\t\tdropped\tverify: reference intent_test: fails with the reference patch\n", "GO-2099-0003\t\t\t\tskipped\tstd\n", "GO-2099-0007\tm\t\t\tdropped\tverify: no fail_to_pass test is listed, so the grade would judge by exit status alone"} {
		if !strings.Contains(string(tsv), want) {
			t.Errorf("table lacks %q:\n%s", want, tsv)
		}
	}
}

// TestHostileReports: a report with a hostile id, module path, version,
// package, symbol or text is refused whole, in one line, before any of it
// reaches a file name, a Dockerfile or a script.
func TestHostileReports(t *testing.T) {
	mod := func(path, ver, pkg, sym string) string {
		return "id: GO-2099-0009\nmodules:\n    - module: " + path + "\n      versions:\n        - fixed: 1.0.1\n      vulnerable_at: " + ver + "\n      packages:\n        - package: " + pkg + "\n          symbols:\n            - " + sym + "\nsummary: s\n"
	}
	ok := mod("example.com/m", "1.0.0", "example.com/m/p", "F")
	if _, err := ParseReport("ok.yaml", []byte(ok)); err != nil {
		t.Fatalf("the plain report is refused: %v", err)
	}
	for _, tc := range []struct {
		name, report, want string
	}{
		{"id out of the folder", strings.Replace(ok, "GO-2099-0009", "../x", 1), `id "../x" is not a vulndb id`},
		{"id with a newline", strings.Replace(ok, "id: GO-2099-0009", `id: "GO-2099-0009\nRUN rm -rf /"`, 1), "is not a vulndb id"},
		{"module path out of the folder", mod("../x", "1.0.0", "../x/p", "F"), `module "../x" is not a valid module path`},
		{"module path with a quote", mod(`"example.com/m';x'"`, "1.0.0", "example.com/m/p", "F"), "is not a valid module path"},
		{"version with a newline", mod("example.com/m", `"1.0.0\nRUN curl x"`, "example.com/m/p", "F"), "is not a canonical semantic version"},
		{"version out of the folder", mod("example.com/m", "../../1.0.0", "example.com/m/p", "F"), "is not a canonical semantic version"},
		{"huge version", mod("example.com/m", "1.0.0-"+strings.Repeat("a", 5000), "example.com/m/p", "F"), "is not a canonical semantic version"},
		{"package outside the module", mod("example.com/m", "1.0.0", "example.com/other", "F"), "is not an import path in the module"},
		{"package going up", mod("example.com/m", "1.0.0", "example.com/m/../../etc", "F"), "is not an import path in the module"},
		{"symbol with shell", mod("example.com/m", "1.0.0", "example.com/m/p", `"F$(id)"`), "is not a Go identifier"},
		{"escape sequence in the summary", strings.Replace(ok, "summary: s", `summary: "s\e]0;pwned\a"`, 1), "control characters"},
		{"huge description", ok + "description: " + strings.Repeat("x", 40<<10) + "\n", "more than"},
		{"huge report", ok + "#" + strings.Repeat("x", 300<<10) + "\n", "refusing it"},
		{"not YAML", "id: [", "not a vulndb report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hostile.Case(t, "govulndb report: "+tc.name)
			_, err := ParseReport("GO-2099-0009.yaml", []byte(tc.report))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || len(msg) > 300 {
				t.Fatalf("not one short line: %q", msg)
			}
		})
	}
}

// TestImportNeedsNewerDependency: a fix that calls a name its dependency
// gained after the version the vulnerable release requires is skipped at
// import, with the name in the reason; the same bump with a name the old
// version has imports.
func TestImportNeedsNewerDependency(t *testing.T) {
	p := fixture()
	report := func(id, mod string) string {
		return strings.NewReplacer("GO-2099-0001", id, "example.com/fixme/parse", mod, "example.com/fixme", mod).Replace(report1)
	}
	db := p["golang.org/x/vulndb@v"+testDB]
	db["data/reports/GO-2099-0020.yaml"] = report("GO-2099-0020", "example.com/newdep")
	db["data/reports/GO-2099-0021.yaml"] = report("GO-2099-0021", "example.com/olddep")
	depV1 := "package match\n\n// Match reports whether s matches pattern.\nfunc Match(s, pattern string) bool { return s == pattern }\n"
	depV2 := depV1 + "\n// MatchLimit is Match with a bound on the work.\nfunc MatchLimit(s, pattern string, n int) (bool, bool) { return s == pattern, false }\n"
	p["example.com/match@v1.0.0"] = map[string]string{"go.mod": "module example.com/match\n\ngo 1.21\n", "match.go": depV1}
	p["example.com/match@v1.1.0"] = map[string]string{"go.mod": "module example.com/match\n\ngo 1.21\n", "match.go": depV2}
	for _, m := range []struct{ mod, call string }{{"example.com/newdep", "ok, _ := match.MatchLimit(s, p, 10)"}, {"example.com/olddep", "ok := match.Match(s, p)"}} {
		gomod := func(v string) string {
			return "module " + m.mod + "\n\ngo 1.21\n\nrequire example.com/match " + v + "\n"
		}
		src := func(body string) string {
			return "package " + path.Base(m.mod) + "\n\nimport \"example.com/match\"\n\n// Glob matches.\nfunc Glob(s, p string) bool {\n\t" + body + "\n\treturn ok\n}\n"
		}
		test := "package " + path.Base(m.mod) + "\n\nimport \"testing\"\n\nfunc TestGlob(t *testing.T) {}\n"
		p[m.mod+"@v1.0.0"] = map[string]string{"go.mod": gomod("v1.0.0"), "glob.go": src("ok := match.Match(s, p) || p == \"*\""), "glob_test.go": "package " + path.Base(m.mod) + "\n"}
		p[m.mod+"@v1.0.1"] = map[string]string{"go.mod": gomod("v1.1.0"), "glob.go": src(m.call), "glob_test.go": test}
	}
	// Before go 1.17 go.mod lists only direct dependencies: a module the
	// fix brings that go.sum does not name is not in the build either.
	db["data/reports/GO-2099-0022.yaml"] = report("GO-2099-0022", "example.com/olddmod")
	oldSrc := "package olddmod\n\n// Check checks.\nfunc Check(s string) bool { return s != \"\" }\n"
	newSrc := "package olddmod\n\nimport \"example.com/validator\"\n\n// Check checks.\nfunc Check(s string) bool { return s != \"\" && validator.Valid(s) }\n"
	test := "package olddmod\n\nimport \"testing\"\n\nfunc TestCheck(t *testing.T) {}\n"
	p["example.com/olddmod@v1.0.0"] = map[string]string{"go.mod": "module example.com/olddmod\n\ngo 1.13\n", "go.sum": "example.com/other v1.0.0/go.mod h1:x\n", "check.go": oldSrc, "check_test.go": "package olddmod\n"}
	p["example.com/olddmod@v1.0.1"] = map[string]string{"go.mod": "module example.com/olddmod\n\ngo 1.13\n\nrequire example.com/validator v1.0.0\n", "check.go": newSrc, "check_test.go": test}
	dir := t.TempDir()
	rows := importInto(t, fetcher(t, p), dir, "GO-2099-0020", "GO-2099-0021", "GO-2099-0022")
	want := map[string]string{
		"GO-2099-0020": "skipped the fix needs match.MatchLimit, which example.com/match v1.0.0 (what v1.0.0 requires) lacks: it needs v1.1.0",
		"GO-2099-0021": "imported ",
		"GO-2099-0022": "skipped the fix imports example.com/validator, of a module v1.0.0 does not require (example.com/validator v1.0.0)",
	}
	for _, r := range rows {
		if got := r.Status + " " + r.Reason; got != want[r.ID] {
			t.Errorf("%s: %q, want %q", r.ID, got, want[r.ID])
		}
	}
}

// TestScriptsLimitAddressSpace: a program that allocates 176 GiB and
// never touches it (what go-2023-1930's buggy decoder does) fails under
// the task's env.sh on every host, also where the kernel overcommits
// memory (vm.overcommit_memory=1), where it would pass without the limit.
func TestScriptsLimitAddressSpace(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatal("the importer runs the go command: put it on PATH")
	}
	dir := t.TempDir()
	src := "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tb := make([]byte, 176<<30)\n\tfmt.Println(\"allocated\", len(b))\n}\n"
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module alloc\n\ngo 1.21\n"), 0o644)
	build := exec.Command("go", "build", "-o", "alloc", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=", "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := (&plan{mod: Module{Module: "example.com/m"}, pkgDirs: []string{"."}}).scripts()["env.sh"]
	os.WriteFile(filepath.Join(dir, "env.sh"), []byte(env), 0o644)
	cmd := exec.Command("sh", "-c", ". ./env.sh && exec ./alloc")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOCACHE="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil || strings.Contains(string(out), "allocated") {
		t.Fatalf("176 GiB allocated under env.sh (err %v):\n%s", err, out)
	}
	if !strings.Contains(string(out), "out of memory") {
		t.Errorf("want the runtime's out of memory, got:\n%s", out)
	}
}

// TestImportStubsAndVariant: a fix whose test calls a private helper the
// fix adds gets the helper's signature in the issue text and a stub of it
// in sse/diffs/stubs.diff; the private name the tests do not use is
// renamed in sse/diffs/variant.diff, which applies to the vulnerable
// version.
func TestImportStubsAndVariant(t *testing.T) {
	p := fixture()
	db := p["golang.org/x/vulndb@v"+testDB]
	db["data/reports/GO-2099-0030.yaml"] = strings.NewReplacer("GO-2099-0001", "GO-2099-0030", "example.com/fixme/parse", "example.com/redact", "example.com/fixme", "example.com/redact", "Field", "Log").Replace(report1)
	gomod := "module example.com/redact\n\ngo 1.21\n"
	buggy := "package redact\n\n// Log is what the log says of u.\nfunc Log(u string) string { return u }\n"
	fixed := "package redact\n\nimport \"strings\"\n\n// Log is what the log says of u.\nfunc Log(u string) string { return redactURL(u) }\n\n// redactURL hides the password of u.\nfunc redactURL(u string) string {\n\tuser, rest, ok := strings.Cut(u, \"@\")\n\tif !ok {\n\t\treturn u\n\t}\n\treturn scrub(user) + \"@\" + rest\n}\n\nfunc scrub(user string) string {\n\tname, _, _ := strings.Cut(user, \":\")\n\treturn name + \":xxxxx\"\n}\n"
	test := "package redact\n\nimport \"testing\"\n\nfunc TestLog(t *testing.T) {\n\tif Log(\"h\") != \"h\" {\n\t\tt.Fatal(\"h\")\n\t}\n}\n\nfunc TestRedact(t *testing.T) {\n\tif got := redactURL(\"u:p@h\"); got != \"u:xxxxx@h\" {\n\t\tt.Fatal(got)\n\t}\n}\n"
	p["example.com/redact@v1.0.0"] = map[string]string{"go.mod": gomod, "log.go": buggy, "log_test.go": "package redact\n"}
	p["example.com/redact@v1.0.1"] = map[string]string{"go.mod": gomod, "log.go": fixed, "log_test.go": test}
	dir := t.TempDir()
	if rows := importInto(t, fetcher(t, p), dir, "GO-2099-0030"); len(rows) != 1 || rows[0].Status != "imported" {
		t.Fatalf("rows: %+v", rows)
	}
	folder := filepath.Join(dir, "go-2099-0030")
	cfg, _ := os.ReadFile(filepath.Join(folder, "sse/config.yaml"))
	if !strings.Contains(string(cfg), "- `func redactURL(u string) string` in package `example.com/redact`") {
		t.Errorf("the issue text lacks the helper the tests call:\n%s", cfg)
	}
	stubs, _ := os.ReadFile(filepath.Join(folder, task.StubsFile))
	old := p["example.com/redact@v1.0.0"]
	withStubs := apply(t, stubs, old)
	if s := withStubs["ssebench_stubs.go"]; !strings.Contains(s, "func redactURL(u string) string {") || strings.Contains(s, "scrub") {
		t.Errorf("stubs:\n%s", stubs)
	}
	variant, _ := os.ReadFile(filepath.Join(folder, task.VariantFile))
	if !strings.Contains(string(variant), task.VariantNote+"example.com/redact.scrub\n") {
		t.Errorf("the variant's preamble does not name what it renamed:\n%s", variant)
	}
	got := apply(t, variant, old)["log.go"]
	if strings.Contains(got, "func scrub(") || !strings.Contains(got, "func redactURL(") || !strings.Contains(got, "scrubAlt") {
		t.Errorf("the variant applied gives:\n%s", got)
	}
	// The reference itself has no stubs or renames in it.
	patch, _ := os.ReadFile(filepath.Join(folder, "sse/diffs/patch.diff"))
	if got := apply(t, patch, old)["log.go"]; got != fixed {
		t.Errorf("the reference applied gives:\n%s", got)
	}
}

// TestImportBesideLargeFiles: a generated file over the size a fix's file
// may have, in a package the fix does not touch (x/image's fonts, x/text's
// tables), does not keep the report from importing.
func TestImportBesideLargeFiles(t *testing.T) {
	p := fixture()
	big := "package data\n\nvar Font = []byte(\"" + strings.Repeat("x", maxFileBytes+1) + "\")\n"
	p["example.com/fixme@v1.0.0"]["data/data.go"] = big
	p["example.com/fixme@v1.0.1"]["data/data.go"] = big
	rows := importInto(t, fetcher(t, p), t.TempDir(), "GO-2099-0001")
	if len(rows) != 1 || rows[0].Status != "imported" {
		t.Fatalf("rows: %+v", rows)
	}
}
