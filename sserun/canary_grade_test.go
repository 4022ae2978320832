package sserun

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// A Go task for the daemon: module example.invalid/calc, whose Abs
// forgets negative numbers. The hidden tests add abs_test.go to the root
// package (TestAbs fails on the buggy tree, TestAbsZero, not listed,
// passes); strs holds the pass_to_pass test TestTrim, which no hidden
// test touches.
const (
	goBuildScript = "set -eu\ngo build ./...\n"
	goTestScript  = "set -eu\n\"$(dirname \"$0\")/build.sh\"\ngo test -count=1 -json ./... >\"$SSE_TEST_REPORT\"\n"
	// goRunScript checks that the grader's tests are out of the tree when
	// the proofs of concept run: the proof of concept holds how many test
	// files the tree has.
	goRunScript = "set -eu\nn=$(find . -name '*_test.go' | wc -l)\n[ \"$n\" -eq \"$(cat \"$1\")\" ] || { echo \"$n test files\"; exit 1; }\n"
	goMod       = "module example.invalid/calc\n\ngo 1.21\n"
	absBuggy    = "package calc\n\n// Abs is |x|.\nfunc Abs(x int) int { return x }\n"
	absFixed    = "package calc\n\n// Abs is |x|.\nfunc Abs(x int) int {\n\tif x < 0 {\n\t\treturn -x\n\t}\n\treturn x\n}\n"
	// absCrashes panics: a hidden test that calls it crashes the test
	// binary.
	absCrashes = "package calc\n\n// Abs is |x|.\nfunc Abs(x int) int {\n\tvar m map[int]int\n\tm[x] = x\n\treturn x\n}\n"
	strsGo     = "package strs\n\nimport \"strings\"\n\n// Trim trims.\nfunc Trim(s string) string { return strings.TrimSpace(s) }\n"
	strsTest   = "package strs\n\nimport \"testing\"\n\nfunc TestTrim(t *testing.T) {\n\tif Trim(\" a \") != \"a\" {\n\t\tt.Fatal(\"no\")\n\t}\n}\n"
	// absTestDiff adds abs_test.go; TestAbs's failure is on line 7.
	absTestDiff = `diff --git a/abs_test.go b/abs_test.go
new file mode 100644
--- /dev/null
+++ b/abs_test.go
@@ -0,0 +1,13 @@
+package calc
+
+import "testing"
+
+func TestAbs(t *testing.T) {
+	if got := Abs(-3); got != 3 {
+		t.Errorf("Abs(-3) = %d, want 3", got)
+	}
+}
+
+func TestAbsZero(t *testing.T) {
+	_ = Abs(0)
+}
`
)

// forgeCode re-runs the test binary as a child with the same arguments,
// rewrites "--- FAIL:" to "--- PASS:" in the child's test2json framing
// (the \x16 marker is the child's own), runs the rest with -test.skip
// when a test panics (reporting that one passed), prints PASS and exits
// 0: the attack seen on a real task.
const forgeCode = `
func forge() int {
	var done []string
	var out bytes.Buffer
	end := "PASS\n"
	for round := 0; round < 20; round++ {
		args := append([]string{}, os.Args[1:]...)
		if len(done) > 0 {
			args = append(args, "-test.skip=^("+strings.Join(done, "|")+")$")
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), "ZZ_CHILD=1")
		b, _ := cmd.CombinedOutput()
		panicked := false
		for _, l := range strings.SplitAfter(string(b), "\n") {
			bare := strings.TrimLeft(l, "\x16")
			switch {
			case strings.HasPrefix(bare, "panic: "):
				panicked = true
			case bare == "PASS\n" || bare == "FAIL\n":
				end = strings.Replace(l, "FAIL", "PASS", 1)
				continue
			case strings.HasPrefix(bare, "--- "):
				l = strings.Replace(l, "--- FAIL:", "--- PASS:", 1)
				if f := strings.Fields(bare); len(f) > 2 {
					done = append(done, regexp.QuoteMeta(f[2]))
				}
			}
			if panicked {
				break
			}
			out.WriteString(l)
		}
		if !panicked {
			break
		}
	}
	os.Stdout.Write(out.Bytes())
	os.Stdout.WriteString(end)
	return 0
}
`

const forgeImports = "import (\n\t\"bytes\"\n\t\"os\"\n\t\"os/exec\"\n\t\"regexp\"\n\t\"strings\"\n"

// The forger as a TestMain (a test file) and as an init of a non-test
// file, active only in a test binary.
const (
	testMainForger = "package calc\n\n" + forgeImports + "\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tif os.Getenv(\"ZZ_CHILD\") != \"\" {\n\t\tos.Exit(m.Run())\n\t}\n\tos.Exit(forge())\n}\n" + forgeCode
	initForger     = "package calc\n\n" + forgeImports + ")\n\nfunc init() {\n\tif !strings.HasSuffix(os.Args[0], \".test\") || os.Getenv(\"ZZ_CHILD\") != \"\" {\n\t\treturn\n\t}\n\tos.Exit(forge())\n}\n" + forgeCode
)

// goTask writes the Go task's root and source tree: the source holds abs
// (its calc.go) and the extra files.
func goTask(t testing.TB, abs string, extra map[string]string) *fakeTask {
	t.Helper()
	write := func(t testing.TB, name, content string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("these tests need go on PATH: %v", err)
	}
	// As sharedTempDir, for a benchmark too.
	base := t.TempDir()
	if err := os.Chmod(filepath.Dir(base), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o1777); err != nil {
		t.Fatal(err)
	}
	ft := &fakeTask{root: filepath.Join(base, "ssebench"), src: filepath.Join(base, "src"), work: filepath.Join(base, "work")}
	write(t, filepath.Join(ft.root, "scripts", "build.sh"), goBuildScript, 0o755)
	write(t, filepath.Join(ft.root, "scripts", "test.sh"), goTestScript, 0o755)
	write(t, filepath.Join(ft.root, "scripts", "run.sh"), goRunScript, 0o755)
	write(t, filepath.Join(ft.root, "diffs", "test.diff"), absTestDiff, 0o644)
	files := map[string]string{"go.mod": goMod, "calc.go": abs, "strs/strs.go": strsGo, "strs/strs_test.go": strsTest}
	for k, v := range extra {
		files[k] = v
	}
	tests := 0
	for name, content := range files {
		write(t, filepath.Join(ft.src, filepath.FromSlash(name)), content, 0o644)
		if strings.HasSuffix(name, "_test.go") {
			tests++
		}
	}
	write(t, filepath.Join(ft.root, "pocs", "count.txt"), strconv.Itoa(tests)+"\n", 0o644)
	if err := os.Mkdir(ft.work, 0o1777); err != nil {
		t.Fatal(err)
	}
	cfg := `id: go-1
source: ` + ft.src + `
scripts: {build: scripts/build.sh, test: scripts/test.sh, run: scripts/run.sh}
files: {poc: [pocs/count.txt], future_test: diffs/test.diff}
tests: {format: go-test-json, fail_to_pass: [TestAbs], pass_to_pass: [TestTrim]}
`
	write(t, filepath.Join(ft.root, ConfigName), cfg, 0o644)
	c, err := ReadTaskConfig(ft.root)
	if err != nil {
		t.Fatal(err)
	}
	ft.cfg = c
	return ft
}

// goEnv is the scripts' environment for the Go task: this machine's go
// and its build cache (a warm one, as the base image's seed makes it),
// offline.
var goEnv = sync.OnceValue(func() []string {
	cache, _ := exec.Command("go", "env", "GOCACHE").Output()
	return []string{"PATH=" + os.Getenv("PATH"), "GOCACHE=" + strings.TrimSpace(string(cache)),
		"GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS=", "GOWORK=off", "CGO_ENABLED=0"}
})

func (ft *fakeTask) goDaemon(t *testing.T) *Daemon {
	t.Helper()
	return ft.daemon(t, WithEnv(goEnv()))
}

// TestDaemonCanary grades a real Go module: a fix passes by name with the
// canary; a buggy tree and a hidden test that crashes the test binary
// fail; a test binary that forges its report, from a TestMain or from an
// init of a non-test file, is caught by the canary: an integrity verdict,
// not a failed check.
func TestDaemonCanary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module (a few seconds)")
	}
	for _, tt := range []struct {
		name      string
		abs       string
		extra     map[string]string
		attack    bool
		ok        bool
		integrity string
		failed    string   // intent_test's Failed
		want      []string // in intent_test's output
		last      string   // intent_test's output's last line, when set
		not       string   // not in intent_test's output, when set
	}{
		{name: "fixed", abs: absFixed, ok: true,
			want: []string{"intent_test judged by name: 2 of 2 listed tests passed", "must pass: pass;", "must fail: fail]", "which is not judged"}},
		{name: "still buggy", abs: absBuggy, failed: "1 listed test did not pass",
			// The canary keeps abs_test.go's line numbers.
			want: []string{"abs_test.go:7: Abs(-3) = -3, want 3", "fail_to_pass TestAbs: failed"}},
		{name: "a hidden test crashes the binary", abs: absCrashes, failed: "1 listed test did not pass",
			want: []string{"panic: assignment to entry in nil map", "fail_to_pass TestAbs: failed"},
			// What failed ends the output, for the one line verify shows;
			// the exit status, which the canary makes non-zero, is no
			// reason.
			last: "[ssebench: intent_test failed: 1 listed test did not pass]", not: "which is not judged"},
		{name: "TestMain forges the report", abs: absBuggy, extra: map[string]string{"zz_main_test.go": testMainForger},
			attack: true, integrity: contract.IntegrityReportForged, failed: contract.IntegrityReportForged,
			want: []string{"[ssebench: the report is forged: the test that must fail passed]"}},
		{name: "an init forges the report", abs: absBuggy, extra: map[string]string{"zz_forge.go": initForger},
			attack: true, integrity: contract.IntegrityReportForged, failed: contract.IntegrityReportForged,
			want: []string{"[ssebench: the report is forged: the test that must fail passed]"}},
		{name: "TestMain forges a crash away", abs: absCrashes, extra: map[string]string{"zz_main_test.go": testMainForger},
			attack: true, integrity: contract.IntegrityReportForged, failed: contract.IntegrityReportForged,
			want: []string{"[ssebench: the report is forged: the test that must fail passed]"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.attack {
				hostile.Attack(t, "hidden tests forged by the test binary", "the grader's canary: a test that must fail, under a random name in a random file")
			}
			ft := goTask(t, tt.abs, tt.extra)
			got := ft.goDaemon(t).Handle(context.Background(), Request{Op: OpGrade}, true)
			if got.Error != "" || got.Grade == nil || got.Grade.IntentTest == nil || got.Grade.Test == nil || got.Grade.PoC == nil {
				t.Fatalf("grade = %+v", got)
			}
			g := got.Grade
			it := g.IntentTest
			if got.OK != tt.ok || g.Integrity != tt.integrity || it.Failed != tt.failed || g.Judged != contract.JudgedByName {
				t.Errorf("grade ok = %t, integrity %q, intent_test failed %q, judged %q; want %t, %q, %q, %q\n%s\nintent_test:\n%s\ntest:\n%s",
					got.OK, g.Integrity, it.Failed, g.Judged, tt.ok, tt.integrity, tt.failed, contract.JudgedByName, got.Output, it.Output, g.Test.Output)
			}
			if it.OK != tt.ok {
				t.Errorf("intent_test ok = %t, want %t", it.OK, tt.ok)
			}
			for _, w := range tt.want {
				if !strings.Contains(it.Output, w) {
					t.Errorf("intent_test's output does not say %q:\n%s", w, it.Output)
				}
			}
			lines := strings.Split(strings.TrimSpace(it.Output), "\n")
			if tt.last != "" && lines[len(lines)-1] != tt.last {
				t.Errorf("intent_test's output ends with %q, want %q", lines[len(lines)-1], tt.last)
			}
			if tt.not != "" && strings.Contains(it.Output, tt.not) {
				t.Errorf("intent_test's output says %q:\n%s", tt.not, it.Output)
			}
			// The test check carries the canary too where the package
			// has a test file without the hidden tests.
			if _, ok := tt.extra["zz_main_test.go"]; ok && g.Test.Failed != contract.IntegrityReportForged {
				t.Errorf("test failed %q, want %q:\n%s", g.Test.Failed, contract.IntegrityReportForged, g.Test.Output)
			}
			if tt.integrity == "" && (!g.Test.OK || !strings.Contains(g.Test.Output, "no grader's tests in .: no test file to add them to")) {
				t.Errorf("test failed:\n%s", g.Test.Output)
			}
			// The grader's tests are out of the tree before the proofs
			// of concept run, and out of the report's outcomes.
			if !g.PoC.OK {
				t.Errorf("poc failed: the grader's test file stayed in the tree:\n%s", g.PoC.Output)
			}
			tests, ok, err := ParseOutcomes(strings.NewReader(it.Output))
			if err != nil || !ok {
				t.Fatalf("ParseOutcomes = %v, %v", ok, err)
			}
			for _, x := range tests {
				if x.Name != "TestAbs" && x.Name != "TestAbsZero" && x.Name != "TestTrim" && x.Name != "TestMain" {
					t.Errorf("the outcomes hold %s, which is not a test of the tree", x.Name)
				}
			}
			ft.checkClean(t)
		})
	}
}

// goSeedScripts make the Go task's scripts start, as the real tasks' do,
// from an empty build cache seeded with the standard library's
// ($GO_BUILD_CACHE_SEED): every grade compiles the module itself.
const (
	goSeedEnv = `export GOCACHE="$HOME/go-build"
if [ ! -e "$GOCACHE/.seeded" ]; then mkdir -p "$GOCACHE" && cp -R "$GO_BUILD_CACHE_SEED/." "$GOCACHE/" && : >"$GOCACHE/.seeded"; fi
`
	goSeedBuild = "set -eu\n. \"$(dirname \"$0\")/env.sh\"\ngo build ./...\n"
	goSeedTest  = "set -eu\n\"$(dirname \"$0\")/build.sh\"\n. \"$(dirname \"$0\")/env.sh\"\ngo test -count=1 -json ./... >\"$SSE_TEST_REPORT\"\n"
)

// BenchmarkGradeCanary measures what the canary costs a grade of a small
// module: each round grades the fixed tree without the canary, then with
// it, and the metrics are the mean grade of each and the difference in
// percent. "tested" is a project whose package the hidden tests touch has
// tests of its own; in "hidden only" its only tests are the hidden ones.
// Run it alone on a quiet machine:
//
//	go test -run '^$' -bench GradeCanary -benchtime 10x ./sserun
func BenchmarkGradeCanary(b *testing.B) {
	seed := b.TempDir()
	mod := b.TempDir()
	for name, content := range map[string]string{"go.mod": "module example.invalid/seed\n\ngo 1.21\n",
		"s.go": "package seed\n\nimport _ \"strings\"\n", "s_test.go": "package seed\n\nimport \"testing\"\n\nfunc TestS(t *testing.T) {}\n"} {
		if err := os.WriteFile(filepath.Join(mod, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-count=1", "-json", "./...")
	cmd.Dir, cmd.Env = mod, append(goEnv(), "GOCACHE="+seed, "HOME="+b.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("seeding the build cache: %v\n%s", err, out)
	}
	env := append(slices.DeleteFunc(slices.Clone(goEnv()), func(kv string) bool { return strings.HasPrefix(kv, "GOCACHE=") }), "GO_BUILD_CACHE_SEED="+seed)
	for _, layout := range []struct {
		name  string
		extra map[string]string
	}{
		{"tested", map[string]string{"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAbsOne(t *testing.T) {\n\tif Abs(1) != 1 {\n\t\tt.Fatal(\"no\")\n\t}\n}\n"}},
		{"hidden only", nil},
	} {
		b.Run(layout.name, func(b *testing.B) {
			ft := goTask(b, absFixed, layout.extra)
			for name, content := range map[string]string{"env.sh": goSeedEnv, "build.sh": goSeedBuild, "test.sh": goSeedTest} {
				if err := os.WriteFile(filepath.Join(ft.root, "scripts", name), []byte(content), 0o755); err != nil {
					b.Fatal(err)
				}
			}
			grade := func(canary bool) time.Duration {
				noCanary = !canary
				defer func() { noCanary = false }()
				d, err := NewDaemon(ft.root, ft.cfg, WithWorkDir(ft.work), WithEnv(env))
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				got := d.Handle(context.Background(), Request{Op: OpGrade}, true)
				took := time.Since(start)
				if !got.OK || got.Grade == nil || (got.Grade.Judged == contract.JudgedByName) != canary {
					b.Fatalf("grade (canary %t) = %+v", canary, got)
				}
				return took
			}
			var without, with time.Duration
			for b.Loop() {
				without += grade(false)
				with += grade(true)
			}
			n := float64(b.N)
			b.ReportMetric(float64(without.Milliseconds())/n, "ms/grade-without")
			b.ReportMetric(float64(with.Milliseconds())/n, "ms/grade-with")
			b.ReportMetric(100*(float64(with)-float64(without))/float64(without), "%extra")
		})
	}
}
