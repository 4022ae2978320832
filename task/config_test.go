package task

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// validConfig is a complete, valid config. Its line numbers matter: the
// cases below replace single lines and expect problems on them.
const validConfig = `id: gjson-196-bf4efcb
project: gjson
repository: https://github.com/tidwall/gjson
language: go
source: /src/gjson
task_description:
  crash_report:
  - reports/crash.txt
  bug_description:
scripts:
  build: scripts/build.sh
  run: scripts/run.sh
  test: scripts/test.sh
files:
  patch: diffs/patch.diff
  poc:
  - pocs/poc.go
  future_test: diffs/test.diff
  intent_test:
sanitizer:
type: Slice bounds out of range
originality: public
`

// edit returns validConfig with each old line replaced by new.
func edit(t *testing.T, pairs ...string) string {
	t.Helper()
	s := validConfig
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("validConfig has no %q", pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

func problemStrings(ps Problems) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

func TestParseConfigValid(t *testing.T) {
	cfg, ps := ParseConfig("c.yaml", []byte(validConfig))
	if len(ps) > 0 {
		t.Fatalf("ParseConfig(valid) problems:\n%v", ps)
	}
	str := func(s string) *string { return &s }
	want := &Config{
		ID:         "gjson-196-bf4efcb",
		Project:    "gjson",
		Repository: "https://github.com/tidwall/gjson",
		Language:   "go",
		Source:     "/src/gjson",
		TaskDescription: TaskDescription{
			CrashReport: []string{"reports/crash.txt"},
		},
		Scripts: Scripts{Build: str("scripts/build.sh"), Run: str("scripts/run.sh"), Test: str("scripts/test.sh")},
		Files: ConfigFiles{
			Patch:      str("diffs/patch.diff"),
			FutureTest: str("diffs/test.diff"),
			Poc:        []string{"pocs/poc.go"},
		},
		Type:        str("Slice bounds out of range"),
		Originality: str("public"),
	}
	if diff := cmp.Diff(want, cfg); diff != "" {
		t.Errorf("ParseConfig(valid) mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"build", "poc", "function_test", "intent_test"}, cfg.Checks()); diff != "" {
		t.Errorf("Checks() mismatch (-want +got):\n%s", diff)
	}
	// caps, which the runtime reads too, parse here.
	cfg, ps = ParseConfig("c.yaml", []byte(validConfig+"caps:\n  changed_bytes: 512Mi\n  file_bytes: 1073741824\n  changed_files: 50000\n"))
	if len(ps) > 0 || cfg.Caps == nil || *cfg.Caps != (Caps{ChangedBytes: "512Mi", FileBytes: "1073741824", ChangedFiles: 50000}) {
		t.Errorf("ParseConfig(caps) = %+v, %v", cfg.Caps, ps)
	}
}

func TestParseConfigProblems(t *testing.T) {
	tests := []struct {
		name   string
		config string
		want   []string
	}{{
		name:   "not YAML",
		config: "id: [\n",
		want:   []string{"c.yaml:1: did not find expected node content"},
	}, {
		name:   "empty",
		config: "",
		want:   []string{"c.yaml: is empty"},
	}, {
		name:   "not a mapping",
		config: "- a\n",
		want:   []string{"c.yaml:1: the document: expected a mapping, got a list"},
	}, {
		name:   "section of the wrong shape",
		config: edit(t, "scripts:\n  build: scripts/build.sh\n  run: scripts/run.sh\n  test: scripts/test.sh\n", "scripts: build.sh\n\n\n\n"),
		want:   []string{"c.yaml:10: scripts: expected a mapping, got a scalar"},
	}, {
		name:   "unknown key",
		config: edit(t, "sanitizer:\n", "foo: 1\n"),
		want:   []string{`c.yaml:20: unknown key "foo"`},
	}, {
		name:   "unknown nested keys, all reported",
		config: edit(t, "  intent_test:\n", "  pocs: x\n", "  bug_description:\n", "  issues: x\n"),
		want:   []string{`c.yaml:9: unknown key "task_description.issues"`, `c.yaml:19: unknown key "files.pocs"`},
	}, {
		name:   "wrong shape",
		config: edit(t, "  build: scripts/build.sh\n", "  build: [a]\n", "  - pocs/poc.go\n", "  - {a: b}\n"),
		want:   []string{"c.yaml:11: scripts.build: expected a string, got a list", "c.yaml:17: files.poc[0]: expected a string, got a mapping"},
	}, {
		name:   "caps that the runtime cannot read",
		config: validConfig + "caps:\n  changed_bytes: 512Mo\n  file_bytes: 64Mi\n  changed_files: -1\n",
		want:   []string{`c.yaml:24: caps.changed_bytes: "512Mo" is not a size: write bytes, or a number with Ki, Mi, Gi or Ti (e.g. 4Gi)`, "c.yaml:26: caps.changed_files: -1 is negative"},
	}, {
		name:   "key given twice",
		config: validConfig + "id: other\n",
		want:   []string{`c.yaml:23: mapping key "id" already defined at line 1`},
	}, {
		name:   "id missing",
		config: edit(t, "id: gjson-196-bf4efcb\n", "\n"),
		want:   []string{"c.yaml: id: is required"},
	}, {
		name:   "id pattern",
		config: edit(t, "id: gjson-196-bf4efcb\n", "id: gjson..196\n"),
		want:   []string{`c.yaml:1: id: "gjson..196" is not a valid task id: use letters and digits, separated by '.', '_', '__' or dashes`},
	}, {
		name:   "id too long",
		config: edit(t, "id: gjson-196-bf4efcb\n", "id: "+strings.Repeat("a", 129)+"\n"),
		want:   []string{"c.yaml:1: id: is 129 characters long, more than 128"},
	}, {
		name:   "project missing",
		config: edit(t, "project: gjson\n", "project: '  '\n"),
		want:   []string{"c.yaml:2: project: is required"},
	}, {
		name:   "repository not https",
		config: edit(t, "repository: https://github.com/tidwall/gjson\n", "repository: http://github.com/tidwall/gjson\n"),
		want:   []string{`c.yaml:3: repository: "http://github.com/tidwall/gjson" is not an https URL`},
	}, {
		name:   "repository missing",
		config: edit(t, "repository: https://github.com/tidwall/gjson\n", "\n"),
		want:   []string{"c.yaml: repository: is required"},
	}, {
		name:   "language",
		config: edit(t, "language: go\n", "language: java\n"),
		want:   []string{`c.yaml:4: language: "java" is not one of c, go, rust`},
	}, {
		name:   "language missing",
		config: edit(t, "language: go\n", "\n"),
		want:   []string{"c.yaml: language: is required (one of c, go, rust)"},
	}, {
		name:   "source relative",
		config: edit(t, "source: /src/gjson\n", "source: src/gjson\n"),
		want:   []string{`c.yaml:5: source: "src/gjson" must be an absolute path`},
	}, {
		name:   "source root",
		config: edit(t, "source: /src/gjson\n", "source: /\n"),
		want:   []string{"c.yaml:5: source: must not be /"},
	}, {
		name:   "source not clean",
		config: edit(t, "source: /src/gjson\n", "source: /src/../gjson/\n"),
		want:   []string{`c.yaml:5: source: "/src/../gjson/" is not a clean path (use "/gjson")`},
	}, {
		name:   "source missing",
		config: edit(t, "source: /src/gjson\n", "\n"),
		want:   []string{"c.yaml: source: is required"},
	}, {
		name:   "task description empty",
		config: edit(t, "  crash_report:\n  - reports/crash.txt\n", "  issue: ' '\n  crash_report: []\n"),
		want:   []string{"c.yaml:6: task_description: at least one of issue, crash_report and bug_description must be set"},
	}, {
		name:   "task description missing",
		config: edit(t, "task_description:\n  crash_report:\n  - reports/crash.txt\n  bug_description:\n", ""),
		want:   []string{"c.yaml: task_description: is required"},
	}, {
		name:   "build and test scripts required",
		config: edit(t, "  build: scripts/build.sh\n", "  build:\n", "  test: scripts/test.sh\n", "\n"),
		want:   []string{"c.yaml:11: scripts.build: is required", "c.yaml: scripts.test: is required"},
	}, {
		name:   "scripts missing",
		config: edit(t, "scripts:\n  build: scripts/build.sh\n  run: scripts/run.sh\n  test: scripts/test.sh\n", ""),
		want:   []string{"c.yaml: scripts: is required (with build and test)"},
	}, {
		name:   "files missing",
		config: edit(t, "files:\n  patch: diffs/patch.diff\n  poc:\n  - pocs/poc.go\n  future_test: diffs/test.diff\n  intent_test:\n", ""),
		want:   []string{"c.yaml: files: is required"},
	}, {
		name:   "absolute path",
		config: edit(t, "  patch: diffs/patch.diff\n", "  patch: /ssebench/diffs/patch.diff\n"),
		want:   []string{`c.yaml:15: files.patch: "/ssebench/diffs/patch.diff" must be relative to /ssebench`},
	}, {
		name:   "escaping paths",
		config: edit(t, "  - pocs/poc.go\n", "  - pocs/../../etc/passwd\n", "  run: scripts/run.sh\n", "  run: ..\n"),
		want: []string{
			`c.yaml:12: scripts.run: ".." is outside /ssebench`,
			`c.yaml:17: files.poc[0]: "pocs/../../etc/passwd" is outside /ssebench`,
		},
	}, {
		name:   "path naming /ssebench itself",
		config: edit(t, "  - reports/crash.txt\n", "  - ./\n"),
		want:   []string{`c.yaml:8: task_description.crash_report[0]: "./" names /ssebench itself, not a file in it`},
	}, {
		name:   "empty path",
		config: edit(t, "  future_test: diffs/test.diff\n", "  future_test: ''\n"),
		want:   []string{"c.yaml:18: files.future_test: is empty"},
	}, {
		name:   "originality",
		config: edit(t, "originality: public\n", "originality: private\n"),
		want:   []string{`c.yaml:22: originality: "private" is not one of public, crafted`},
	}, {
		name:   "every problem at once",
		config: "id: x/y\nlanguage: cobol\nextra: 1\n",
		want: []string{
			`c.yaml:3: unknown key "extra"`,
			`c.yaml:1: id: "x/y" is not a valid task id: use letters and digits, separated by '.', '_', '__' or dashes`,
			"c.yaml: project: is required",
			"c.yaml: repository: is required",
			`c.yaml:2: language: "cobol" is not one of c, go, rust`,
			"c.yaml: source: is required",
			"c.yaml: task_description: is required",
			"c.yaml: scripts: is required (with build and test)",
			"c.yaml: files: is required",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ps := ParseConfig("c.yaml", []byte(tt.config))
			if diff := cmp.Diff(tt.want, problemStrings(ps)); diff != "" {
				t.Errorf("ParseConfig() problems mismatch (-want +got):\n%s", diff)
			}
			for _, p := range ps {
				if strings.ContainsAny(p.String(), "\n\r") {
					t.Errorf("problem %q spans several lines", p.String())
				}
			}
		})
	}
}

func TestConfigStringsTrimmedAndNullsKept(t *testing.T) {
	cfg, ps := ParseConfig("c.yaml", []byte(edit(t,
		"project: gjson\n", "project: '  gjson '\n",
		"  bug_description:\n", "  bug_description: \"\"\n",
	)))
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	if cfg.Project != "gjson" {
		t.Errorf("Project = %q, want %q", cfg.Project, "gjson")
	}
	if cfg.TaskDescription.BugDescription == nil || *cfg.TaskDescription.BugDescription != "" {
		t.Errorf("BugDescription = %v, want a pointer to \"\"", cfg.TaskDescription.BugDescription)
	}
	if cfg.TaskDescription.Issue != nil || cfg.Files.IntentTest != nil || cfg.Reference != nil {
		t.Errorf("absent or null keys are not nil: issue %v, intent_test %v, reference %v",
			cfg.TaskDescription.Issue, cfg.Files.IntentTest, cfg.Reference)
	}
}

func TestChecks(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"build and test only", Config{Scripts: Scripts{Build: str("b"), Test: str("t")}}, []string{"build", "function_test"}},
		{"run without poc", Config{Scripts: Scripts{Build: str("b"), Run: str("r"), Test: str("t")}}, []string{"build", "function_test"}},
		{"poc without run", Config{Scripts: Scripts{Build: str("b"), Test: str("t")}, Files: ConfigFiles{Poc: []string{"p"}}}, []string{"build", "function_test"}},
		{"future test", Config{Scripts: Scripts{Build: str("b"), Test: str("t")}, Files: ConfigFiles{FutureTest: str("f")}}, []string{"build", "function_test", "intent_test"}},
		{"security and intent files add nothing", Config{Scripts: Scripts{Build: str("b"), Test: str("t")}, Files: ConfigFiles{SecurityTest: str("s"), IntentTest: str("i")}}, []string{"build", "function_test"}},
		{"future test without test script", Config{Scripts: Scripts{Build: str("b")}, Files: ConfigFiles{FutureTest: str("f")}}, []string{"build"}},
		{"empty scripts are unset", Config{Scripts: Scripts{Build: str(""), Run: str(""), Test: str("t")}, Files: ConfigFiles{Poc: []string{"p"}, FutureTest: str("")}}, []string{"function_test"}},
		{"nothing", Config{}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.cfg.Checks()); diff != "" {
				t.Errorf("Checks() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestChecksAreTheGrades checks that manifest.json's checks are the
// grade's (contract.ChecksFor), renamed and reordered only, for every
// combination of the scripts and files that decide them: a check added to
// contract.Checks without a place in manifestOrder fails here.
func TestChecksAreTheGrades(t *testing.T) {
	str := func(s string) *string { return &s }
	for mask := range 1 << 5 {
		var cfg Config
		on := func(bit int) bool { return mask&(1<<bit) != 0 }
		if on(0) {
			cfg.Scripts.Build = str("b")
		}
		if on(1) {
			cfg.Scripts.Test = str("t")
		}
		if on(2) {
			cfg.Scripts.Run = str("r")
		}
		if on(3) {
			cfg.Files.Poc = []string{"p"}
		}
		if on(4) {
			cfg.Files.FutureTest = str("f")
		}
		want := contract.ChecksFor(contract.TaskChecks{Build: on(0), Test: on(1), Run: on(2), PoCs: on(3), FutureTest: on(4)})
		var got []string
		for _, c := range cfg.Checks() {
			if c == contract.ManifestTestCheck {
				c = contract.CheckTest
			}
			got = append(got, c)
		}
		slices.SortFunc(got, func(a, b string) int { return slices.Index(contract.Checks, a) - slices.Index(contract.Checks, b) })
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%+v: Checks() renamed and in contract.Checks order differ from ChecksFor (-want +got):\n%s", cfg.taskChecks(), diff)
		}
	}
	for _, c := range contract.Checks {
		if !slices.Contains(manifestOrder, c) {
			t.Errorf("check %q of contract.Checks has no place in manifest.json's order", c)
		}
	}
}
