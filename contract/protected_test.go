package contract

import (
	"slices"
	"strings"
	"testing"
)

func TestMatchGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		// "**/" matches zero or more directories.
		{"**/*_test.go", "a_test.go", true},
		{"**/*_test.go", "x/y/a_test.go", true},
		{"**/*_test.go", "x/a_test.go/b.go", false},
		{"**/*_test.go", "a_test.go.orig", false},
		{"**/*_test.go", "x/_test.go", true},
		{"**/*_test.go", ".hidden_test.go", true},
		// A pattern ending in "/**" matches everything under the
		// directory, and the directory.
		{"vendor/**", "vendor/a/b.go", true},
		{"vendor/**", "vendor/a", true},
		{"vendor/**", "vendor", true},
		{"vendor/**", "vendor.go", false},
		{"vendor/**", "x/vendor/a.go", false},
		{"vendor/**", "vendorx/a.go", false},
		{"**/testdata/**", "testdata/a.json", true},
		{"**/testdata/**", "x/y/testdata/z/a.json", true},
		{"**/testdata/**", "x/testdata", true},
		{"**/testdata/**", "x/testdatax/a", false},
		{"**/testdata/**", "x/mytestdata/a", false},
		// "**" in the middle.
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/c", false},
		{"a/**/b/**/c", "a/b/b/b/c", true},
		{"a/**/b/**/c", "a/b/c/b/x", false},
		{"**", "anything/at/all", true},
		{"**/**/x", "x", true},
		// "*" and "?" stay within one element.
		{"*.go", "a.go", true},
		{"*.go", "x/a.go", false},
		{"x/*", "x/a/b", false},
		{"?.go", "a.go", true},
		{"?.go", "ab.go", false},
		{"[ab].go", "b.go", true},
		{"[^ab].go", "b.go", false},
		{`\*.go`, "*.go", true},
		{`\*.go`, "a.go", false},
		// "**" inside an element is "*".
		{"a**", "abc", true},
		{"a**", "a/bc", false},
		// Literal names.
		{"go.work", "go.work", true},
		{"go.work", "sub/go.work", false},
		{"go.work", "go.work.sum", false},
		{"tests/**", "tests/it.rs", true},
		{"tests/**", "src/tests/it.rs", false},
		// The top itself matches nothing.
		{"**", ".", false},
		{"**", "", false},
	} {
		got, err := MatchGlob(tc.pattern, tc.name)
		if err != nil || got != tc.want {
			t.Errorf("MatchGlob(%q, %q) = %t, %v; want %t", tc.pattern, tc.name, got, err, tc.want)
		}
	}
}

// TestMatchGlobDeep: a path of many elements against many "**" costs
// len(pattern)*len(path), not an exponential search.
func TestMatchGlobDeep(t *testing.T) {
	name := strings.Repeat("a/", 2000) + "b"
	pattern := strings.Repeat("**/a/", 20) + "**/c"
	if got, err := MatchGlob(pattern, name); err != nil || got {
		t.Errorf("MatchGlob(deep) = %t, %v; want false", got, err)
	}
}

func TestCheckGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, want string // want: "" for valid, else a part of the error
	}{
		{"**/*_test.go", ""},
		{"vendor/**", ""},
		{"a/[bc]/*.rs", ""},
		{"**", ""},
		{"", "empty"},
		{".", "SOURCE_DIR itself"},
		{"/etc/passwd", "not relative"},
		{"../x", `".." element`},
		{"a/../b", `".." element`},
		{"a//b", "not a clean path"},
		{"a/", "not a clean path"},
		{"./a", "not a clean path"},
		{"a/[b", "malformed"},
		{`a\`, "malformed"},
	} {
		err := CheckGlob(tc.pattern)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckGlob(%q) = %v, want nil", tc.pattern, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckGlob(%q) = %v, want an error saying %q", tc.pattern, err, tc.want)
		}
	}
	if _, err := CompileGlobs([]string{"ok/**", "/abs", "x/../y"}); err == nil || !strings.Contains(err.Error(), "/abs") || !strings.Contains(err.Error(), "x/../y") {
		t.Errorf("CompileGlobs(two bad) = %v, want both named", err)
	}
}

func TestGlobsProtects(t *testing.T) {
	g, err := CompileGlobs(ProtectedPaths("go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"a_test.go", true},
		{"pkg/a_test.go", true},
		{"pkg/a.go", false},
		// A protected file turned into a directory: what the agent puts
		// in it is protected too.
		{"pkg/a_test.go/evil.go", true},
		{"go.work/x", true},
		{"go.work", true},
		{"go.work.sum", true},
		{"go.mod", false},
		{"vendor/modules.txt", true},
		{"vendor", true},
		{"internal/testdata/golden.json", true},
		{"internal/testdata", true},
		{".", false},
	} {
		if got := g.Protects(tc.name); got != tc.want {
			t.Errorf("Protects(%q) = %t, want %t", tc.name, got, tc.want)
		}
	}
	var none *Globs
	if none.Protects("a_test.go") || none.MatchBelow(".") || !none.Empty() {
		t.Errorf("a nil *Globs matches something")
	}
}

func TestGlobsMatchBelow(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		dir      string
		want     bool
	}{
		{[]string{"vendor/**"}, ".", true},
		{[]string{"vendor/**"}, "vendor", true},
		{[]string{"vendor/**"}, "vendor/a", true},
		{[]string{"vendor/**"}, "src", false},
		{[]string{"tests/**", "benches/**"}, "src/tests", false},
		{[]string{"**/*_test.go"}, "a/b/c", true},
		{[]string{"a/*/c.go"}, "a/x", true},
		{[]string{"a/*/c.go"}, "a/x/y", false},
		{[]string{"a/*/c.go"}, "b", false},
		{[]string{"go.work"}, ".", true},
		{[]string{"go.work"}, "sub", false},
		{[]string{"a/**/b"}, "a/x/y", true},
		{nil, ".", false},
	} {
		g, err := CompileGlobs(tc.patterns)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.MatchBelow(tc.dir); got != tc.want {
			t.Errorf("%q.MatchBelow(%q) = %t, want %t", tc.patterns, tc.dir, got, tc.want)
		}
	}
}

func TestProtectedPaths(t *testing.T) {
	for _, lang := range []string{"go", "rust", "c"} {
		ps := ProtectedPaths(lang)
		if _, err := CompileGlobs(ps); err != nil {
			t.Errorf("ProtectedPaths(%q) = %q: %v", lang, ps, err)
		}
	}
	if got := ProtectedPaths("c"); len(got) != 0 {
		t.Errorf("ProtectedPaths(c) = %q, want none", got)
	}
	if got := ProtectedPaths("go"); !slices.Contains(got, "vendor/**") || !slices.Contains(got, "**/*_test.go") {
		t.Errorf("ProtectedPaths(go) = %q", got)
	}
	// The caller may change what it gets.
	ProtectedPaths("go")[0] = "x"
	if ProtectedPaths("go")[0] == "x" {
		t.Errorf("ProtectedPaths shares its slice")
	}
}
