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

// verdictRun writes a run folder whose result.json is res (task, agent
// and id from the arguments) and loads it.
func verdictRun(t *testing.T, root, id, task, agent string, res *contract.RunResult) *Run {
	t.Helper()
	dir := filepath.Join(root, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 12, 7, 12, 0, len(id), 0, time.UTC)
	s := Summary{RunID: id, Task: task, Agent: agent, Status: "ok", Started: start, Finished: start.Add(5 * time.Second),
		Timings: map[string]float64{"total": 5}}
	s.Config.Model = "none"
	b, _ := json.Marshal(s)
	if err := os.WriteFile(filepath.Join(dir, SummaryFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if res != nil {
		res.TaskID = task
		if err := contract.WriteRunResult(dir, res); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ok() *contract.Check     { return &contract.Check{OK: true} }
func failed() *contract.Check { return &contract.Check{Exit: 1} }

var findings = []contract.AuditFinding{
	{Path: "x_test.go", Rule: "protected path changed"},
	{Path: "x.go", Line: 3, Rule: "init added"},
}

// The results of a run for each verdict.
func forgedResult() *contract.RunResult {
	return &contract.RunResult{Build: ok(), Test: failed(), Judged: contract.JudgedByName, Integrity: contract.IntegrityReportForged,
		Audit: findings, DroppedPaths: []string{"x_test.go"}}
}

func flaggedResult() *contract.RunResult {
	return &contract.RunResult{Build: ok(), Test: ok(), Passed: true, Judged: contract.JudgedByName, Audit: findings}
}

func exitStatusResult() *contract.RunResult {
	return &contract.RunResult{Build: ok(), Test: ok(), Passed: true, Judged: contract.JudgedExitStatus}
}

func TestVerdicts(t *testing.T) {
	root := t.TempDir()
	tests := []struct {
		name        string
		res         *contract.RunResult
		failOnAudit bool
		grade       string
		verdict     string
		passed      bool
	}{
		{"passed", &contract.RunResult{Build: ok(), Test: ok(), Passed: true}, false, "PASSED", VerdictPassed, true},
		{"failed", &contract.RunResult{Build: ok(), Test: failed()}, false, "FAILED: test (build ✓)", VerdictFailed, false},
		{"forged", forgedResult(), false, "FORGED: report forged", VerdictForged, false},
		// An older or broken result.json that says passed beside an
		// integrity verdict is not a pass.
		{"forged, yet passed", &contract.RunResult{Build: ok(), Test: ok(), Passed: true, Integrity: contract.IntegrityReportForged}, false, "FORGED: report forged", VerdictForged, false},
		{"forged, the grade unfinished", &contract.RunResult{Integrity: contract.IntegrityReportForged, GradeError: "the test check did not end"}, false, "FORGED: report forged", VerdictForged, false},
		{"flagged", flaggedResult(), false, "PASSED", VerdictPassed, true},
		{"flagged, fail on audit", flaggedResult(), true, "FAILED: audit (build ✓ test ✓)", VerdictFailed, false},
		{"failed and flagged, fail on audit", &contract.RunResult{Build: ok(), Test: failed(), Audit: findings}, true, "FAILED: test (build ✓)", VerdictFailed, false},
		{"not flagged, fail on audit", exitStatusResult(), true, "PASSED", VerdictPassed, true},
		{"not graded", &contract.RunResult{GradeError: "no daemon"}, false, "NOT GRADED: no daemon", VerdictNotGraded, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := verdictRun(t, root, string(rune('a'+i)), "task", "agent", tt.res)
			if tt.failOnAudit {
				FailOnAudit([]*Run{r})
			}
			if got := r.Grade(); got != tt.grade {
				t.Errorf("Grade() = %q, want %q", got, tt.grade)
			}
			if got := r.Verdict(); got != tt.verdict {
				t.Errorf("Verdict() = %q, want %q", got, tt.verdict)
			}
			if got := r.Passed(); got != tt.passed {
				t.Errorf("Passed() = %v, want %v", got, tt.passed)
			}
			if e := r.Entry(); e.Passed != tt.passed || e.Grade != tt.grade {
				t.Errorf("Entry() passed %v grade %q, want %v %q", e.Passed, e.Grade, tt.passed, tt.grade)
			}
		})
	}
}

// verdictFolder is one agent's runs on three tasks: a-forged (forged and
// flagged, a protected path dropped), b-flagged (passed, flagged),
// c-exit (passed, judged by exit status), d-plain (passed).
func verdictFolder(t *testing.T) []*Run {
	root := t.TempDir()
	return []*Run{
		verdictRun(t, root, "a-forged", "task-a", "sly", forgedResult()),
		verdictRun(t, root, "b-flagged", "task-b", "sly", flaggedResult()),
		verdictRun(t, root, "c-exit", "task-c", "sly", exitStatusResult()),
		verdictRun(t, root, "d-plain", "task-c", "sly", &contract.RunResult{Build: ok(), Test: ok(), Passed: true, Judged: contract.JudgedByName}),
	}
}

func TestReportVerdicts(t *testing.T) {
	for _, failOnAudit := range []bool{false, true} {
		runs := verdictFolder(t)
		if failOnAudit {
			FailOnAudit(runs)
		}
		rep := NewReport("eval-v", runs)
		a := rep.Agents[0]
		wantPassed := 3
		if failOnAudit {
			wantPassed = 2
		}
		if a.Attempts != 4 || a.Passed != wantPassed || a.Forged != 1 || a.Flagged != 2 || a.NotGraded != 0 || rep.FailOnAudit != failOnAudit {
			t.Errorf("fail on audit %v: agent %+v, report's FailOnAudit %v; want 4 attempts, %d passed, 1 forged, 2 flagged, none not graded",
				failOnAudit, a, rep.FailOnAudit, wantPassed)
		}
		if c := rep.Matrix[0].Cells[0]; c.Task != "task-a" || c.Forged != 1 || c.Passed != 0 {
			t.Errorf("task-a's cell = %+v, want 1 forged", c)
		}
		if got := len(rep.ToRead()); got != 3 {
			t.Errorf("ToRead() has %d runs, want 3 (forged, flagged, judged by exit status)", got)
		}
	}
}

func TestMarkdownVerdicts(t *testing.T) {
	runs := verdictFolder(t)
	FailOnAudit(runs)
	var b bytes.Buffer
	if err := Write(&b, NewReport("eval-v", runs), "md"); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"**1 run forged (an integrity verdict, counted apart from the failed runs); 2 runs flagged by the audit (counted as failed: --fail-on-audit); 1 run judged by exit status**",
		"| not graded | forged | flagged |",
		"| sly | none | 2 | 4 | 50% | 15%–85% | 0 | 1 | 2 |",
		"## Runs to read",
		"- **a-forged** task-a, sly: FORGED: report forged; flagged by the audit (2 findings); 1 protected path dropped",
		"  - dropped: `x_test.go`",
		"  - `x.go:3  init added`",
		"- **b-flagged** task-b, sly: FAILED: audit (build ✓ test ✓); flagged by the audit (2 findings)",
		"- **c-exit** task-c, sly: PASSED; judged by exit status",
		"| task-a | 0/1 (1 forged) |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "d-plain") {
		t.Errorf("markdown report lists d-plain, which has nothing to read:\n%s", md)
	}
}

func TestJSONVerdicts(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, NewReport("eval-v", verdictFolder(t)), "json"); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Agents []struct {
			Forged  int `json:"forged"`
			Flagged int `json:"flagged"`
		} `json:"agents"`
		Runs []struct {
			ID           string                  `json:"id"`
			Grade        string                  `json:"grade"`
			Judged       string                  `json:"judged"`
			Integrity    string                  `json:"integrity"`
			DroppedPaths []string                `json:"dropped_paths"`
			Audit        []contract.AuditFinding `json:"audit"`
			Flagged      bool                    `json:"flagged"`
		} `json:"runs_list"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Agents) != 1 || got.Agents[0].Forged != 1 || got.Agents[0].Flagged != 2 {
		t.Errorf("agents = %+v, want 1 forged, 2 flagged", got.Agents)
	}
	f := got.Runs[0]
	if f.ID != "a-forged" || f.Grade != "FORGED: report forged" || f.Integrity != contract.IntegrityReportForged || f.Judged != contract.JudgedByName ||
		len(f.DroppedPaths) != 1 || len(f.Audit) != 2 || f.Audit[1] != findings[1] || !f.Flagged {
		t.Errorf("the forged run in JSON = %+v", f)
	}
	if c := got.Runs[2]; c.Judged != contract.JudgedExitStatus || c.Flagged {
		t.Errorf("the run judged by exit status in JSON = %+v", c)
	}
}

func TestHTMLVerdicts(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, NewReport("eval-v", verdictFolder(t)), "html"); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`<p id="verdicts"><strong>1 run forged`,
		`<th>forged</th><th>flagged</th>`,
		`<td class="forged-count">1</td><td class="flagged-count">2</td>`,
		`<section id="to-read">`,
		`<li><code>x.go:3  init added</code></li>`,
		`<li>dropped: <code>x_test.go</code></li>`,
		`<td class="forged">FORGED: report forged</td><td class="flags">flagged by the audit (2 findings); 1 protected path dropped</td>`,
		`<td class="flags">judged by exit status</td>`,
		`<td class="forged" title="-">0/1 (1 forged)</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		return
	}
	CheckHTMLReport(t, path, []string{"sly"}, 4, "results-report-verdicts.png")
}

func TestJUnitVerdicts(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, NewReport("eval-v", verdictFolder(t)), "junit"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Failures  int    `xml:"failures,attr"`
			Errors    int    `xml:"errors,attr"`
			SystemOut string `xml:"system-out"`
			Cases     []struct {
				Name  string `xml:"name,attr"`
				Error *struct {
					Message string `xml:"message,attr"`
					Type    string `xml:"type,attr"`
					Text    string `xml:",chardata"`
				} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Suites[0]
	if s.Failures != 0 || s.Errors != 1 {
		t.Errorf("suite: %d failures, %d errors; want the forged run as an error, apart from failures", s.Failures, s.Errors)
	}
	if e := s.Cases[0].Error; e == nil || e.Type != "integrity" || e.Message != "FORGED: report forged" || !strings.Contains(e.Text, "audit: x.go:3  init added") {
		t.Errorf("the forged run's case = %+v", s.Cases[0])
	}
	for _, want := range []string{"run b-flagged (task-b)", "judged by exit status", "dropped: x_test.go"} {
		if !strings.Contains(s.SystemOut, want) {
			t.Errorf("system-out lacks %q:\n%s", want, s.SystemOut)
		}
	}
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("xmllint is missing (Debian libxml2-utils; scripts/install-deps.sh installs it)")
		}
		t.Skip("xmllint is missing: install libxml2-utils")
	}
	path := filepath.Join(t.TempDir(), "report.xml")
	os.WriteFile(path, buf.Bytes(), 0o644)
	if out, err := exec.Command(xmllint, "--noout", "--schema", "testdata/junit.xsd", path).CombinedOutput(); err != nil {
		t.Fatalf("the JUnit report does not validate: %v\n%s", err, out)
	}
}

func TestFindingText(t *testing.T) {
	tests := []struct {
		f    contract.AuditFinding
		want string
	}{
		{contract.AuditFinding{Path: "a/x.go", Line: 7, Rule: "init added"}, "a/x.go:7  init added"},
		{contract.AuditFinding{Path: "x_test.go", Rule: "protected path changed"}, "x_test.go  protected path changed"},
		{contract.AuditFinding{Rule: "3 more findings not listed"}, "3 more findings not listed"},
		// The agent names its files: a newline would forge a line, an
		// override reverse what follows.
		{contract.AuditFinding{Path: "x.go\n+ all fine", Line: 1, Rule: "init added"}, `"x.go\n+ all fine":1  init added`},
		{contract.AuditFinding{Path: "\u202eog.x", Line: 1, Rule: "init added"}, `"\u202eog.x":1  init added`},
		{contract.AuditFinding{Path: "é.go", Line: 2, Rule: "init added"}, "é.go:2  init added"},
	}
	for _, tt := range tests {
		if got := FindingText(tt.f); got != tt.want {
			t.Errorf("FindingText(%+v) = %q, want %q", tt.f, got, tt.want)
		}
	}
}
