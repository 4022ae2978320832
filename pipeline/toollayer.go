package pipeline

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// DefaultToolLayer is the tool layer of sandbox mode.
const DefaultToolLayer = "sandbox"

// ToolInput is the task a tool layer makes the tool image of (SPEC.md
// section 8); ToolEnv is the rest of what it gets.
type ToolInput struct {
	// Case is the case image reference; Task the task id; SourceDir the
	// task's SOURCE_DIR.
	Case, Task, SourceDir string
	// Home is the SSEBench home (datasets/, agents/, the layer's own
	// files if it has any).
	Home string
	// Plugins are the plugins the run selected.
	Plugins []string
	// Platform is the run's platform.
	Platform *v1.Platform
	// Push also pushes the tool image to its registry.
	Push bool
}

// ToolLayer turns a case image into a tool image. Whatever it adds, the
// image must keep the paths and modes of SPEC.md section 4 and an
// entrypoint that receives the agent's CMD; the simplest way is to start
// from the sandbox layer's image (ToolEnv.Sandbox) and add to it. The
// image it returns is in env.Store(), named REGISTRY/<something>/<task
// lowercased>:VERSION (env.Names().ToolLayer).
type ToolLayer interface {
	// Name is what `--tool-layer NAME` selects.
	Name() string
	// Tool makes the tool image of in.Task.
	Tool(ctx context.Context, env ToolEnv, in ToolInput) (*Built, error)
}

// ToolEnv is what a tool layer gets of the pipeline: the image names, the
// local store, the registry, and the sandbox image to start from. It is
// narrower than Env on purpose: a layer makes one image, and has no
// business with BuildKit, containerd or the run.
type ToolEnv interface {
	// Names gives REGISTRY and VERSION: Names().ToolLayer(kind, task)
	// names a layer's image.
	Names() naming.Names
	// Store is the local image store: Sandbox's image is read from it,
	// and the layer writes its own image to it.
	Store() *store.Store
	// Sandbox makes the sandbox layer's tool image of in
	// (REGISTRY/tool/<task>:VERSION, SPEC.md section 4) in Store, and
	// pushes it too when in.Push is set.
	Sandbox(ctx context.Context, in ToolInput) (*Built, error)
	// Push pushes img, as ref, to its registry with the registry
	// settings of the run (pull policy, plain-HTTP hosts). Layers that
	// the repositories mountFrom of the same registry hold are mounted
	// from there instead of uploaded.
	Push(ctx context.Context, ref string, img v1.Image, mountFrom ...string) (*remote.PushReport, error)
}

// toolEnv is Env's ToolEnv.
type toolEnv struct{ e *Env }

var _ ToolEnv = toolEnv{}

// toolEnv is what e gives a tool layer.
func (e *Env) toolEnv() ToolEnv { return toolEnv{e} }

func (t toolEnv) Names() naming.Names { return t.e.Names }
func (t toolEnv) Store() *store.Store { return t.e.Store }

func (t toolEnv) Sandbox(ctx context.Context, in ToolInput) (*Built, error) {
	return t.e.Tool(ctx, ToolRequest{Case: in.Case, Task: in.Task, SourceDir: in.SourceDir, Platform: in.Platform, Push: in.Push})
}

func (t toolEnv) Push(ctx context.Context, ref string, img v1.Image, mountFrom ...string) (*remote.PushReport, error) {
	opts := append([]remote.Option{remote.WithStore(t.e.Store), remote.WithMountFrom(mountFrom...)}, t.e.RegistryOptions...)
	return remote.Push(ctx, ref, img, opts...)
}

// SandboxLayer is the built-in tool layer: Env.Tool, SPEC.md section 4.
type SandboxLayer struct{}

// Name is "sandbox".
func (SandboxLayer) Name() string { return DefaultToolLayer }

// Tool assembles REGISTRY/tool/<task>:VERSION (ToolEnv.Sandbox).
func (SandboxLayer) Tool(ctx context.Context, env ToolEnv, in ToolInput) (*Built, error) {
	return env.Sandbox(ctx, in)
}

// ToolLayers is a registry of named tool layers.
type ToolLayers struct {
	mu     sync.Mutex
	layers map[string]ToolLayer
	// clashes are the layers that claimed a name already taken.
	clashes []clash
}

type clash struct{ first, second ToolLayer }

// NewToolLayers returns a registry holding ls.
func NewToolLayers(ls ...ToolLayer) *ToolLayers {
	r := &ToolLayers{layers: map[string]ToolLayer{}}
	for _, l := range ls {
		r.Register(l)
	}
	return r
}

// DefaultToolLayers is the registry `ssebench run --tool-layer` selects
// from: sandbox, and whatever the extensions compiled into the binary
// registered (RegisterToolLayer, from their init functions).
var DefaultToolLayers = NewToolLayers(SandboxLayer{})

// RegisterToolLayer adds l to DefaultToolLayers. Two layers of one name are
// not refused here, where an init function could only panic: every later
// Lookup fails with an error naming both.
func RegisterToolLayer(l ToolLayer) { DefaultToolLayers.Register(l) }

// Register adds l. A second layer of a name already taken is recorded as
// a clash, which Lookup reports.
func (r *ToolLayers) Register(l ToolLayer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.layers[l.Name()]; ok {
		r.clashes = append(r.clashes, clash{prev, l})
		return
	}
	r.layers[l.Name()] = l
}

// Names lists the registered names, sorted.
func (r *ToolLayers) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.layers))
	for n := range r.layers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Lookup returns the layer called name ("" means sandbox). It fails when
// two layers claim one name (any name: the binary is then built wrong),
// and for an unknown name, listing the known ones.
func (r *ToolLayers) Lookup(name string) (ToolLayer, error) {
	if name == "" {
		name = DefaultToolLayer
	}
	r.mu.Lock()
	if len(r.clashes) > 0 {
		c := r.clashes[0]
		r.mu.Unlock()
		return nil, fmt.Errorf("two tool layers claim the name %q: %s and %s; rename or remove one of them", c.first.Name(), describeLayer(c.first), describeLayer(c.second))
	}
	l, ok := r.layers[name]
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("unknown tool layer %q: the tool layers are %s", name, strings.Join(r.Names(), ", "))
	}
	return l, nil
}

// describeLayer names a layer by its Go type, which says which package
// registered it.
func describeLayer(l ToolLayer) string { return fmt.Sprintf("%T", l) }

// toolLayers is the registry of the environment.
func (e *Env) toolLayers() *ToolLayers {
	if e.Layers != nil {
		return e.Layers
	}
	return DefaultToolLayers
}
