package sserun

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// describedTask is a fake task with every description field, a crash
// report and a binary proof of concept beside the text one.
func describedTask(t *testing.T) *fakeTask {
	t.Helper()
	ft := newFakeTask(t, "good bug\n")
	write(t, filepath.Join(ft.root, "reports", "crash.txt"), "panic: index out of range\n", 0o644)
	write(t, filepath.Join(ft.root, "pocs", "bin.dat"), "crash\x00\xff", 0o644)
	ft.cfg.TaskDescription.Issue = "it crashes on bad input"
	ft.cfg.TaskDescription.BugDescription = "an off-by-one in the parser"
	ft.cfg.TaskDescription.CrashReport = []string{"reports/crash.txt"}
	ft.cfg.Files.PoC = []string{"pocs/crash.txt", "pocs/bin.dat"}
	return ft
}

func TestTaskInfoLevels(t *testing.T) {
	ft := describedTask(t)
	crash := []TaskFile{{Name: "crash.txt", Content: "panic: index out of range\n", Size: 26}}
	pocs := []TaskFile{
		{Name: "PoC 1: crash.txt", Content: "crash\n", Size: 6},
		{Name: "PoC 2: bin.dat", Content: "Y3Jhc2gA/w==", Encoding: "base64", Size: 7},
	}
	all := []string{"task_info", "build", "test", "run_pocs", "status"}
	tests := []struct {
		level int
		want  TaskInfo
	}{
		{0, TaskInfo{Issue: "it crashes on bad input", BugDescription: "an off-by-one in the parser", CrashReports: crash, PoCs: pocs, PoCCount: 2, Tools: all}},
		{1, TaskInfo{Issue: "it crashes on bad input", BugDescription: "an off-by-one in the parser", CrashReports: crash, PoCCount: 2, Tools: all}},
		{2, TaskInfo{BugDescription: "an off-by-one in the parser", CrashReports: crash, PoCCount: 2, Tools: all}},
		{3, TaskInfo{BugDescription: "an off-by-one in the parser", PoCCount: 2, Tools: all}},
		{4, TaskInfo{Issue: "it crashes on bad input", Tools: []string{"task_info", "build", "test", "status"}}},
	}
	for _, tt := range tests {
		t.Run(strings.Repeat("level", 1)+string(rune('0'+tt.level)), func(t *testing.T) {
			d := ft.daemon(t, WithDifficulty(tt.level))
			got := d.Handle(context.Background(), Request{Op: OpTaskInfo}, false)
			if !got.OK || got.Info == nil {
				t.Fatalf("task_info = %+v", got)
			}
			want := tt.want
			want.TaskID, want.SourceDir, want.Difficulty = "fake-1", ft.src, tt.level
			if diff := cmp.Diff(&want, got.Info); diff != "" {
				t.Errorf("task_info at level %d (-want +got):\n%s", tt.level, diff)
			}
			if !strings.Contains(got.Output, "difficulty "+string(rune('0'+tt.level))) {
				t.Errorf("task_info text = %q", got.Output)
			}
			tools := d.Handle(context.Background(), Request{Op: OpTools}, false)
			if diff := cmp.Diff(want.Tools, tools.Tools); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTaskInfoFallback(t *testing.T) {
	tests := []struct {
		name               string
		issue, bug         string
		crash              []string
		level              int
		wantIssue, wantBug bool
		wantCrash          bool
		wantNote           string
	}{
		{"no issue at 4", "", "bug", nil, 4, false, true, false, "difficulty 4 gives the issue text, but this task has none: you get the bug description instead (the next richer field)"},
		{"only crash at 4", "", "", []string{"reports/crash.txt"}, 4, false, false, true, "you get the crash reports instead"},
		{"no bug at 3", "issue", "", []string{"reports/crash.txt"}, 3, false, false, true, "difficulty 3 gives the bug description, but this task has none: you get the crash reports instead"},
		{"only issue at 3", "issue", "", nil, 3, true, false, false, "this task has nothing difficulty 3 gives: you get the issue text instead"},
		{"no bug at 2", "issue", "", []string{"reports/crash.txt"}, 2, false, false, true, "difficulty 2 gives the bug description, but this task has none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := describedTask(t)
			td := &ft.cfg.TaskDescription
			td.Issue, td.BugDescription, td.CrashReport = tt.issue, tt.bug, tt.crash
			info, err := TaskInfoFor(ft.root, ft.cfg, ft.src, tt.level)
			if err != nil {
				t.Fatal(err)
			}
			if (info.Issue != "") != tt.wantIssue || (info.BugDescription != "") != tt.wantBug || (len(info.CrashReports) > 0) != tt.wantCrash {
				t.Errorf("TaskInfoFor() = %+v, want issue %t, bug %t, crash %t", info, tt.wantIssue, tt.wantBug, tt.wantCrash)
			}
			if len(info.PoCs) > 0 {
				t.Errorf("TaskInfoFor() gave PoC contents at level %d", tt.level)
			}
			if !strings.Contains(strings.Join(info.Notes, "\n"), tt.wantNote) {
				t.Errorf("notes = %q, want %q", info.Notes, tt.wantNote)
			}
			if !strings.Contains(info.Text(), "Note: ") {
				t.Errorf("Text() does not show the notes:\n%s", info.Text())
			}
		})
	}
}

func TestDaemonPoCLevels(t *testing.T) {
	ft := newFakeTask(t, "good bug\n")
	ctx := context.Background()

	full := ft.daemon(t, WithDifficulty(2)).Handle(ctx, Request{Op: OpPoC}, false)
	if full.OK || full.Exit != 86 || !strings.Contains(full.Output, "CRASH") || len(full.PoCs) != 1 || full.PoCs[0].Name != "pocs/crash.txt" {
		t.Errorf("poc at level 2 = %+v, want the full output", full)
	}

	d3 := ft.daemon(t, WithDifficulty(3))
	r := d3.Handle(ctx, Request{Op: OpPoC}, false)
	want := Response{Result: Result{OK: false, Exit: 1, Output: "PoC 1: fail\n", DurationMS: r.DurationMS}, PoCs: []PoCResult{{Name: "PoC 1", OK: false}}}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("poc at level 3 (-want +got):\n%s", diff)
	}
	// The grade sees everything whatever the level.
	if g := d3.Handle(ctx, Request{Op: OpPoC}, true); !strings.Contains(g.Output, "CRASH") {
		t.Errorf("admin poc at level 3 = %+v, want the full output", g)
	}

	d4 := ft.daemon(t, WithDifficulty(4))
	if r := d4.Handle(ctx, Request{Op: OpPoC}, false); r.OK || r.Error != "run_pocs is not available at difficulty 4" {
		t.Errorf("poc at level 4 = %+v, want a refusal", r)
	}
	if g := d4.Handle(ctx, Request{Op: OpGrade}, true); g.Grade == nil || g.Grade.PoC == nil || g.Grade.PoC.Exit != 86 {
		t.Errorf("grade at level 4 = %+v, want the PoC run", g)
	}
	ft.checkClean(t)
}

func TestDaemonToolLog(t *testing.T) {
	ft := newFakeTask(t, "good\n")
	var log bytes.Buffer
	d := ft.daemon(t, WithToolLog(&log))
	ctx := context.Background()
	if r := d.Handle(ctx, Request{Op: OpAgentStart, TimeoutMS: 60_000}, true); !r.OK {
		t.Fatalf("agent_start = %+v", r)
	}
	d.Handle(ctx, Request{Op: OpBuild, Client: "mcp"}, false)
	d.Handle(ctx, Request{Op: OpPoC, Client: "cli"}, false)
	d.Handle(ctx, Request{Op: OpPing}, false) // not a tool
	d.Handle(ctx, Request{Op: OpBuild}, true) // the grader's, not the agent's
	st := d.Handle(ctx, Request{Op: OpStatus}, false).Status
	if st == nil || st.Phase != "agent" || st.Calls != 2 || st.CallsByTool["build"] != 1 || st.CallsByTool["run_pocs"] != 1 {
		t.Fatalf("status = %+v, want 2 calls in the agent phase", st)
	}
	if st.TimeLeftMS == nil || *st.TimeLeftMS <= 0 || *st.TimeLeftMS > 60_000 {
		t.Errorf("status time left = %v, want under a minute", st.TimeLeftMS)
	}
	end := d.Handle(ctx, Request{Op: OpAgentEnd}, true)
	if !end.OK || end.Status == nil || end.Status.Phase != "over" || end.Status.Calls != 3 {
		t.Errorf("agent_end = %+v, want the phase over after 3 calls", end)
	}
	if r := d.Handle(ctx, Request{Op: OpTest, Client: "mcp"}, false); r.OK || !strings.Contains(r.Error, "agent phase is over") {
		t.Errorf("test after the phase = %+v, want a refusal", r)
	}
	var got []ToolCall
	for line := range strings.Lines(log.String()) {
		var c ToolCall
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("tool log line %q: %v", line, err)
		}
		if c.Time.IsZero() {
			t.Errorf("tool log line %q has no time", line)
		}
		c.Time, c.DurationMS = time.Time{}, 0
		got = append(got, c)
	}
	want := []ToolCall{
		{Tool: "build", Client: "mcp", OK: true},
		{Tool: "run_pocs", Client: "cli", OK: true},
		{Tool: "status", OK: true},
		{Tool: "test", Client: "mcp", Exit: -1, Error: errPhaseOver},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool log (-want +got):\n%s", diff)
	}
}

// TestDaemonAgentEnd checks that agent_end cancels the agent's request in
// progress and answers only once it has stopped.
func TestDaemonAgentEnd(t *testing.T) {
	ft := newFakeTask(t, "good\n")
	started := filepath.Join(ft.work, "..", "started")
	write(t, filepath.Join(ft.root, "scripts", "test.sh"), "touch "+started+"; exec sleep 30", 0o755)
	d := ft.daemon(t)
	ctx := context.Background()
	agentDone := make(chan Response, 1)
	go func() { agentDone <- d.Handle(ctx, Request{Op: OpTest}, false) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent's test never started")
		}
	}
	if r := d.Handle(ctx, Request{Op: OpAgentEnd}, false); r.OK {
		t.Errorf("agent_end on the agent socket = %+v, want a refusal", r)
	}
	end := d.Handle(ctx, Request{Op: OpAgentEnd}, true)
	if !end.OK {
		t.Errorf("agent_end = %+v", end)
	}
	select {
	case r := <-agentDone:
		if r.OK || r.Exit != 128+9 {
			t.Errorf("the agent's request = %+v, want it killed", r)
		}
	case <-time.After(2 * time.Second):
		// The request's answer follows its script's end at once.
		t.Error("agent_end answered before the agent's request stopped")
	}
	for _, op := range []string{OpBuild, OpTaskInfo, OpStatus, OpTools} {
		if r := d.Handle(ctx, Request{Op: op}, false); r.OK || r.Error != errPhaseOver {
			t.Errorf("%s after the phase = %+v, want a refusal", op, r)
		}
	}
	ft.checkClean(t)
}

// TestKillAllForkLoop runs, as nobody, a fork loop whose children leave
// the process group, and a plain leftover; KillAll leaves none of them,
// and no process of another user is touched.
func TestKillAllForkLoop(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	u, err := LookupUser(PasswdFile, "nobody")
	if err != nil {
		t.Skip(err)
	}
	requireIdle(t, u.UID)
	mine := exec.Command("sleep", "60")
	if err := mine.Start(); err != nil {
		t.Fatal(err)
	}
	defer mine.Process.Kill()
	loop := exec.Command(Shell, "-c", "setsid sleep 300 & while :; do (setsid sh -c 'sleep 300 & sleep 300') & done")
	loop.Dir = "/"
	loop.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: []uint32{}}}
	if err := loop.Start(); err != nil {
		t.Fatal(err)
	}
	go loop.Wait()
	time.Sleep(300 * time.Millisecond)
	n, err := KillAll(u.UID)
	if err != nil {
		t.Fatalf("KillAll() = %d, %v", n, err)
	}
	if n < 3 {
		t.Errorf("KillAll() = %d, want the loop and its children", n)
	}
	if pids, _ := processesOf(u.UID, hostPidNS()); len(pids) > 0 {
		t.Errorf("processes of %s left: %v", u.Name, pids)
	}
	if !alive(mine.Process.Pid) {
		t.Error("KillAll killed a process of root")
	}
	t.Logf("KillAll killed %d processes of a fork loop", n)
}

// TestKillAllOtherContainers: on a host, KillAll leaves uid's processes in
// other pid namespaces alone (other containers' agents, while tests run
// side by side) and kills those of its own.
func TestKillAllOtherContainers(t *testing.T) {
	if os.Geteuid() != 0 || hostPidNS() == "" {
		t.Skip("needs root on the host's pid namespace")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare")
	}
	u, err := LookupUser(PasswdFile, "nobody")
	if err != nil {
		t.Skip(err)
	}
	requireIdle(t, u.UID)
	id := strconv.Itoa(u.UID)
	other := exec.Command("unshare", "--pid", "--fork", "--kill-child", "setpriv", "--reuid="+id, "--regid="+id, "--clear-groups", "sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer other.Process.Kill()
	here := exec.Command("setpriv", "--reuid="+id, "--regid="+id, "--clear-groups", "sleep", "60")
	if err := here.Start(); err != nil {
		t.Fatal(err)
	}
	defer here.Process.Kill()
	time.Sleep(300 * time.Millisecond) // setpriv has become sleep
	if _, err := KillAll(u.UID); err != nil {
		t.Fatal(err)
	}
	if err := here.Wait(); err == nil {
		t.Error("the process of this namespace survived KillAll")
	}
	exited := make(chan error, 1)
	go func() { exited <- other.Wait() }()
	select {
	case err := <-exited:
		t.Errorf("KillAll killed a process of uid %d in another pid namespace: %v", u.UID, err)
	case <-time.After(time.Second):
	}
}
