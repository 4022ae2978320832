package task

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

func TestConfigTests(t *testing.T) {
	for _, tt := range []struct {
		name, tests string
		want        []string
	}{
		{"valid", "tests:\n  format: go-test-json\n  fail_to_pass: [TestX/sub, example.com/kv.TestY]\n  pass_to_pass:\n  - TestZ\n", nil},
		{"format only", "tests: {format: libtest}\n", nil},
		{"unknown format", "tests: {format: tap, fail_to_pass: [a]}\n", []string{`c.yaml:23: tests.format: "tap" is not one of go-test-json, junit-xml, libtest`}},
		{"lists without format", "tests: {fail_to_pass: [a]}\n", []string{"c.yaml: tests.format: is required when tests are listed (one of go-test-json, junit-xml, libtest)"}},
		{"in both lists", "tests: {format: libtest, fail_to_pass: [a, b], pass_to_pass: [b, '']}\n", []string{
			`c.yaml:23: tests.pass_to_pass[0]: "b" is already listed as tests.fail_to_pass[1]`,
			"c.yaml:23: tests.pass_to_pass[1]: is empty",
		}},
		{"unknown key", "tests: {format: libtest, FAIL_TO_PASS: [a]}\n", []string{`c.yaml:23: unknown key "tests.FAIL_TO_PASS"`}},
		{"protected", "tests:\n  protected: ['**/*_test.go', 'fixtures/**', go.mod]\n", nil},
		{"protected, empty", "tests: {protected: []}\n", nil},
		{"protected, bad globs", "tests:\n  protected:\n  - /etc/passwd\n  - ../x\n  - a//b\n  - 'a/[b'\n  - ''\n  - vendor/**\n  - vendor/**\n", []string{
			`c.yaml:25: tests.protected[0]: "/etc/passwd" is not relative to SOURCE_DIR`,
			`c.yaml:26: tests.protected[1]: "../x" has a ".." element: it must name paths inside SOURCE_DIR`,
			`c.yaml:27: tests.protected[2]: "a//b" is not a clean path (use "a/b")`,
			`c.yaml:28: tests.protected[3]: "a/[b" has a malformed element "[b" (a "[" without "]", or a trailing "\")`,
			`c.yaml:29: tests.protected[4]: is empty`,
			`c.yaml:31: tests.protected[6]: "vendor/**" is already listed as tests.protected[5]`,
		}},
		{"protected, not a list", "tests: {protected: vendor/**}\n", []string{"c.yaml:23: tests.protected: expected a list, got a scalar"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, ps := ParseConfig("c.yaml", []byte(validConfig+tt.tests))
			if diff := cmp.Diff(tt.want, problemStrings(ps)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
	noFuture := edit(t, "  future_test: diffs/test.diff\n", "  future_test:\n") + "tests: {format: libtest, fail_to_pass: [a]}\n"
	if _, ps := ParseConfig("c.yaml", []byte(noFuture)); len(ps) != 1 || !strings.Contains(ps[0].Msg, "no files.future_test") {
		t.Errorf("fail_to_pass without future_test: %v", ps)
	}
}

// TestConfigProtectedPaths: the key replaces the language's defaults when
// present, even as an empty list, and survives a round trip through YAML
// (dataset verify --write-tests) and JSON (the manifest's metadata) as
// absent, empty or set.
func TestConfigProtectedPaths(t *testing.T) {
	for _, tt := range []struct {
		name, tests, lang string
		want              []string
	}{
		{"go defaults", "", "go", []string{"**/*_test.go", "**/testdata/**", "vendor/**", "go.work", "go.work.sum"}},
		{"go defaults, tests without the key", "tests: {format: go-test-json}\n", "go", []string{"**/*_test.go", "**/testdata/**", "vendor/**", "go.work", "go.work.sum"}},
		{"go defaults, null", "tests: {protected: null}\n", "go", []string{"**/*_test.go", "**/testdata/**", "vendor/**", "go.work", "go.work.sum"}},
		{"rust defaults", "", "rust", []string{"tests/**", "benches/**"}},
		{"c defaults", "", "c", nil},
		{"empty list: nothing", "tests: {protected: []}\n", "go", []string{}},
		{"own list", "tests: {protected: [t/**]}\n", "c", []string{"t/**"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, ps := ParseConfig("c.yaml", []byte(edit(t, "language: go\n", "language: "+tt.lang+"\n")+tt.tests))
			if len(ps) > 0 {
				t.Fatal(ps)
			}
			if diff := cmp.Diff(tt.want, cfg.ProtectedPaths()); diff != "" {
				t.Errorf("ProtectedPaths() (-want +got):\n%s", diff)
			}
			if cfg.Tests == nil {
				return
			}
			y, err := yaml.Marshal(cfg.Tests)
			if err != nil {
				t.Fatal(err)
			}
			var back Tests
			if err := yaml.Unmarshal(y, &back); err != nil {
				t.Fatal(err)
			}
			j, err := json.Marshal(cfg.Tests)
			if err != nil {
				t.Fatal(err)
			}
			var backJSON Tests
			if err := json.Unmarshal(j, &backJSON); err != nil {
				t.Fatal(err)
			}
			for name, got := range map[string]*[]string{"yaml": back.Protected, "json": backJSON.Protected} {
				if diff := cmp.Diff(cfg.Tests.Protected, got); diff != "" || (got == nil) != (cfg.Tests.Protected == nil) {
					t.Errorf("tests.protected through %s (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

// TestConfigWarnsExitCodeOnly: a task without lists is still valid, but
// said to be judged by exit code only; one with hidden tests is told that
// an init that exits 0 passes them, and how to write the lists.
func TestConfigWarnsExitCodeOnly(t *testing.T) {
	cfg, ps := ParseConfig("c.yaml", []byte(validConfig))
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	want := "judged by exit status: an init that exits 0 passes; write the lists with `ssebench dataset verify --write-tests`"
	if w := cfg.Warnings(); len(w) != 1 || w[0] != want {
		t.Errorf("Warnings() = %q, want %q", w, want)
	}
	cfg, ps = ParseConfig("c.yaml", []byte(edit(t, "  future_test: diffs/test.diff\n", "  future_test:\n")))
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	if w := cfg.Warnings(); len(w) != 1 || !strings.Contains(w[0], "judged by the test script's exit code only") {
		t.Errorf("Warnings() without future_test = %q", w)
	}
	cfg, _ = ParseConfig("c.yaml", []byte(validConfig+"tests: {format: libtest, pass_to_pass: [a]}\n"))
	if w := cfg.Warnings(); len(w) != 0 {
		t.Errorf("Warnings() with lists = %q", w)
	}
}
