package results

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// fakeRun writes a run folder: checks maps build/test/poc/intent_test to
// pass (true) or fail (false); nil checks means no result.json.
func fakeRun(t *testing.T, root, id, task, agent string, attempt int, checks map[string]bool, secs float64) string {
	t.Helper()
	dir := filepath.Join(root, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 12, 1, 12, 0, attempt, 0, time.UTC)
	s := Summary{RunID: id, Task: task, Agent: agent, Status: "ok", Started: start, Finished: start.Add(time.Duration(secs * float64(time.Second))),
		Timings: map[string]float64{"total": secs, "run": secs - 1, "startup": 0.5}, Attempt: attempt}
	s.Config.Model = "none"
	b, _ := json.Marshal(s)
	if err := os.WriteFile(filepath.Join(dir, SummaryFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if checks == nil {
		return dir
	}
	r := &contract.RunResult{TaskID: task, Passed: true}
	for _, n := range contract.Checks {
		ok, has := checks[n]
		if !has {
			continue
		}
		c := &contract.Check{OK: ok, Log: contract.CheckLog(n)}
		if !ok {
			c.Exit = 1
			r.Passed = false
		}
		os.WriteFile(filepath.Join(dir, c.Log), []byte(strings.Repeat("noise\n", 50)+n+" said why\n"), 0o644)
		r.SetCheck(n, c)
	}
	if err := contract.WriteRunResult(dir, r); err != nil {
		t.Fatal(err)
	}
	return dir
}

var (
	allOK  = map[string]bool{"build": true, "test": true, "poc": true, "intent_test": true}
	bugged = map[string]bool{"build": true, "test": true, "poc": false, "intent_test": false}
)

func TestGrade(t *testing.T) {
	root := t.TempDir()
	for _, tc := range []struct {
		name   string
		checks map[string]bool
		want   string
	}{
		{"passed", allOK, "PASSED"},
		{"failed", bugged, "FAILED: poc, intent_test (build ✓ test ✓)"},
		{"nobuild", map[string]bool{"build": false, "test": false, "poc": false}, "FAILED: build, test, poc"},
		{"nograde", nil, "NOT GRADED: the container wrote no result.json (status ok, exit 0)"},
		// Ctrl-C: the entrypoint wrote result.json without a check.
		{"stopped", map[string]bool{}, "NOT GRADED: stopped before its grade"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fakeRun(t, root, tc.name, "task", "agent", 0, tc.checks, 2)
			if tc.name == "stopped" {
				s := readSummary(t, dir)
				s.Status = "stopped"
				writeSummary(t, dir, s)
			}
			r, err := Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Grade(); got != tc.want {
				t.Errorf("Grade() = %q, want %q", got, tc.want)
			}
			if tc.name == "stopped" {
				rep := NewReport("x", []*Run{r})
				if a := rep.Agents[0]; a.Attempts != 0 || a.NotGraded != 1 || a.Passed != 0 {
					t.Errorf("a stopped run in the report: %+v, want no attempt, 1 not graded", a)
				}
			}
		})
	}
}

func TestWilson(t *testing.T) {
	for _, tc := range []struct {
		k, n      int
		low, high float64
	}{
		{0, 0, 0, 0},
		{0, 6, 0, 0.3903},
		{6, 6, 0.6097, 1},
		{3, 6, 0.1876, 0.8124},
		{81, 263, 0.2553, 0.3662},
	} {
		lo, hi := Wilson(tc.k, tc.n, z95)
		if round(lo, 4) != tc.low || round(hi, 4) != tc.high {
			t.Errorf("Wilson(%d, %d) = %.4f, %.4f, want %.4f, %.4f", tc.k, tc.n, lo, hi, tc.low, tc.high)
		}
	}
}

// evalFolder makes the runs of two agents on two tasks, two attempts each,
// inside an evaluation folder: patcher passes task-a only, dummy nothing,
// and one dummy run was never graded.
func evalFolder(t *testing.T) string {
	root := t.TempDir()
	runs := filepath.Join(root, "eval-x", "runs")
	for a := 1; a <= 2; a++ {
		fakeRun(t, runs, "p-a-"+string(rune('0'+a)), "task-a", "patcher", a, allOK, 10)
		fakeRun(t, runs, "p-b-"+string(rune('0'+a)), "task-b", "patcher", a, bugged, 20)
		fakeRun(t, runs, "d-a-"+string(rune('0'+a)), "task-a", "dummy", a, bugged, 4)
	}
	fakeRun(t, runs, "d-b-1", "task-b", "dummy", 1, bugged, 4)
	fakeRun(t, runs, "d-b-2", "task-b", "dummy", 2, nil, 4)
	// Not runs: skipped.
	os.MkdirAll(filepath.Join(root, "eval-x", ".partial", "half"), 0o755)
	os.MkdirAll(filepath.Join(root, "other"), 0o755)
	return root
}

func TestReport(t *testing.T) {
	root := evalFolder(t)
	runs, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 8 {
		t.Fatalf("List() found %d runs, want 8", len(runs))
	}
	rep := NewReport("eval-x", runs)
	if len(rep.Agents) != 2 || rep.Agents[0].Agent != "dummy" || rep.Agents[1].Agent != "patcher" {
		t.Fatalf("agents = %+v", rep.Agents)
	}
	d, p := rep.Agents[0], rep.Agents[1]
	if d.Passed != 0 || d.Attempts != 4 || d.NotGraded != 1 || p.Passed != 2 || p.Attempts != 4 || p.Rate != 0.5 {
		t.Errorf("dummy %+v, patcher %+v", d, p)
	}
	if p.Low != 0.15 || p.High != 0.85 {
		t.Errorf("patcher's interval = %v–%v, want Wilson's 0.15–0.85", p.Low, p.High)
	}
	if got := p.Checks[2]; got.Name != "poc" || got.Passed != 2 || got.Of != 4 {
		t.Errorf("patcher's poc = %+v, want 2/4", got)
	}
	want := []TaskRow{
		{Task: "task-a", Cells: []Cell{{Task: "task-a", Agent: "dummy", Model: "none", Passed: 0, Attempts: 2}, {Task: "task-a", Agent: "patcher", Model: "none", Passed: 2, Attempts: 2}}},
		{Task: "task-b", Cells: []Cell{{Task: "task-b", Agent: "dummy", Model: "none", Passed: 0, Attempts: 2}, {Task: "task-b", Agent: "patcher", Model: "none", Passed: 0, Attempts: 2}}},
	}
	got, _ := json.Marshal(rep.Matrix)
	w, _ := json.Marshal(want)
	if string(got) != string(w) {
		t.Errorf("matrix = %s, want %s", got, w)
	}
	if p.Seconds != 60 || p.MeanSeconds != 15 {
		t.Errorf("patcher's time = %v s (mean %v), want 60 (15)", p.Seconds, p.MeanSeconds)
	}

	var md bytes.Buffer
	if err := Write(&md, rep, "md"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"| patcher | none | 2 | 4 | 50% | 15%–85% |", "| task-a | 0/2 | 2/2 |", "| dummy | none | 3/3 | 3/3 | 0/3 | 0/3 |"} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("markdown report lacks %q:\n%s", s, md.String())
		}
	}
}

// TestJUnit checks the JUnit report against the schema CI systems import
// (testdata/junit.xsd) with xmllint, and what its test cases say.
func TestJUnit(t *testing.T) {
	rep := NewReport("eval-x", mustList(t, evalFolder(t)))
	var buf bytes.Buffer
	if err := Write(&buf, rep, "junit"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.xml")
	os.WriteFile(path, buf.Bytes(), 0o644)
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("xmllint is missing (Debian libxml2-utils; scripts/install-deps.sh installs it)")
		}
		t.Skip("xmllint is missing: install libxml2-utils")
	}
	if out, err := exec.Command(xmllint, "--noout", "--schema", "testdata/junit.xsd", path).CombinedOutput(); err != nil {
		t.Fatalf("the JUnit report does not validate: %v\n%s\n%s", err, out, buf.String())
	}
	var doc struct {
		Suites []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Errors   int    `xml:"errors,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 2 {
		t.Fatalf("%d suites, want one per agent", len(doc.Suites))
	}
	d, p := doc.Suites[0], doc.Suites[1]
	if d.Tests != 4 || d.Failures != 3 || d.Errors != 1 || p.Tests != 4 || p.Failures != 2 || p.Errors != 0 {
		t.Errorf("suites = %+v", doc.Suites)
	}
	var f *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	}
	for _, c := range p.Cases {
		if c.Failure != nil {
			f = c.Failure
		}
	}
	if f == nil || f.Message != "FAILED: poc, intent_test (build ✓ test ✓)" || !strings.Contains(f.Text, "poc said why") || strings.Count(f.Text, "noise") > 2*logTailLines {
		t.Errorf("failure = %+v, want the failed checks and their logs' tails", f)
	}
}

func mustList(t *testing.T, root string) []*Run {
	t.Helper()
	runs, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}
