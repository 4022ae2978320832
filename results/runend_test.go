package results

import (
	"bytes"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/gateway"
)

// TestWriteEnd: a run ends with its id, the container's status and where
// its results are, the model's use when counted, and its grade.
func TestWriteEnd(t *testing.T) {
	root := t.TempDir()
	dir := fakeRun(t, root, "r-1", "task", "loop", 1, bugged, 2)
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	r.WriteEnd(&b, &Summary{RunID: "r-1", Status: "ok", ExitCode: 0})
	if want := "\nrun r-1: container ok (exit 0); results in " + dir + "\n" + r.Grade() + "\n"; !strings.HasPrefix(b.String(), want) || strings.Contains(b.String(), "model: ") {
		t.Errorf("WriteEnd without a gateway wrote\n%q, want\n%q", b.String(), want)
	}
	writeModelLog(t, dir, rec(1, 10, 5, 0))
	if r, err = Load(dir); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	r.WriteEnd(&b, &Summary{RunID: "r-1", Status: "ok"})
	if !strings.Contains(b.String(), "\nmodel: "+r.UsageText()+"\n") {
		t.Errorf("WriteEnd of a gateway run wrote %q, want the model's use", b.String())
	}
}

// TestUpstreamError: a run whose upstream never answered is an error
// that says the grade means nothing; an answered one is none.
func TestUpstreamError(t *testing.T) {
	root := t.TempDir()
	dir := fakeRun(t, root, "down", "task", "loop", 1, bugged, 2)
	writeModelLog(t, dir, gateway.Record{Seq: 1, Status: 502, Failed: true, Error: "connection refused"})
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.UpstreamError(); err == nil || !strings.Contains(err.Error(), "answered none of the run's 1 request (first: connection refused)") {
		t.Errorf("UpstreamError() = %v", err)
	}
	writeModelLog(t, dir, rec(1, 10, 5, 0))
	if r, _ = Load(dir); r.UpstreamError() != nil {
		t.Errorf("UpstreamError() of an answered run = %v", r.UpstreamError())
	}
}

// TestCountFlagged: only runs whose audit found something count.
func TestCountFlagged(t *testing.T) {
	flagged := &Run{Result: &contract.RunResult{Audit: []contract.AuditFinding{{}}}}
	runs := []*Run{flagged, {Result: &contract.RunResult{}}, {}, flagged}
	if n := CountFlagged(runs); n != 2 {
		t.Errorf("CountFlagged = %d, want 2", n)
	}
}
