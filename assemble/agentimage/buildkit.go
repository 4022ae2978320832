package agentimage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/images/buildkit"
	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// Builder runs a Dockerfile build; *buildkit.Client is one. Unit tests put
// a fake in its place.
type Builder interface {
	Build(ctx context.Context, req buildkit.Request) (*buildkit.Result, error)
}

var _ Builder = (*buildkit.Client)(nil)

// BuildRequest is an agent image built by BuildKit.
type BuildRequest struct {
	// AgentDir is the agent folder: the build context, holding the
	// Dockerfile. Required.
	AgentDir string
	// Home is the SSEBench home, the named context "workspace". Required.
	Home string
	// Tool is where buildkitd reads the tool image, the named context
	// "ssebench-agent". Required.
	Tool ToolSource
	// BuildArgs are the --build-arg values.
	BuildArgs map[string]string
	// Platform is the platform to build for, "linux/amd64". The default is
	// the daemon's.
	Platform string
	// NoCache rebuilds every step.
	NoCache bool
	// Time, when set, is the build's SOURCE_DATE_EPOCH: the image's
	// creation time and the time newer copied files are clamped to, as
	// Assemble does with WithTime (see DefaultTime).
	Time time.Time
	// Store and Ref say where the image goes: the local store under Ref.
	// Either these or Push are required.
	Store *store.Store
	Ref   name.Reference
	// Push is a reference buildkitd pushes the image to instead. It
	// cannot be used with Graft: an image buildkitd pushes is not checked.
	Push string
	// Graft, when set, makes the stored image the graft of what the build
	// added onto the real tool image (see Graft): Tool is then the blind
	// image (see Blind), and the build never sees the task's answers.
	Graft *GraftTarget
}

// GraftTarget is where BuildKit's layers go: the real tool image, the
// blind image the build ran on, and the policy they pass.
type GraftTarget struct {
	Tool, Blind v1.Image
	Policy      *Policy
	// OntoTool appends the agent's layers onto Tool rather than Blind:
	// for the sidecar agent runtime, which holds no answer, and whose
	// blind image only hides its MCP server from the agent's build.
	OntoTool bool
	// View is the blind image's merged view when the caller indexed it
	// (for a native assembly, WithLowerView); BuildKit does not use it.
	View *oci.View
}

// ToolSource names the tool image for buildkitd: an image of an OCI image
// layout directory (the local store), or a reference it pulls itself.
type ToolSource struct {
	// Layout is the image in a layout directory, when Dir is set.
	Layout buildkit.LayoutImage
	// Image is a registry reference ("localhost:5000/ssebench/tool/x:1.0.0"),
	// used when Layout.Dir is empty.
	Image string
}

// ToolFromStore returns the ToolSource of the store's entry ref.
func ToolFromStore(s *store.Store, ref name.Reference) (ToolSource, error) {
	desc, err := s.Descriptor(ref)
	if err != nil {
		return ToolSource{}, err
	}
	return ToolSource{Layout: buildkit.LayoutImage{Dir: s.Dir(), Digest: desc.Digest}}, nil
}

// BuildKit builds the agent's Dockerfile with BuildKit, with the tool image
// as the named context ssebench-agent and the SSEBench home as workspace,
// and stores the result under req.Ref (or has buildkitd push it to
// req.Push). It returns the image's manifest digest. Any Dockerfile works,
// RUN included; a failed build is a *buildkit.BuildError.
func BuildKit(ctx context.Context, b Builder, req BuildRequest) (v1.Hash, error) {
	switch {
	case req.AgentDir == "":
		return v1.Hash{}, errors.New("building the agent image: no agent folder")
	case req.Home == "":
		return v1.Hash{}, errors.New("building the agent image: no SSEBench home for the workspace context")
	case req.Tool.Layout.Dir == "" && req.Tool.Image == "":
		return v1.Hash{}, errors.New("building the agent image: no tool image (see agentimage.ToolFromStore)")
	case req.Push == "" && (req.Store == nil || req.Ref == nil):
		return v1.Hash{}, errors.New("building the agent image: say where it goes (Store and Ref, or Push)")
	case req.Push != "" && req.Graft != nil:
		return v1.Hash{}, errors.New("building the agent image: a grafted image is stored, then pushed (Store and Ref, not Push)")
	}
	breq := buildkit.Request{
		Dockerfile:      filepath.Join(req.AgentDir, "Dockerfile"),
		ContextDir:      req.AgentDir,
		Platform:        req.Platform,
		BuildArgs:       req.BuildArgs,
		LocalContexts:   map[string]string{WorkspaceContext: req.Home},
		NoCache:         req.NoCache,
		SourceDateEpoch: req.Time,
		Push:            req.Push,
	}
	if req.Tool.Layout.Dir != "" {
		breq.LayoutContexts = map[string]buildkit.LayoutImage{BaseContext: req.Tool.Layout}
	} else {
		breq.ImageContexts = map[string]string{BaseContext: req.Tool.Image}
	}
	res, err := b.Build(ctx, breq)
	if err != nil {
		return v1.Hash{}, err
	}
	defer res.Close()
	if req.Push != "" {
		return res.Digest, nil
	}
	img, err := res.Image()
	if err != nil {
		return v1.Hash{}, err
	}
	if err := checkBuilt(img); err != nil {
		return v1.Hash{}, &Error{Dockerfile: breq.Dockerfile, Err: err}
	}
	if g := req.Graft; g != nil {
		if img, err = g.Graft(ctx, img); err != nil {
			return v1.Hash{}, &Error{Dockerfile: breq.Dockerfile, Err: err}
		}
	}
	if err := req.Store.Write(ctx, req.Ref, img); err != nil {
		return v1.Hash{}, err
	}
	dig, err := img.Digest()
	if err != nil {
		return v1.Hash{}, fmt.Errorf("reading the built image's digest: %w", err)
	}
	return dig, nil
}

// checkBuilt is CheckConfig for an image BuildKit built, whose tool
// image's config is not at hand: its ENV must hold no run-only variable (a
// tool image has none: Tool drops them, verify reports them). Its
// ENTRYPOINT was checked in the Dockerfile already (checkInstruction): an
// exec-form ENTRYPOINT expands no variable.
func checkBuilt(img v1.Image) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("reading the built image's config: %w", err)
	}
	return CheckConfig(v1.Config{Entrypoint: cf.Config.Entrypoint}, cf.Config)
}
