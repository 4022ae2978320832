package sserun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// fakeTask is a task root and a source tree for the daemon: the project's
// main.txt is "good" when it builds and has "bug" while the proof of
// concept crashes it.
type fakeTask struct {
	root, src, work string
	cfg             *TaskConfig
}

const (
	buildScript = `set -e
. "$(dirname "$0")/lib.sh"
echo "building $LIB in $PWD (SOURCE_DIR=$SOURCE_DIR)"
echo "home=$HOME tmp=$TMPDIR key=${SSE_API_KEY:-none} other=${OTHER:-}"
test -f main.txt
cp main.txt built.txt
`
	testScript = `set -e
test -f built.txt || "$(dirname "$0")/build.sh"
grep -q good main.txt
for f in tests/*.sh; do [ -e "$f" ] || continue; sh "$f"; done
echo tests pass
`
	runScript = `poc=${1:?}
if grep -q crash "$poc" && grep -q bug main.txt; then echo CRASH; exit 86; fi
echo handled
`
)

func newFakeTask(t *testing.T, main string) *fakeTask {
	t.Helper()
	base := sharedTempDir(t)
	ft := &fakeTask{root: filepath.Join(base, "ssebench"), src: filepath.Join(base, "src"), work: filepath.Join(base, "work")}
	write(t, filepath.Join(ft.root, "scripts", "build.sh"), buildScript, 0o755)
	write(t, filepath.Join(ft.root, "scripts", "lib.sh"), "LIB=lib\n", 0o644)
	write(t, filepath.Join(ft.root, "scripts", "test.sh"), testScript, 0o755)
	write(t, filepath.Join(ft.root, "scripts", "run.sh"), runScript, 0o755)
	write(t, filepath.Join(ft.root, "pocs", "crash.txt"), "crash\n", 0o644)
	write(t, filepath.Join(ft.root, "diffs", "patch.diff"), "the fix\n", 0o644)
	write(t, filepath.Join(ft.src, "main.txt"), main, 0o644)
	if err := os.Mkdir(ft.work, 0o1777); err != nil {
		t.Fatal(err)
	}
	cfg := `id: fake-1
source: ` + ft.src + `
scripts: {build: scripts/build.sh, test: scripts/test.sh, run: scripts/run.sh}
files: {patch: diffs/patch.diff, poc: [pocs/crash.txt]}
`
	write(t, filepath.Join(ft.root, ConfigName), cfg, 0o644)
	c, err := ReadTaskConfig(ft.root)
	if err != nil {
		t.Fatal(err)
	}
	ft.cfg = c
	return ft
}

func (ft *fakeTask) daemon(t *testing.T, opts ...DaemonOption) *Daemon {
	t.Helper()
	opts = append([]DaemonOption{WithWorkDir(ft.work), WithEnv([]string{"PATH=" + os.Getenv("PATH"), "SSE_API_KEY=sekrit", "OTHER=kept", "HOME=/root"})}, opts...)
	d, err := NewDaemon(ft.root, ft.cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// checkClean fails when a scratch directory outlived its request.
func (ft *fakeTask) checkClean(t *testing.T) {
	t.Helper()
	ents, err := os.ReadDir(ft.work)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Errorf("work directory holds %d entries after the requests, want none", len(ents))
	}
}

func TestDaemonOps(t *testing.T) {
	ft := newFakeTask(t, "good bug\n")
	d := ft.daemon(t)
	ctx := context.Background()

	build := d.Handle(ctx, Request{Op: OpBuild}, false)
	if !build.OK || build.Exit != 0 || build.Error != "" {
		t.Fatalf("build = %+v, want ok", build)
	}
	// The scripts run in a copy of the tree, with their own HOME and
	// TMPDIR, without the API key.
	for _, want := range []string{"building lib in " + ft.work + "/ssebench-run-", "/work/src (SOURCE_DIR=" + ft.work, "/work/home tmp=" + ft.work, "/work/tmp key=none other=kept"} {
		if !strings.Contains(build.Output, want) {
			t.Errorf("build output %q does not contain %q", build.Output, want)
		}
	}
	if _, err := os.Stat(filepath.Join(ft.src, "built.txt")); err == nil {
		t.Error("the build wrote into SOURCE_DIR itself, not a copy")
	}

	test := d.Handle(ctx, Request{Op: OpTest}, false)
	if !test.OK || !strings.Contains(test.Output, "tests pass") {
		t.Errorf("test = %+v, want ok", test)
	}
	poc := d.Handle(ctx, Request{Op: OpPoC}, false)
	if poc.OK || poc.Exit != 86 || !strings.Contains(poc.Output, "=== pocs/crash.txt: exit 86\nCRASH\n") {
		t.Errorf("poc = %+v, want exit 86 with CRASH", poc)
	}
	if ping := d.Handle(ctx, Request{Op: OpPing}, false); !ping.OK {
		t.Errorf("ping = %+v", ping)
	}

	// The agent fixes the bug: the next request sees its current tree.
	write(t, filepath.Join(ft.src, "main.txt"), "good fixed\n", 0o644)
	if poc := d.Handle(ctx, Request{Op: OpPoC}, false); !poc.OK || !strings.Contains(poc.Output, "handled") {
		t.Errorf("poc after the fix = %+v, want ok", poc)
	}
	ft.checkClean(t)
}

func TestDaemonRefusals(t *testing.T) {
	ft := newFakeTask(t, "good\n")
	d := ft.daemon(t)
	ctx := context.Background()
	tests := []struct {
		name  string
		op    string
		admin bool
		want  string
	}{
		{"grade on the agent socket", OpGrade, false, `"grade" is only accepted on the admin socket`},
		{"unknown op", "shell", true, `unknown op "shell"`},
		{"empty op", "", false, `unknown op ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := d.Handle(ctx, Request{Op: tt.op}, tt.admin)
			if got.OK || !strings.HasPrefix(got.Error, tt.want) {
				t.Errorf("Handle(%q) = %+v, want error %q", tt.op, got, tt.want)
			}
		})
	}

	ft.cfg.Scripts.Run = ""
	if got := d.Handle(ctx, Request{Op: OpPoC}, false); got.Error != "the task has no proof of concept to run" {
		t.Errorf("poc without run script = %+v", got)
	}
	ft.checkClean(t)
}

func TestDaemonGrade(t *testing.T) {
	ignore := cmpopts.IgnoreFields(Result{}, "DurationMS", "Output")
	tests := []struct {
		name string
		main string
		want Grade
		ok   bool
	}{
		{"fixed", "good fixed\n", Grade{Build: &Result{OK: true}, Test: &Result{OK: true}, PoC: &Result{OK: true}, Judged: contract.JudgedExitStatus}, true},
		{"still buggy", "good bug\n", Grade{Build: &Result{OK: true}, Test: &Result{OK: true}, PoC: &Result{Exit: 86}, Judged: contract.JudgedExitStatus}, false},
		{"tests fail", "bad\n", Grade{Build: &Result{OK: true}, Test: &Result{Exit: 1}, PoC: &Result{OK: true}, Judged: contract.JudgedExitStatus}, false},
		{"does not build", "", Grade{Build: &Result{Exit: 1}, Test: &Result{Exit: -1, Skipped: "the build failed"}, PoC: &Result{Exit: -1, Skipped: "the build failed"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTask(t, tt.main)
			if tt.main == "" {
				os.Remove(filepath.Join(ft.src, "main.txt"))
			}
			got := ft.daemon(t).Handle(context.Background(), Request{Op: OpGrade}, true)
			if got.Error != "" || got.Grade == nil {
				t.Fatalf("grade = %+v", got)
			}
			if diff := cmp.Diff(tt.want, *got.Grade, ignore); diff != "" {
				t.Errorf("grade (-want +got):\n%s", diff)
			}
			if got.OK != tt.ok {
				t.Errorf("grade ok = %t, want %t (%s)", got.OK, tt.ok, got.Output)
			}
			ft.checkClean(t)
		})
	}
}

// withFutureTest gives the task hidden tests, run by the test script as
// tests/*.sh: the future_test diff adds tests/future.sh, which fails while
// main.txt has "bug", and changes tests/base.sh, which the source tree has.
func (ft *fakeTask) withFutureTest(t *testing.T) {
	t.Helper()
	write(t, filepath.Join(ft.src, "tests", "base.sh"), "true\n", 0o644)
	write(t, filepath.Join(ft.root, "diffs", "future.diff"), "--- /dev/null\n+++ b/tests/future.sh\n@@ -0,0 +1 @@\n+! grep -q bug main.txt\n"+
		"--- a/tests/base.sh\n+++ b/tests/base.sh\n@@ -1 +1 @@\n-true\n+test -f main.txt\n", 0o644)
	cfg := `id: fake-1
source: ` + ft.src + `
scripts: {build: scripts/build.sh, test: scripts/test.sh, run: scripts/run.sh}
files: {patch: diffs/patch.diff, poc: [pocs/crash.txt], future_test: diffs/future.diff}
`
	write(t, filepath.Join(ft.root, ConfigName), cfg, 0o644)
	c, err := ReadTaskConfig(ft.root)
	if err != nil {
		t.Fatal(err)
	}
	ft.cfg = c
}

func TestDaemonIntentTest(t *testing.T) {
	ignore := cmpopts.IgnoreFields(Result{}, "DurationMS", "Output")
	ok := &Result{OK: true}
	skipped := &Result{Exit: -1, Skipped: "the build failed"}
	tests := []struct {
		name    string
		main    string
		base    string // tests/base.sh as the agent left it
		want    Grade
		wantOut string
		// sum is the grade's own output, one line per check in
		// contract.Checks order, and exit the first failing check's.
		sum  string
		exit int
	}{
		{name: "fixed", main: "good fixed\n", base: "true\n",
			want: Grade{Build: ok, Test: ok, PoC: ok, IntentTest: ok, Judged: contract.JudgedExitStatus},
			sum:  "build: ok\ntest: ok\npoc: ok\nintent_test: ok"},
		{name: "still buggy", main: "good bug\n", base: "true\n",
			want: Grade{Build: ok, Test: ok, PoC: &Result{Exit: 86}, IntentTest: &Result{Exit: 1}, Judged: contract.JudgedExitStatus},
			sum:  "build: ok\ntest: ok\npoc: failed (exit 86)\nintent_test: failed (exit 1)", exit: 86},
		{name: "the agent changed what the hidden tests change", main: "good fixed\n", base: "echo mine\n",
			want:    Grade{Build: ok, Test: ok, PoC: ok, IntentTest: &Result{Exit: -1}, Judged: contract.JudgedExitStatus},
			wantOut: "diffs/future.diff does not apply to the agent's tree",
			sum:     "build: ok\ntest: ok\npoc: ok\nintent_test: failed (exit -1)", exit: -1},
		{name: "does not build", base: "true\n",
			want: Grade{Build: &Result{Exit: 1}, Test: skipped, PoC: skipped, IntentTest: skipped},
			sum:  "build: failed (exit 1)\ntest: skipped\npoc: skipped\nintent_test: skipped", exit: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := newFakeTask(t, tt.main)
			ft.withFutureTest(t)
			if tt.main == "" {
				os.Remove(filepath.Join(ft.src, "main.txt"))
			}
			write(t, filepath.Join(ft.src, "tests", "base.sh"), tt.base, 0o644)
			got := ft.daemon(t).Handle(context.Background(), Request{Op: OpGrade}, true)
			if got.Error != "" || got.Grade == nil {
				t.Fatalf("grade = %+v", got)
			}
			if diff := cmp.Diff(tt.want, *got.Grade, ignore); diff != "" {
				t.Errorf("grade (-want +got):\n%s", diff)
			}
			if r := got.Grade.IntentTest; tt.wantOut != "" && (r == nil || !strings.Contains(r.Output, tt.wantOut)) {
				t.Errorf("intent_test = %+v, want its output to say %q", r, tt.wantOut)
			}
			wantOK := tt.name == "fixed"
			if got.OK != wantOK {
				t.Errorf("grade ok = %t, want %t (%s)", got.OK, wantOK, got.Output)
			}
			if got.Output != tt.sum || got.Exit != tt.exit {
				t.Errorf("grade = exit %d, %q; want exit %d, %q", got.Exit, got.Output, tt.exit, tt.sum)
			}
			// The hidden tests never reach the agent's tree.
			if _, err := os.Stat(filepath.Join(ft.src, "tests", "future.sh")); err == nil {
				t.Error("a hidden test was written into the agent's tree")
			}
			ft.checkClean(t)
		})
	}
}

// TestDaemonCopiesOnlyScripts checks what of the task root a script (and
// so the agent's code that a build runs) can find: the scripts' folder and,
// for proofs of concept, the proofs; never the reference patch.
func TestDaemonCopiesOnlyScripts(t *testing.T) {
	ft := newFakeTask(t, "good\n")
	write(t, filepath.Join(ft.root, "scripts", "build.sh"), `cd "$(dirname "$0")/.." && find . -type f | sort`, 0o755)
	d := ft.daemon(t)
	ctx := context.Background()
	got := d.Handle(ctx, Request{Op: OpBuild}, false)
	want := "./scripts/build.sh\n./scripts/lib.sh\n./scripts/run.sh\n./scripts/test.sh\n"
	if got.Output != want {
		t.Errorf("build sees %q, want %q", got.Output, want)
	}
	got = d.Handle(ctx, Request{Op: OpGrade}, true)
	want = "./pocs/crash.txt\n" + want
	if got.Grade.Build.Output != want {
		t.Errorf("grade's build sees %q, want %q", got.Grade.Build.Output, want)
	}
}

func TestDaemonScriptTimeout(t *testing.T) {
	ft := newFakeTask(t, "good\n")
	write(t, filepath.Join(ft.root, "scripts", "build.sh"), "echo slow; exec sleep 30", 0o755)
	got := ft.daemon(t, WithScriptTimeout(200*time.Millisecond)).Handle(context.Background(), Request{Op: OpBuild}, false)
	if got.OK || got.Exit != contract.TimeoutStatus || !got.TimedOut || !strings.HasPrefix(got.Output, "slow\n") ||
		!strings.Contains(got.Output, "scripts/build.sh was killed after 200ms") {
		t.Errorf("build = %+v, want a timeout", got)
	}
}

func TestDaemonOutputLimit(t *testing.T) {
	ft := newFakeTask(t, "good\n")
	write(t, filepath.Join(ft.root, "scripts", "build.sh"), "seq 1 1000", 0o755)
	got := ft.daemon(t, WithOutputLimit(8)).Handle(context.Background(), Request{Op: OpBuild}, false)
	if want := "[ssebench: the first 3885 bytes of output were cut]\n99\n1000\n"; got.Output != want {
		t.Errorf("build output = %q, want %q", got.Output, want)
	}
}

// TestDaemonOneAtATime runs requests concurrently: their scripts must not
// overlap, because they share the runner's uid.
func TestDaemonOneAtATime(t *testing.T) {
	ft := newFakeTask(t, "good\n")
	lock := filepath.Join(ft.work, "..", "lock")
	write(t, filepath.Join(ft.root, "scripts", "build.sh"), "mkdir "+lock+" || exit 9; sleep 0.1; rmdir "+lock, 0o755)
	d := ft.daemon(t)
	var wg sync.WaitGroup
	results := make([]Response, 4)
	for i := range results {
		wg.Go(func() { results[i] = d.Handle(context.Background(), Request{Op: OpBuild}, false) })
	}
	wg.Wait()
	for i, r := range results {
		if !r.OK {
			t.Errorf("request %d = %+v: scripts overlapped", i, r)
		}
	}
}

func TestNewDaemonNeedsSource(t *testing.T) {
	if _, err := NewDaemon("/ssebench", &TaskConfig{}); err == nil || !strings.Contains(err.Error(), "no SOURCE_DIR") {
		t.Errorf("NewDaemon() = %v, want a no-SOURCE_DIR error", err)
	}
	if _, err := NewDaemon("/ssebench", &TaskConfig{}, WithSourceDir("rel")); err == nil {
		t.Error("NewDaemon(relative SOURCE_DIR) succeeded")
	}
}

// TestDaemonAsRunner runs scripts as nobody, as the daemon runs them as
// sse-runner: the agent's code in a build cannot change the scripts a
// later check of the same grade runs, nor swap their folder.
func TestDaemonAsRunner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	u, err := LookupUser(PasswdFile, "nobody")
	if err != nil {
		t.Skip(err)
	}
	requireIdle(t, u.UID)
	ft := newFakeTask(t, "bad\n")
	tamper := `id -u; id -G
here=$(dirname "$0")
echo 'exit 0' > "$here/test.sh" && echo WROTE
(cd "$here/../.." && mv sse sse.old) && echo MOVED
touch built.txt && echo BUILT
`
	write(t, filepath.Join(ft.root, "scripts", "build.sh"), tamper, 0o755)
	got := ft.daemon(t, WithRunner(&u)).Handle(context.Background(), Request{Op: OpGrade}, true)
	if got.Grade == nil {
		t.Fatalf("grade = %+v", got)
	}
	out := got.Grade.Build.Output
	ids := fmt.Sprintf("%d\n%d\n", u.UID, u.GID)
	if !strings.HasPrefix(out, ids) || strings.Contains(out, "WROTE") || strings.Contains(out, "MOVED") || !strings.Contains(out, "BUILT") {
		t.Errorf("build output = %q, want ids %q, no tampering, a build", out, ids)
	}
	if got.Grade.Test.OK {
		t.Errorf("test = %+v, want the real test script to fail", got.Grade.Test)
	}
	ft.checkClean(t)
}

// TestDaemonGradeEndsAgentSession checks that a grade stops the agent's
// running request and refuses later ones, so the agent can neither delay
// its grade nor run code during it.
func TestDaemonGradeEndsAgentSession(t *testing.T) {
	ft := newFakeTask(t, "good\n")
	started := filepath.Join(ft.work, "..", "started")
	write(t, filepath.Join(ft.root, "scripts", "test.sh"), "touch "+started+"; exec sleep 30", 0o755)
	d := ft.daemon(t)
	ctx := context.Background()
	agentDone := make(chan Response)
	go func() { agentDone <- d.Handle(ctx, Request{Op: OpTest}, false) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent's test never started")
		}
	}
	start := time.Now()
	write(t, filepath.Join(ft.root, "scripts", "test.sh"), "echo graded", 0o755)
	grade := d.Handle(ctx, Request{Op: OpGrade}, true)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the grade waited %v for the agent's request", d)
	}
	if grade.Grade == nil || !grade.Grade.Test.OK {
		t.Errorf("grade = %+v, want its test to pass", grade)
	}
	if r := <-agentDone; r.OK || r.Exit != 128+9 {
		t.Errorf("the agent's request = %+v, want it killed", r)
	}
	if r := d.Handle(ctx, Request{Op: OpBuild}, false); !strings.Contains(r.Error, "the agent phase is over") {
		t.Errorf("an agent request after the grade = %+v, want a refusal", r)
	}
	if r := d.Handle(ctx, Request{Op: OpPing}, false); !r.OK {
		t.Errorf("ping after the grade = %+v", r)
	}
	if r := d.Handle(ctx, Request{Op: OpBuild}, true); !r.OK {
		t.Errorf("an admin build after the grade = %+v, want ok", r)
	}
}
