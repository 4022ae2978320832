package evaluate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/gateway/gatewaytest"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// TestBudgetStopsLaterRuns: an evaluation whose runs each make model
// requests through their own gateway, all on one budget. Once the budget
// is spent the run in flight gets its next requests refused (429, the
// reason in its model.jsonl), the later runs are not started, and
// evaluation.json, the error and the report say which and why.
func TestBudgetStopsLaterRuns(t *testing.T) {
	dir := t.TempDir()
	p := testPlan(t) // 12 runs
	if err := WritePlan(dir, p); err != nil {
		t.Fatal(err)
	}
	up, err := gatewaytest.New([]gatewaytest.Reply{{Text: "ok", InputTokens: 20, OutputTokens: 50}}, "sk-up")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	base, _ := url.Parse(up.URL + "/v1")
	// Each request uses 70 tokens and sets aside a little more (its
	// body's estimate, 29, plus max_tokens 50); each run sends 4: the
	// budget lasts one run and a request of the next.
	budget := gateway.Budget{Tokens: 300}
	l, err := gateway.NewLedger(budget, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := newFake()
	f.spend = func(j Job, rd string) *gateway.Totals {
		rec, err := os.Create(filepath.Join(rd, results.ModelLog))
		if err != nil {
			t.Error(err)
			return nil
		}
		defer rec.Close()
		cfg := &gateway.Config{Upstream: gateway.Upstream{BaseURL: base, Key: "sk-up", Flavour: gateway.OpenAIChat}, Model: "scripted", Allowed: []string{"scripted"}}
		gw, err := gateway.New(cfg, gateway.WithRecorder(rec), gateway.WithLedger(l))
		if err != nil {
			t.Error(err)
			return nil
		}
		sock := filepath.Join(rd, "gw.sock")
		if err := gw.Listen(sock); err != nil {
			t.Error(err)
			return nil
		}
		defer gw.Close()
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}
		for range 4 {
			req, _ := http.NewRequest(http.MethodPost, "http://gw/chat/completions", strings.NewReader(`{"model":"scripted","max_tokens":50,"messages":[{"role":"user","content":"fix it"}]}`))
			req.Header.Set("Authorization", "Bearer "+gw.Token())
			resp, err := client.Do(req)
			if err != nil {
				t.Error(err)
				return nil
			}
			// To its end, as an agent does before its next request.
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		// As the pipeline does: the totals once the gateway has closed,
		// its last request recorded.
		gw.Close()
		tot := gw.Totals()
		return &tot
	}
	out, err := Evaluate(context.Background(), f, dir, p, WithJobs(1), WithBudget(l))
	var spent *BudgetSpentError
	if !errors.As(err, &spent) || spent.NotStarted != len(out.NotStarted) {
		t.Fatalf("Evaluate: %v, want the budget spent", err)
	}
	t.Logf("%v", err)
	if out.Ran != 2 || len(out.NotStarted) != len(p.Runs)-2 {
		t.Errorf("ran %d, not started %d of %d; want the budget to stop the runs after the second", out.Ran, len(out.NotStarted), len(p.Runs))
	}
	// The runs not started are the plan's last, in its order.
	for i, j := range out.NotStarted {
		if want := p.Runs[out.Ran+i]; j != want {
			t.Errorf("not started #%d = %v, want %v", i, j, want)
		}
	}
	tokens, _ := l.Spent()
	oneMax := int64(len(`{"model":"scripted","max_tokens":50,"messages":[{"role":"user","content":"fix it"}]}`)/3+1) + 50
	if tokens > budget.Tokens+oneMax {
		t.Errorf("the runs spent %d tokens of a budget of %d (one request at most %d)", tokens, budget.Tokens, oneMax)
	}
	// The last run that ran had requests refused, each with its reason.
	runs := mustRuns(t, dir)
	var refusedLines int
	for _, r := range runs {
		b, _ := os.ReadFile(filepath.Join(r.Dir, results.ModelLog))
		for _, line := range bytes.Split(b, []byte("\n")) {
			if bytes.Contains(line, []byte(`"refused":"budget"`)) {
				refusedLines++
				if !bytes.Contains(line, []byte(`the evaluation's budget of 300 tokens is spent`)) || !bytes.Contains(line, []byte(`"status":429`)) {
					t.Errorf("a refused request's record: %s", line)
				}
			}
		}
	}
	if refusedLines == 0 {
		t.Error("no run in flight had a request refused for the budget")
	}
	ev, err := results.ReadEvaluation(dir)
	if err != nil || ev == nil || len(ev.NotStarted) != len(out.NotStarted) || ev.Budget == nil || ev.Budget.SpentTokens != tokens {
		t.Fatalf("evaluation.json = %+v, %v", ev, err)
	}
	for _, n := range ev.NotStarted {
		if n.Reason != results.ReasonBudgetSpent {
			t.Errorf("not started %+v: want reason %q", n, results.ReasonBudgetSpent)
		}
	}
	rep := results.NewReport("eval", runs)
	rep.Evaluation = ev
	var md bytes.Buffer
	results.Write(&md, rep, "md")
	if want := fmt.Sprintf("%d runs were not started: budget spent", len(out.NotStarted)); !strings.Contains(md.String(), want) {
		t.Errorf("the report lacks %q:\n%s", want, md.String())
	}

	// Resumed, the budget counts what the runs already spent: nothing
	// more starts.
	l2, err := NewLedger(dir, &Plan{Budget: &budget})
	if err != nil || !l2.Exhausted() {
		t.Errorf("a resumed evaluation's ledger: %v, exhausted %v", err, l2 != nil && l2.Exhausted())
	}
}

func mustRuns(t *testing.T, dir string) []*results.Run {
	t.Helper()
	runs, err := results.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}
