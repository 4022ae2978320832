package evaluate_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/gateway/gatewaytest"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// spender is an agent that makes three model requests through its run's
// gateway and prints what it got.
const spender = `#!/bin/bash
body='{"model":"scripted","max_tokens":50,"messages":[{"role":"user","content":"fix the bug"}]}'
for i in 1 2 3; do
	code=$(curl -s -o /tmp/r$i -w '%{http_code}' -H "Authorization: Bearer $SSE_API_KEY" -H 'Content-Type: application/json' -d "$body" "$SSE_BASE_URL/chat/completions")
	echo "request $i: $code $(cat /tmp/r$i)"
done
`

// TestEvaluateBudget: an evaluation on containerd with --budget, three
// attempts one after another of an agent that makes three requests each.
// The first run fits the budget, the second has its second request
// refused by its gateway (429, the reason in model.jsonl and the agent's
// log), the third is not started, and evaluation.json says so.
func TestEvaluateBudget(t *testing.T) {
	w := setup(t)
	ctx := context.Background()
	d := filepath.Join(w.home, "agents", "spender")
	mkdir(t, d)
	os.WriteFile(filepath.Join(d, "agent.yaml"), []byte("name: spender\n"), 0o644)
	os.WriteFile(filepath.Join(d, "Dockerfile"), []byte("FROM ssebench-agent\nCOPY --chmod=0755 spend.sh /opt/spend.sh\nCMD [\"/opt/spend.sh\"]\n"), 0o644)
	os.WriteFile(filepath.Join(d, "spend.sh"), []byte(spender), 0o644)
	// 70 tokens a request (20 in, 50 out): three make 210.
	up, err := gatewaytest.New([]gatewaytest.Reply{{Text: "scripted answer", InputTokens: 20, OutputTokens: 50}}, "sk-upstream-key")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()

	plan, err := evaluate.NewPlan([]string{"spender"}, []string{"kvconf-12-afb9ee1"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	budget := gateway.Budget{Tokens: 250}
	plan.Dataset, plan.Timeout, plan.Difficulty, plan.Model, plan.Budget = filepath.Join(w.home, "datasets", "examples"), 600, 2, "scripted", &budget
	dir := filepath.Join(w.work, "runs", plan.FolderName())
	if err := evaluate.WritePlan(dir, plan); err != nil {
		t.Fatal(err)
	}
	l, err := evaluate.NewLedger(dir, plan)
	if err != nil {
		t.Fatal(err)
	}
	b := &evaluate.Containerd{Env: w.env, EvalID: plan.ID, Request: pipeline.RunRequest{
		Dataset: plan.Dataset, Timeout: plan.Timeout, Difficulty: plan.Difficulty, ContainerdAddr: w.ctrd, Output: io.Discard,
		Model: plan.Model, BaseURL: up.URL + "/v1", APIKey: "sk-upstream-key", Ledger: l,
	}}
	out, err := evaluate.Evaluate(ctx, b, dir, plan, evaluate.WithJobs(1), evaluate.WithBudget(l))
	var spent *evaluate.BudgetSpentError
	if !errors.As(err, &spent) {
		t.Fatalf("Evaluate() = %v, want the budget spent", err)
	}
	t.Log(err)
	if out.Ran != 2 || len(out.NotStarted) != 1 || out.NotStarted[0].Attempt != 3 {
		t.Errorf("ran %d, not started %v; want 2 runs and attempt 3 not started", out.Ran, out.NotStarted)
	}
	if tokens, _ := l.Spent(); tokens != 280 {
		t.Errorf("the runs spent %d tokens, want 280 (4 requests of 70)", tokens)
	}
	runs, err := results.List(dir)
	if err != nil || len(runs) != 2 {
		t.Fatalf("%d runs in the folder (%v), want 2", len(runs), err)
	}
	second := runs[1]
	if second.Summary.Attempt != 2 {
		second = runs[0]
	}
	log, _ := os.ReadFile(filepath.Join(second.Dir, "agent.log"))
	jsonl, _ := os.ReadFile(filepath.Join(second.Dir, results.ModelLog))
	t.Logf("agent.log of the second run:\n%s\nmodel.jsonl:\n%s", log, jsonl)
	if !strings.Contains(string(log), "request 2: 429") || !strings.Contains(string(log), "the evaluation's budget of 250 tokens is spent") {
		t.Errorf("the second run's second request was not refused for the budget")
	}
	if !strings.Contains(string(jsonl), `"refused":"budget"`) || second.Tokens != 70 {
		t.Errorf("the second run's model.jsonl lacks the refusal, or its tokens are %d (want 70)", second.Tokens)
	}
	ev, err := results.ReadEvaluation(dir)
	if err != nil || ev == nil || len(ev.NotStarted) != 1 || ev.NotStarted[0].Reason != results.ReasonBudgetSpent || ev.Budget.SpentTokens != 280 {
		t.Errorf("evaluation.json = %+v, %v", ev, err)
	}
}
