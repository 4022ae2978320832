// Package toollayer is an example of a custom tool layer (SPEC.md
// section 8): it takes the sandbox layer's tool image and adds one file and
// one environment variable, as REGISTRY/tool-example/<task>:VERSION.
// Importing the package registers it as `--tool-layer example`;
// examples/cmd/ssebench-example is the CLI built with it (the ssebench
// command links no example), and the README's "Custom tool layers" shows how
// to write one.
package toollayer

import (
	"archive/tar"
	"context"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
)

const (
	// Name is what --tool-layer selects.
	Name = "example"
	// Kind is the repository of its images under REGISTRY.
	Kind = "tool-example"
	// File is the file the layer adds, root-owned 0644.
	File = "/etc/ssebench-example-layer"
	// EnvVar is the variable it adds to the image's environment, set to
	// Name. It is not an SSE_ variable: those are the run's alone.
	EnvVar = "SSEBENCH_TOOL_LAYER"
)

// Content is File's content.
const Content = "This tool image was made by the example tool layer of ssebench.\n"

func init() { pipeline.RegisterToolLayer(Layer{}) }

// Layer is the example layer.
type Layer struct{}

// Name is "example".
func (Layer) Name() string { return Name }

// Tool builds the sandbox image, then appends the example's layer and
// variable. The result is deterministic: the new layer's times are the
// sandbox image's creation time.
func (Layer) Tool(ctx context.Context, env pipeline.ToolEnv, in pipeline.ToolInput) (*pipeline.Built, error) {
	start := time.Now()
	sandbox, err := env.Sandbox(ctx, pipeline.ToolInput{
		Case: in.Case, Task: in.Task, SourceDir: in.SourceDir, Home: in.Home, Plugins: in.Plugins, Platform: in.Platform,
	})
	if err != nil {
		return nil, err
	}
	sref, err := name.ParseReference(sandbox.Name, name.WeakValidation)
	if err != nil {
		return nil, err
	}
	base, err := env.Store().Image(sref)
	if err != nil {
		return nil, fmt.Errorf("reading the sandbox image %s: %w", sandbox.Name, err)
	}
	cf, err := base.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of %s: %w", sandbox.Name, err)
	}
	when := cf.Created.Time.UTC()
	w, err := oci.NewLayerWriter(env.Store().TempDir(), oci.WithDefaultTime(when))
	if err != nil {
		return nil, err
	}
	h := &tar.Header{Typeflag: tar.TypeReg, Name: File, Mode: 0o644, Size: int64(len(Content)), ModTime: when}
	if err := w.WriteHeader(h); err != nil {
		w.Abort()
		return nil, err
	}
	if _, err := w.Write([]byte(Content)); err != nil {
		w.Abort()
		return nil, err
	}
	l, err := w.Finish()
	if err != nil {
		return nil, err
	}
	defer l.(*oci.SpooledLayer).Remove()

	img, err := mutate.Append(base, mutate.Addendum{Layer: l, History: v1.History{
		Created: cf.Created, CreatedBy: "ssebench tool layer " + Name + ": " + File, Comment: File,
	}})
	if err != nil {
		return nil, err
	}
	c := cf.Config.DeepCopy()
	c.Env = append(c.Env, EnvVar+"="+Name)
	if img, err = mutate.Config(img, *c); err != nil {
		return nil, err
	}
	if img, err = mutate.CreatedAt(img, cf.Created); err != nil {
		return nil, err
	}
	out := env.Names().ToolLayer(Kind, in.Task)
	ref, err := name.ParseReference(out, name.WeakValidation)
	if err != nil {
		return nil, fmt.Errorf("tool image name %q is not a valid reference: %w", out, err)
	}
	if err := env.Store().Write(ctx, ref, img); err != nil {
		return nil, err
	}
	if in.Push {
		if _, err := env.Push(ctx, out, img, sref.Context().Name()); err != nil {
			return nil, err
		}
	}
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	return &pipeline.Built{Name: out, Digest: d, How: "assembled (sandbox and the example layer)", Took: time.Since(start)}, nil
}
