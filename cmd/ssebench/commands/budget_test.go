package commands_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvalBudgetChecked: eval refuses a --budget it could not keep, in
// one line that says what to do, before it plans or builds anything.
func TestEvalBudgetChecked(t *testing.T) {
	c := newCLI(t)
	writeFiles(t, c.home, map[string]string{
		"agents/dummy/agent.yaml":                        "name: dummy\n",
		"agents/dummy/Dockerfile":                        "FROM ssebench-agent\nCMD [\"echo dummy_QAQ\"]\n",
		"datasets/examples/kvconf-12-afb9ee1/Dockerfile": "FROM scratch\n",
		"models/m.yaml":                                  "base_url: https://api.example.invalid/v1\napi_key_env: none\n",
	})
	eval := []string{"eval", "--agents", "dummy", "--tasks", "kvconf-12-afb9ee1"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--budget", "5 dollars", "--model", "m"}, `give tokens (2000000, 500k, 2m) or US dollars ($5, 5usd)`},
		{[]string{"--budget", "1000", "--model", "m", "--egress", "open"}, "drop --egress open"},
		{[]string{"--budget", "1000", "--model", "m", "--backend", "kubernetes"}, "--budget cannot hold on --backend kubernetes"},
		{[]string{"--budget", "1000"}, "the runs have no model: pass --model NAME"},
		{[]string{"--budget", "$5", "--model", "m"}, "needs the price of model m"},
	} {
		_, _, err := c.run(t, append(eval, tc.args...)...)
		oneLine(t, err)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("eval %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(c.wd, "runs")); !os.IsNotExist(err) {
		t.Errorf("eval made %s/runs (stat: %v)", c.wd, err)
	}
}

// writeGatewayRun writes a run folder of a gateway run as pipeline leaves
// it: model.jsonl (the counts at the top level of each line), the totals
// in summary.json's model_usage, and result.json.
func writeGatewayRun(t *testing.T, runs, id string) {
	t.Helper()
	writeFiles(t, filepath.Join(runs, id), map[string]string{
		"summary.json": `{"run_id": "` + id + `", "task": "kvconf-12-afb9ee1", "agent": "loop", "status": "ok", "exit_code": 0,
			"config": {"model": "claude"}, "timings_seconds": {"case": 3, "tool": 4, "agent": 5, "startup": 2, "run": 40, "total": 50},
			"model_usage": {"requests": 2, "failed": 0, "refused": 1, "input_tokens": 4000, "output_tokens": 700, "total_tokens": 4700, "cost_usd": 0.0211, "limits": {}, "flavour": "anthropic-messages"},
			"started": "2026-12-01T12:00:00Z", "finished": "2026-12-01T12:00:50Z"}`,
		"result.json": `{"task_id": "kvconf-12-afb9ee1", "passed": true, "agent_duration_ms": 30000,
			"build": {"ok": true, "exit": 0, "duration_ms": 2000}, "test": {"ok": true, "exit": 0, "duration_ms": 3000}, "poc": {"ok": true, "exit": 0, "duration_ms": 1000},
			"model_usage": {"requests": 2, "input_tokens": 4000, "output_tokens": 700, "total_tokens": 4700, "cost_usd": 0.0211}}`,
		"model.jsonl": `{"seq":1,"time":"2026-12-01T12:00:10Z","method":"POST","path":"/v1/messages","model":"claude","stream":true,"status":200,"latency_ms":900,"input_tokens":1000,"output_tokens":200,"total_tokens":1200,"cost_usd":0.006}
{"seq":2,"time":"2026-12-01T12:00:20Z","method":"POST","path":"/v1/messages","model":"claude","stream":false,"status":200,"latency_ms":800,"input_tokens":3000,"output_tokens":500,"total_tokens":3500,"cost_usd":0.0151}
{"seq":3,"time":"2026-12-01T12:00:30Z","method":"POST","path":"/v1/files","stream":false,"status":403,"latency_ms":0.1,"input_tokens":0,"output_tokens":0,"total_tokens":0,"refused":"endpoint","error":"POST /v1/files is not an endpoint the gateway forwards"}
`,
		"final.patch": "",
	})
}

// TestRunsShowTokensAndCost: a gateway run's tokens and cost reach runs
// ls, runs ls --json, runs show and runs report, with the time split.
func TestRunsShowTokensAndCost(t *testing.T) {
	c := newCLI(t)
	runs := filepath.Join(c.root, "runs")
	writeGatewayRun(t, runs, "20261201-120000-kvconf-12-afb9ee1-loop-cccccc")

	out, _ := c.mustRun(t, "runs", "ls", "--runs-dir", runs)
	for _, want := range []string{"TOKENS", "COST", "4700", "$0.0211", "30s"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs ls lacks %q:\n%s", want, out)
		}
	}
	out, _ = c.mustRun(t, "runs", "ls", "--runs-dir", runs, "--json")
	var entries []struct {
		Tokens       *int64   `json:"tokens"`
		CostUSD      *float64 `json:"cost_usd"`
		BuildSeconds float64  `json:"build_seconds"`
		AgentSeconds float64  `json:"agent_seconds"`
		GradeSeconds float64  `json:"grade_seconds"`
	}
	if err := json.Unmarshal([]byte(out), &entries); err != nil || len(entries) != 1 {
		t.Fatalf("runs ls --json: %v\n%s", err, out)
	}
	if e := entries[0]; e.Tokens == nil || *e.Tokens != 4700 || e.CostUSD == nil || *e.CostUSD != 0.0211 || e.BuildSeconds != 14 || e.AgentSeconds != 30 || e.GradeSeconds != 6 {
		t.Errorf("runs ls --json = %s", out)
	}
	out, _ = c.mustRun(t, "runs", "show", "--runs-dir", runs, "20261201-120000-kvconf")
	for _, want := range []string{"usage    4700 tokens (4000 in, 700 out), $0.0211, 2 requests (0 failed, 1 refused)", "(building 14s, agent 30s, grading 6s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("runs show lacks %q:\n%s", want, out)
		}
	}
	out, _ = c.mustRun(t, "runs", "report", runs)
	for _, want := range []string{"4700", "$0.0211", "1 run of 1 agent on 1 task."} {
		if !strings.Contains(out, want) {
			t.Errorf("runs report lacks %q:\n%s", want, out)
		}
	}
}

// TestRunsLsEmpty: with no runs folder yet, runs ls says so in words.
func TestRunsLsEmpty(t *testing.T) {
	c := newCLI(t)
	out, errOut, err := c.run(t, "runs", "ls")
	if err != nil || out != "" || !strings.Contains(errOut, "no runs under runs") || strings.Contains(errOut, "no such file") {
		t.Errorf("runs ls without runs: %v, stdout %q, stderr %q", err, out, errOut)
	}
	out, _, err = c.run(t, "runs", "ls", "--json")
	if err != nil || strings.TrimSpace(out) != "[]" {
		t.Errorf("runs ls --json without runs: %v, %q", err, out)
	}
}
