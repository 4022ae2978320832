package commands_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunArgumentErrors checks the combinations `run` refuses (SPEC.md
// section 10) before it builds, pulls or runs anything.
func TestRunArgumentErrors(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"prebuilt with a plugin", nil, []string{"--prebuilt", "--plugin", "x"}, "--prebuilt runs the published agent image as it is: it cannot be combined with --tool-layer, --plugin or --build"},
		{"prebuilt with a tool layer", nil, []string{"--prebuilt", "--tool-layer", "sandbox"}, "cannot be combined"},
		{"prebuilt with build", nil, []string{"--prebuilt", "--build"}, "cannot be combined"},
		{"SSEBENCH_PREBUILT with a plugin", map[string]string{"SSEBENCH_PREBUILT": "1"}, []string{"--plugin", "x"}, "cannot be combined"},
		{"unknown tool layer", nil, []string{"--tool-layer", "sidecar-x"}, `unknown tool layer "sidecar-x": the tool layers are sandbox`},
		{"sidecar with a tool layer", nil, []string{"--mode", "sidecar", "--tool-layer", "sandbox"}, "--tool-layer does not apply in sidecar mode: the sidecar images replace the tool layer; drop --tool-layer or --mode sidecar"},
		{"unknown mode", nil, []string{"--mode", "vm"}, `unknown --mode "vm": use sandbox or sidecar`},
		{"local and catalog", nil, []string{"--local", "datasets/examples", "--catalog", "catalog"}, "--local and --catalog name two sources of the task: pass one"},
		{"difficulty out of range", nil, []string{"--difficulty", "5"}, "--difficulty 5 is not 0–4"},
		{"negative timeout", nil, []string{"--timeout", "-1"}, "--timeout -1 is negative"},
		{"bad egress", nil, []string{"--egress", "wide"}, `--egress: unknown network "wide"`},
		{"task typo", nil, []string{"--task", "kvconf-12-afb9ee2"}, `unknown task "kvconf-12-afb9ee2": did you mean "kvconf-12-afb9ee1"?`},
		{"agent typo", nil, []string{"--agent", "dumy"}, `unknown agent "dumy": did you mean "dummy"?`},
		{"model typo", nil, []string{"--model", "claude-x"}, `unknown model "claude-x": did you mean "claude"?`},
		{"sidecar without an OS image", map[string]string{"SSEBENCH_OS_IMAGE": ""}, []string{"--mode", "sidecar"}, "--mode sidecar needs "},
		{"max-cost without a price", nil, []string{"--model", "claude", "--max-cost", "2"}, "--max-cost needs the price of model claude: add it under prices: in "},
		{"model file with an unknown key", nil, []string{"--model", "bad"}, `bad.yaml: line 3: unknown key "flavor"`},
		{"model file's key variable unset", map[string]string{"SSEB_TEST_NO_SUCH_KEY": ""}, []string{"--model", "keyed"}, "the API key variable SSEB_TEST_NO_SUCH_KEY is not set on this machine"},
		{"gateway limits on an open run", nil, []string{"--model", "claude", "--egress", "open", "--max-requests", "5"}, "work through the model gateway of a restricted run: drop --egress open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCLI(t)
			writeFiles(t, c.home, map[string]string{
				"agents/dummy/agent.yaml":                        "name: dummy\n",
				"agents/dummy/Dockerfile":                        "FROM ssebench-agent\nCMD [\"echo dummy_QAQ\"]\n",
				"datasets/examples/kvconf-12-afb9ee1/Dockerfile": "FROM scratch\n",
				"models/claude.yaml":                             "base_url: https://api.example.invalid/v1\napi_key_env: none\n",
				"models/bad.yaml":                                "base_url: https://api.example.invalid/v1\napi_key_env: none\nflavor: openai-chat\n",
				"models/keyed.yaml":                              "base_url: https://api.example.invalid/v1\napi_key_env: SSEB_TEST_NO_SUCH_KEY\n",
			})
			t.Setenv("SSE_BASE_URL", "")
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			args := append([]string{"run", "--task", "kvconf-12-afb9ee1", "--agent", "dummy"}, tt.args...)
			out, _, err := c.run(t, args...)
			oneLine(t, err)
			if err == nil {
				t.Fatalf("ssebench %s succeeded", strings.Join(args, " "))
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ssebench %s: error %q lacks %q", strings.Join(args, " "), err, tt.want)
			}
			if out != "" {
				t.Errorf("run printed %q on stdout", out)
			}
			// Refused before anything started: no run folder.
			if _, err := os.Stat(filepath.Join(c.wd, "runs")); !os.IsNotExist(err) {
				t.Errorf("run made %s/runs (stat: %v)", c.wd, err)
			}
		})
	}
}

// TestEvalMode checks that eval refuses an unknown --mode before it plans
// anything.
func TestEvalMode(t *testing.T) {
	c := newCLI(t)
	writeFiles(t, c.home, map[string]string{
		"agents/dummy/agent.yaml":                        "name: dummy\n",
		"agents/dummy/Dockerfile":                        "FROM ssebench-agent\nCMD [\"echo dummy_QAQ\"]\n",
		"datasets/examples/kvconf-12-afb9ee1/Dockerfile": "FROM scratch\n",
	})
	_, _, err := c.run(t, "eval", "--agents", "dummy", "--tasks", "kvconf-12-afb9ee1", "--mode", "vm")
	oneLine(t, err)
	if err == nil || !strings.Contains(err.Error(), `unknown --mode "vm": use sandbox or sidecar`) {
		t.Errorf("eval --mode vm = %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.wd, "runs")); !os.IsNotExist(err) {
		t.Errorf("eval made %s/runs (stat: %v)", c.wd, err)
	}
}

// TestEvalNames: a typo in an agent or a task is refused before the plan,
// with the closest name, not retried as an infrastructure failure.
func TestEvalNames(t *testing.T) {
	c := newCLI(t)
	writeFiles(t, c.home, map[string]string{
		"agents/dummy/agent.yaml":                        "name: dummy\n",
		"agents/dummy/Dockerfile":                        "FROM ssebench-agent\nCMD [\"echo dummy_QAQ\"]\n",
		"datasets/examples/kvconf-12-afb9ee1/Dockerfile": "FROM scratch\n",
	})
	writeFiles(t, c.home, map[string]string{
		"models/claude.yaml": "base_url: https://api.example.invalid/v1\napi_key_env: none\n",
		"models/bad.yaml":    "base_url: https://api.example.invalid/v1\napi_key_env: none\nflavor: openai-chat\n",
	})
	t.Setenv("SSE_BASE_URL", "")
	for _, tc := range []struct{ agents, tasks, model, want string }{
		{"dumy", "kvconf-12-afb9ee1", "", `unknown agent "dumy": did you mean "dummy"?`},
		{"dummy", "kvconf-12-afb9ee2", "", `unknown task "kvconf-12-afb9ee2": did you mean "kvconf-12-afb9ee1"?`},
		{"dummy", "kvconf-12-afb9ee1", "claud", `unknown model "claud": did you mean "claude"?`},
		{"dummy", "kvconf-12-afb9ee1", "bad", `bad.yaml: line 3: unknown key "flavor"`},
	} {
		_, _, err := c.run(t, "eval", "--agents", tc.agents, "--tasks", tc.tasks, "--model", tc.model)
		oneLine(t, err)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("eval --agents %s --tasks %s = %v, want %q", tc.agents, tc.tasks, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(c.wd, "runs")); !os.IsNotExist(err) {
		t.Errorf("eval made %s/runs (stat: %v)", c.wd, err)
	}
}
