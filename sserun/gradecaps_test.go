package sserun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/testing/hostile"
)

// TestDaemonGradeTimeout: the agent's code in a check (a test that
// sleeps, each one just under the script timeout) cannot hold the grade
// past its own time limit, after which a run on Kubernetes would be
// killed with no grade at all: the check still running is killed and
// fails as timed out, the checks after it are skipped, and the grade
// answers, a FAILED run.
func TestDaemonGradeTimeout(t *testing.T) {
	hostile.Attack(t, "stall the grade", "the grade's own time limit")
	ft := newFakeTask(t, "good\n")
	write(t, filepath.Join(ft.root, "scripts", "test.sh"), "echo slow; exec sleep 30", 0o755)
	d := ft.daemon(t, WithGradeTimeout(time.Second))
	start := time.Now()
	got := d.Handle(context.Background(), Request{Op: OpGrade}, true)
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("grade took %s, want about its time limit of 1s", took)
	}
	if got.Error != "" || got.Grade == nil || got.OK {
		t.Fatalf("grade = %+v, want a failed grade, no error", got)
	}
	if b := got.Grade.Build; b == nil || !b.OK {
		t.Errorf("build = %+v, want it passed within the time limit", b)
	}
	if c := got.Grade.Test; c == nil || c.OK || !c.TimedOut || !strings.Contains(c.Output, "grade's time limit of 1s") {
		t.Errorf("test = %+v, want it killed at the grade's time limit", c)
	}
	if c := got.Grade.PoC; c == nil || !strings.Contains(c.Skipped, "time limit") {
		t.Errorf("poc = %+v, want it skipped", c)
	}
	ft.checkClean(t)
}

// TestDaemonNoSandboxRefused: where the machine refuses the scripts'
// sandbox, a grade is not run without it (silently, counted as ever)
// unless the user allows it: the grade ends with an error naming
// --allow-no-sandbox, and no script ran.
func TestDaemonNoSandboxRefused(t *testing.T) {
	hostile.Case(t, "no sandbox is a silent downgrade")
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	u, err := LookupUser(PasswdFile, "nobody")
	if err != nil {
		t.Skip(err)
	}
	requireIdle(t, u.UID)
	ft := newFakeTask(t, "good\n")
	marker := filepath.Join(ft.work, "..", "ran")
	write(t, filepath.Join(ft.root, "scripts", "build.sh"), "touch "+marker+" 2>/dev/null; cp main.txt built.txt", 0o755)
	refused := withExtraKeep("/tmp/ssebench-no-such-dir/x")

	got := ft.daemon(t, WithRunner(&u), refused).Handle(context.Background(), Request{Op: OpGrade}, true)
	if got.Grade != nil || !strings.Contains(got.Error, "--allow-no-sandbox") || !strings.HasPrefix(got.Sandbox, SandboxNone) {
		t.Errorf("grade = %+v, want an error naming --allow-no-sandbox", got)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("a script ran without its sandbox")
	}

	got = ft.daemon(t, WithRunner(&u), refused, WithAllowNoSandbox(true)).Handle(context.Background(), Request{Op: OpGrade}, true)
	if got.Error != "" || got.Grade == nil || !strings.HasPrefix(got.Grade.Sandbox(), SandboxNone) {
		t.Errorf("grade with --allow-no-sandbox = %+v, want a grade that says sandbox none", got)
	}
	if b := got.Grade.Check(contract.CheckBuild); b == nil || !b.OK {
		t.Errorf("build = %+v, want it run without the sandbox", b)
	}
	ft.checkClean(t)
}

// TestDaemonScriptsDieFirst: the agent's code in a check that eats the
// container's memory is what the kernel kills, not the daemon, whose
// death would end the run with no grade.
func TestDaemonScriptsDieFirst(t *testing.T) {
	hostile.Attack(t, "end the run ungraded", "the scripts' oom_score_adj")
	ft := newFakeTask(t, "good\n")
	write(t, filepath.Join(ft.root, "scripts", "build.sh"), "cat /proc/self/oom_score_adj", 0o755)
	opts := map[string][]DaemonOption{"as the caller": nil}
	if u, err := LookupUser(PasswdFile, "nobody"); err == nil && os.Geteuid() == 0 {
		requireIdle(t, u.UID)
		opts["as the runner, in the sandbox"] = []DaemonOption{WithRunner(&u)}
	}
	for name, o := range opts {
		got := ft.daemon(t, o...).Handle(context.Background(), Request{Op: OpBuild}, false)
		if strings.TrimSpace(got.Output) != "1000" {
			t.Errorf("%s: the build's oom_score_adj = %q, want 1000", name, got.Output)
		}
	}
}
