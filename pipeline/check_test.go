package pipeline_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
)

// TestCheck: what would fail a run only after its images is refused by
// Check, which builds and starts nothing.
func TestCheck(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "models"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "models", "claude.yaml"), []byte("base_url: https://api.example.invalid/v1\napi_key_env: none\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := &pipeline.Env{Home: home, Names: naming.NewNames("localhost:5000/sse", "1.0.0"), Store: st}
	env := map[string]string{}
	lookup := func(k string) string { return env[k] }
	for _, tc := range []struct {
		name string
		req  pipeline.RunRequest
		want string // "" passes
	}{
		{name: "plain", req: pipeline.RunRequest{}},
		{name: "no task", req: pipeline.RunRequest{Task: "-"}, want: "--task is required"},
		{name: "unknown tool layer", req: pipeline.RunRequest{ToolLayer: "x"}, want: `unknown tool layer "x"`},
		{name: "sidecar without an OS image", req: pipeline.RunRequest{Mode: pipeline.ModeSidecar}, want: "--mode sidecar needs localhost:5000/sse/tool-sidecar-agent"},
		{name: "sidecar with an OS image", req: pipeline.RunRequest{Mode: pipeline.ModeSidecar, OSImage: "debian:bookworm"}},
		{name: "model typo", req: pipeline.RunRequest{Model: "claude-x"}, want: `unknown model "claude-x": did you mean "claude"?`},
		{name: "max-cost without a price", req: pipeline.RunRequest{Model: "claude", Limits: gateway.Limits{MaxCost: 2}}, want: "--max-cost needs the price of model claude"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			if req.Task == "" {
				req.Task = "kvconf-12-afb9ee1"
			} else if req.Task == "-" {
				req.Task = ""
			}
			req.Agent, req.Lookup = "dummy", lookup
			err := e.Check(t.Context(), req)
			if tc.want == "" {
				if err != nil {
					t.Errorf("Check() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check() = %v, want %q", err, tc.want)
			}
		})
	}
}
