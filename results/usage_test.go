package results

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/gateway"
)

// writeModelLog writes model.jsonl as the gateway writes it: one Record a
// line, the counts at the top level.
func writeModelLog(t *testing.T, dir string, recs ...gateway.Record) {
	t.Helper()
	var b bytes.Buffer
	for _, r := range recs {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, ModelLog), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func rec(seq int, in, out int64, cost float64) gateway.Record {
	return gateway.Record{Seq: seq, Method: "POST", Path: "/chat/completions", Model: "m", Status: 200,
		Usage: gateway.Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}, CostUSD: cost}
}

// TestTokensAndCost: run folders with model.jsonl (and, for one, the
// gateway's totals in summary.json) as a gateway run leaves them give
// their real tokens and cost in every reader: the run's entry, the
// report's agents, cells and tasks, and each report format; the time is
// split into building, agent and grading.
func TestTokensAndCost(t *testing.T) {
	root := t.TempDir()
	// a: model.jsonl only, priced; b: the totals in summary.json too;
	// c: no price; d: no model.
	a := fakeRun(t, root, "a", "task-a", "loop", 1, allOK, 100)
	writeModelLog(t, a, rec(1, 1000, 200, 0.0046), rec(2, 3000, 500, 0.0165),
		gateway.Record{Seq: 3, Status: 429, Refused: "budget", Error: "the evaluation's budget of 10 tokens is spent"})
	b := fakeRun(t, root, "b", "task-b", "loop", 1, bugged, 50)
	writeModelLog(t, b, rec(1, 10, 5, 0.000105))
	s := readSummary(t, b)
	s.ModelUsage = &gateway.Totals{Requests: 1, Usage: gateway.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}, CostUSD: 0.000105}
	writeSummary(t, b, s)
	c := fakeRun(t, root, "c", "task-a", "codex", 1, bugged, 30)
	writeModelLog(t, c, rec(1, 40, 2, 0))
	fakeRun(t, root, "d", "task-b", "codex", 1, bugged, 30)
	// The time split: builds, import and start; the agent; the checks.
	s = readSummary(t, a)
	s.Timings = map[string]float64{"case": 5, "tool": 10, "agent": 20, "startup": 2, "run": 60, "total": 100}
	writeSummary(t, a, s)
	res, _ := contract.ReadRunResult(a)
	res.AgentDurationMS = 40_000
	res.Build.DurationMS, res.Test.DurationMS, res.PoC.DurationMS = 3000, 4000, 1000
	contract.WriteRunResult(a, res)

	runs := mustList(t, root)
	byID := map[string]Entry{}
	for _, r := range runs {
		byID[r.ID] = r.Entry()
	}
	check := func(id string, tok int64, cost float64, priced bool) {
		t.Helper()
		e := byID[id]
		if e.Tokens == nil || *e.Tokens != tok || (e.CostUSD != nil) != priced || (priced && *e.CostUSD != cost) {
			t.Errorf("run %s: tokens %s, cost %s; want %d tokens, cost %v (priced %v)", id, tokens(e.Tokens), costOf(e.CostUSD), tok, cost, priced)
		}
	}
	check("a", 4700, 0.0211, true)
	check("b", 15, 0.000105, true)
	check("c", 42, 0, false)
	if e := byID["d"]; e.Tokens != nil || e.CostUSD != nil {
		t.Errorf("run d has no model record: tokens %s, cost %s", tokens(e.Tokens), costOf(e.CostUSD))
	}
	if e := byID["a"]; e.BuildSeconds != 37 || e.AgentSeconds != 40 || e.GradeSeconds != 8 {
		t.Errorf("run a's time: building %v, agent %v, grading %v; want 37, 40, 8", e.BuildSeconds, e.AgentSeconds, e.GradeSeconds)
	}

	rep := NewReport("eval-x", runs)
	var loop, codex AgentStats
	for _, ag := range rep.Agents {
		map[string]*AgentStats{"loop": &loop, "codex": &codex}[ag.Agent].Spend = ag.Spend
	}
	if tokens(loop.Tokens) != "4715" || costOf(loop.CostUSD) != "0.021205" || tokens(codex.Tokens) != "42" || codex.CostUSD != nil {
		t.Errorf("per agent: loop %s tokens $%s, codex %s tokens $%s", tokens(loop.Tokens), costOf(loop.CostUSD), tokens(codex.Tokens), costOf(codex.CostUSD))
	}
	rows := map[string]TaskRow{}
	for _, r := range rep.Matrix {
		rows[r.Task] = r
	}
	if tokens(rows["task-a"].Tokens) != "4742" || tokens(rows["task-b"].Tokens) != "15" {
		t.Errorf("per task: task-a %s, task-b %s tokens", tokens(rows["task-a"].Tokens), tokens(rows["task-b"].Tokens))
	}

	var js bytes.Buffer
	if err := Write(&js, rep, "json"); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Agents []struct {
			Agent   string   `json:"agent"`
			Tokens  *int64   `json:"tokens"`
			CostUSD *float64 `json:"cost_usd"`
		} `json:"agents"`
		Matrix []struct {
			Task  string `json:"task"`
			Cells []struct {
				Task    string   `json:"task"`
				Agent   string   `json:"agent"`
				Tokens  *int64   `json:"tokens"`
				CostUSD *float64 `json:"cost_usd"`
			} `json:"cells"`
		} `json:"matrix"`
		Runs []struct {
			ID      string   `json:"id"`
			Tokens  *int64   `json:"tokens"`
			CostUSD *float64 `json:"cost_usd"`
		} `json:"runs_list"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, row := range doc.Matrix {
		for _, cell := range row.Cells {
			if cell.Task != row.Task {
				t.Errorf("a cell of row %s says task %s", row.Task, cell.Task)
			}
			if cell.Task == "task-a" && cell.Agent == "loop" {
				found = cell.Tokens != nil && *cell.Tokens == 4700 && cell.CostUSD != nil && *cell.CostUSD == 0.0211
			}
		}
	}
	if !found {
		t.Errorf("the JSON report has no cell task-a × loop with 4700 tokens and $0.0211:\n%s", js.String())
	}

	for _, f := range []string{"md", "html"} {
		var out bytes.Buffer
		if err := Write(&out, rep, f); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"4715", "$0.0212", "4700 tokens, $0.0211", "42 tokens"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("the %s report lacks %q", f, want)
			}
		}
	}
	var md bytes.Buffer
	Write(&md, rep, "md")
	if !strings.Contains(md.String(), "| loop | none | 1 | 2 | 50% |") || !strings.Contains(md.String(), "4 runs of 2 agents on 2 tasks.") {
		t.Errorf("markdown:\n%s", md.String())
	}
	var ju bytes.Buffer
	Write(&ju, rep, "junit")
	if !strings.Contains(ju.String(), `<property name="tokens" value="4715">`) || !strings.Contains(ju.String(), `<property name="cost_usd" value="0.0212">`) {
		t.Errorf("the JUnit report lacks the tokens and cost:\n%s", ju.String())
	}
}

// TestPlurals: one run of one agent on one task is said so.
func TestPlurals(t *testing.T) {
	root := t.TempDir()
	fakeRun(t, root, "a", "task-a", "loop", 1, allOK, 10)
	for _, f := range []string{"md", "html"} {
		var out bytes.Buffer
		Write(&out, NewReport("x", mustList(t, root)), f)
		if !strings.Contains(out.String(), "1 run of 1 agent on 1 task") {
			t.Errorf("the %s report does not say 1 run of 1 agent on 1 task", f)
		}
	}
}

// TestBudgetInReport: an evaluation's evaluation.json (its budget and
// the runs it did not start) is in every report format.
func TestBudgetInReport(t *testing.T) {
	root := t.TempDir()
	fakeRun(t, filepath.Join(root, "runs"), "a", "task-a", "loop", 1, allOK, 10)
	ev := Evaluation{Budget: &BudgetUse{Budget: gateway.Budget{Tokens: 5000}, SpentTokens: 5040},
		NotStarted: []NotStarted{{Task: "task-b", Agent: "loop", Attempt: 1, Reason: ReasonBudgetSpent}, {Task: "task-c", Agent: "loop", Attempt: 1, Reason: ReasonBudgetSpent}}}
	b, _ := json.Marshal(ev)
	os.WriteFile(filepath.Join(root, EvaluationFile), b, 0o644)
	got, err := ReadEvaluation(root)
	if err != nil || got == nil {
		t.Fatalf("ReadEvaluation: %v, %v", got, err)
	}
	rep := NewReport("x", mustList(t, root))
	rep.Evaluation = got
	for f, wants := range map[string][]string{
		"md":    {"Budget: 5040 of 5000 tokens spent.", "2 runs were not started: budget spent", "| task-c | loop | 1 | budget spent |"},
		"html":  {"Budget: 5040 of 5000 tokens spent.", "2 runs were not started: budget spent", "<td>task-c</td><td>loop</td><td>1</td><td>budget spent</td>"},
		"json":  {`"not_started": [`, `"reason": "budget spent"`, `"spent_tokens": 5040`},
		"junit": {`<property name="not_started" value="2 (budget spent)">`},
	} {
		var out bytes.Buffer
		if err := Write(&out, rep, f); err != nil {
			t.Fatal(err)
		}
		for _, w := range wants {
			if !strings.Contains(out.String(), w) {
				t.Errorf("the %s report lacks %q:\n%s", f, w, out.String())
			}
		}
	}
}

func costOf(c *float64) string {
	if c == nil {
		return "-"
	}
	return strconv.FormatFloat(*c, 'f', -1, 64)
}

func readSummary(t *testing.T, dir string) *Summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

func writeSummary(t *testing.T, dir string, s *Summary) {
	t.Helper()
	b, _ := json.Marshal(s)
	if err := os.WriteFile(filepath.Join(dir, SummaryFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestUnpricedTotals: a total over runs some of which had no price says
// it is a lower bound and how many runs it leaves out (it silently left
// them out).
func TestUnpricedTotals(t *testing.T) {
	root := t.TempDir()
	a := fakeRun(t, root, "a", "task-a", "loop", 1, allOK, 100)
	writeModelLog(t, a, rec(1, 1000, 200, 0.01))
	b := fakeRun(t, root, "b", "task-b", "loop", 1, bugged, 50)
	writeModelLog(t, b, rec(1, 500, 50, 0))
	fakeRun(t, root, "c", "task-b", "dummy", 1, bugged, 30) // no model: not unpriced
	runs, err := List(root)
	if err != nil {
		t.Fatal(err)
	}
	rep := NewReport("eval", runs)
	for _, s := range rep.Agents {
		if want := map[string]int{"loop": 1, "dummy": 0}[s.Agent]; s.Unpriced != want {
			t.Errorf("%s: %d unpriced runs, want %d", s.Agent, s.Unpriced, want)
		}
	}
	for _, format := range []string{"md", "html"} {
		var out bytes.Buffer
		if err := Write(&out, rep, format); err != nil {
			t.Fatal(err)
		}
		if want := "≥ $0.0100 (1 run unpriced)"; !strings.Contains(out.String(), want) {
			t.Errorf("the %s report has no %q:\n%s", format, want, out.String())
		}
	}
	var md bytes.Buffer
	Write(&md, rep, "md")
	// The task whose one model run had no price.
	if want := "| 550 tokens, - (1 run unpriced) |"; !strings.Contains(md.String(), want) {
		t.Errorf("the Markdown report has no %q:\n%s", want, md.String())
	}
}

// TestModelUnreachable: a run whose every request got no answer from the
// upstream is told apart; one answered request, or none forwarded, is an
// ordinary run.
func TestModelUnreachable(t *testing.T) {
	root := t.TempDir()
	down := func(seq int) gateway.Record {
		return gateway.Record{Seq: seq, Method: "POST", Path: "/chat/completions", Status: 502, Failed: true, Error: "dial tcp 127.0.0.1:9: connect: connection refused"}
	}
	for _, c := range []struct {
		name string
		recs []gateway.Record
		want bool
	}{
		{"all refused", []gateway.Record{down(1), down(2), {Seq: 3, Status: 429, Refused: "max_requests"}}, true},
		{"one answered", []gateway.Record{down(1), rec(2, 10, 5, 0)}, false},
		{"upstream error status", []gateway.Record{{Seq: 1, Status: 500, Failed: true, Error: "upstream said 500"}}, false},
		{"no request", nil, false},
	} {
		dir := fakeRun(t, root, strings.ReplaceAll(c.name, " ", "-"), "task", "loop", 1, bugged, 2)
		writeModelLog(t, dir, c.recs...)
		r, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		got, n, why := r.ModelUnreachable()
		if got != c.want || (got && (n != 2 || !strings.Contains(why, "connection refused"))) {
			t.Errorf("%s: ModelUnreachable() = %v, %d, %q; want %v", c.name, got, n, why, c.want)
		}
	}
}
