package pipeline

import (
	"context"
	"strings"
	"testing"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/runner"
	"github.com/42-b3yond-6ug/ssebench/runner/kube"
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
		{"sidecar with tool layer", func(r *RunRequest) { r.Mode, r.ToolLayer = ModeSidecar, "sandbox" }, "--tool-layer does not apply in sidecar mode"},
		{"unknown mode", func(r *RunRequest) { r.Mode = "vm" }, `unknown --mode "vm"`},
		{"sidecar", func(r *RunRequest) { r.Mode = ModeSidecar }, ""},
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

type otherSandbox struct{ SandboxLayer }

type namedLayer struct {
	SandboxLayer
	name string
}

func (l namedLayer) Name() string { return l.name }

func TestToolLayerLookup(t *testing.T) {
	r := NewToolLayers(SandboxLayer{}, namedLayer{name: "mcp"})
	if l, err := r.Lookup(""); err != nil || l.Name() != "sandbox" {
		t.Errorf(`Lookup("") = %v, %v; want the sandbox layer`, l, err)
	}
	if l, err := r.Lookup("mcp"); err != nil || l.Name() != "mcp" {
		t.Errorf(`Lookup("mcp") = %v, %v`, l, err)
	}
	_, err := r.Lookup("vm")
	if err == nil || err.Error() != `unknown tool layer "vm": the tool layers are mcp, sandbox` {
		t.Errorf(`Lookup("vm") = %v`, err)
	}
}

func TestToolLayerNameClash(t *testing.T) {
	r := NewToolLayers(SandboxLayer{}, namedLayer{name: "mcp"})
	r.Register(otherSandbox{})
	_, err := r.Lookup("mcp")
	want := `two tool layers claim the name "sandbox": pipeline.SandboxLayer and pipeline.otherSandbox; rename or remove one of them`
	if err == nil || err.Error() != want {
		t.Errorf("Lookup() = %v, want %q", err, want)
	}
	// A run refuses it before building anything.
	e := &Env{Layers: r}
	if err := e.validate(&RunRequest{Task: "t", Agent: "dummy"}); err == nil || err.Error() != want {
		t.Errorf("validate() = %v, want %q", err, want)
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
	if strings.Contains(got, contract.EnvAllowNoSandbox) {
		t.Errorf("env allows a grade without sandbox unasked:\n%s", got)
	}
	r.AllowNoSandbox = true
	if got := strings.Join(r.env(), "\n"); !strings.Contains(got, contract.EnvAllowNoSandbox+"=1") {
		t.Errorf("--allow-no-sandbox: env lacks %s=1:\n%s", contract.EnvAllowNoSandbox, got)
	}
}

// TestSidecarRunner checks which backends declare that they run sidecar
// mode: containerd's does, a cluster's (its containers on other machines)
// does not.
func TestSidecarRunner(t *testing.T) {
	var local Executor = (*runner.Runner)(nil)
	if _, ok := local.(SidecarRunner); !ok {
		t.Error("runner.Runner does not implement SidecarRunner")
	}
	var cluster Executor = (*kube.Runner)(nil)
	if _, ok := cluster.(SidecarRunner); ok {
		t.Error("kube.Runner implements SidecarRunner, but its containers are not on this machine")
	}
}

// TestOpenRunLoopbackRegistry: an open run, which shares this machine's
// network, is refused before anything is built where the image registry
// listens on loopback (the agent would push to it); on a cluster, or with
// a registry elsewhere, it goes on.
func TestOpenRunLoopbackRegistry(t *testing.T) {
	for _, tc := range []struct {
		registry string
		cluster  bool
		refused  bool
	}{
		{"localhost:5000/ssebench", false, true},
		{"127.0.0.1:5000/ssebench", true, false},
		{"10.9.8.7:5000/ssebench", false, false},
	} {
		e := &Env{Names: naming.NewNames(tc.registry, "1.0.0")}
		req := &RunRequest{Task: "t", Agent: "a", Network: runner.NetworkOpen}
		if tc.cluster {
			req.Cluster = fakeCluster{}
		}
		err := e.CheckModel(req)
		if (err != nil) != tc.refused {
			t.Errorf("CheckModel(open, registry %s, cluster %t) = %v, want refused %t", tc.registry, tc.cluster, err, tc.refused)
		}
	}
}

type fakeCluster struct{}

func (fakeCluster) Open(context.Context, string) (Executor, error) { return nil, nil }
