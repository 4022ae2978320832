package release_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/release"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// TestReportText: a verification's table lists every check, and its end
// names every check that failed, or how many tasks verified, after where
// its runs are.
func TestReportText(t *testing.T) {
	rep := &release.Report{Dir: "runs/verify-x", Findings: []release.Finding{
		{Task: "a-1", Agent: "reference", Check: "build", OK: true},
		{Task: "a-1", Agent: "dummy", Check: "poc", Why: "poc passed"},
	}, Verified: map[string]release.VerifiedTask{}}
	var table, end bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	want := "TASK  AGENT      CHECK  RESULT  WHY\n" +
		"a-1   reference  build  ok      \n" +
		"a-1   dummy      poc    FAILED  poc passed\n"
	if table.String() != want {
		t.Errorf("WriteTable wrote\n%s\nwant\n%s", table.String(), want)
	}
	err := rep.WriteEnd(&end)
	if err == nil || err.Error() != "1 check failed: a-1 dummy poc (poc passed)" || end.String() != "runs in runs/verify-x\n" {
		t.Errorf("WriteEnd = %v, wrote %q", err, end.String())
	}
	rep.Findings = rep.Findings[:1]
	rep.Verified["a-1"] = release.VerifiedTask{}
	end.Reset()
	if err := rep.WriteEnd(&end); err != nil || end.String() != "runs in runs/verify-x\n1 task verified\n" {
		t.Errorf("WriteEnd of a verified task = %v, wrote %q", err, end.String())
	}
}

// TestContainerdBackend: every run of a verification reads the dataset
// folder, absolute, on the restricted network, labelled with the plan.
func TestContainerdBackend(t *testing.T) {
	t.Chdir(t.TempDir())
	e := &pipeline.Env{}
	backend, err := release.ContainerdBackend(e, "ds", pipeline.RunRequest{Timeout: 60})
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	c, ok := backend("plan-1").(*evaluate.Containerd)
	if !ok || c.Env != e || c.EvalID != "plan-1" || c.Request.Dataset != filepath.Join(wd, "ds") ||
		c.Request.Network != runner.NetworkRestricted || c.Request.Timeout != 60 || c.Request.Output == nil {
		t.Errorf("backend = %#v", backend("plan-1"))
	}
}

// TestNewProgress: a verification's dummy run that fails is as it
// should be.
func TestNewProgress(t *testing.T) {
	run := runDir(t, release.DummyAgent, &contract.RunResult{TaskID: id, Build: ok(), Test: ok(), PoC: bad()}, nil)
	var b bytes.Buffer
	p := release.NewProgress(&b)
	p.Begin(1, 0, 1)
	p.Finish(evaluate.Job{Task: id, Agent: release.DummyAgent, Attempt: 1}, run)
	if got := b.String(); !strings.Contains(got, "dummy failed, as it should") {
		t.Errorf("progress line = %q, want the dummy's failure expected", got)
	}
}

// TestWriteFigures: dataset tools ends with the images rebuilt and the
// bytes moved, or those assembled when nothing was pushed, and the time.
func TestWriteFigures(t *testing.T) {
	r := &release.ToolsReport{Images: make([]release.ToolImage, 3), Rebuilt: 1, Unchanged: 2, Push: &remote.PushReport{Uploaded: 2048, Mounted: 1 << 20}}
	var b bytes.Buffer
	r.WriteFigures(&b, true, 1234*time.Millisecond)
	if want := "tool images: 1 rebuilt and pushed, 2 unchanged\nbytes: 2.0 KiB uploaded, 1.0 MiB mounted, 0 B skipped (already there)\ntook 1.2s\n"; b.String() != want {
		t.Errorf("pushed: wrote\n%q, want\n%q", b.String(), want)
	}
	b.Reset()
	r.WriteFigures(&b, false, time.Second)
	if want := "tool images: 3 assembled (not pushed: add --push)\ntook 1s\n"; b.String() != want {
		t.Errorf("not pushed: wrote %q, want %q", b.String(), want)
	}
}
