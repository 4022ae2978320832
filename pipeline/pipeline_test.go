package pipeline

import (
	"strings"
	"testing"
)

func TestRunRequestValidate(t *testing.T) {
	ok := RunRequest{Task: "t", Agent: "dummy"}
	tests := []struct {
		name string
		mod  func(*RunRequest)
		want string
	}{
		{"valid", func(*RunRequest) {}, ""},
		{"no task", func(r *RunRequest) { r.Task = "" }, "--task is required"},
		{"no agent", func(r *RunRequest) { r.Agent = "" }, "--agent is required"},
		{"local and catalog", func(r *RunRequest) { r.Dataset, r.Catalog = "a", "b" }, "pass one"},
		{"prebuilt with tool layer", func(r *RunRequest) { r.Prebuilt, r.ToolLayer = true, "sandbox" }, "cannot be combined"},
		{"prebuilt with plugin", func(r *RunRequest) { r.Prebuilt, r.Plugins = true, []string{"p"} }, "cannot be combined"},
		{"prebuilt with build", func(r *RunRequest) { r.Prebuilt, r.Build = true, true }, "cannot be combined"},
		{"difficulty", func(r *RunRequest) { r.Difficulty = 5 }, "not 0–4"},
		{"unknown tool layer", func(r *RunRequest) { r.ToolLayer = "mcp" }, `unknown tool layer "mcp": the tool layers are sandbox`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ok
			tt.mod(&r)
			err := r.Validate()
			if tt.want == "" {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestToolLayerNameClash(t *testing.T) {
	saved := ToolLayers
	defer func() { ToolLayers = saved }()
	ToolLayers = []string{"sandbox", "mcp", "mcp"}
	err := checkToolLayer("sandbox")
	if err == nil || !strings.Contains(err.Error(), `2 tool layers claim the name "mcp"`) {
		t.Errorf("checkToolLayer() = %v, want a clash on mcp", err)
	}
}

func TestRunEnv(t *testing.T) {
	r := RunRequest{Task: "t", Agent: "a", Difficulty: 3, Plugins: []string{"x", "y"}}
	got := strings.Join(r.env(), "\n")
	for _, want := range []string{"SSE_ARCHIVE=/tmp/sse-archive", "SSE_RESULTS=/var/lib/ssebench/results", "SSE_DIFFICULTY=3", "TIMEOUT=3600", "SSE_MODEL_NAME=none", "SSE_KEEP_ALIVE=0", "SSE_PLUGINS=x,y"} {
		if !strings.Contains(got, want) {
			t.Errorf("env lacks %q:\n%s", want, got)
		}
	}
}
