package pipeline

import (
	"context"
	"fmt"

	"github.com/42-b3yond-6ug/ssebench/assemble/agentimage"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// checkPrebuilt holds a --prebuilt agent image to the policy its layers
// would have met had they been grafted here (docs/agents.md): the image
// must be its tool image plus layers of the agent's, and those layers and
// its config pass the policy. The image is then run by the digest that
// was checked, so that a tag moved in between does not run unchecked. A
// refusal is one line, naming the layer, the entry and the rule.
func (e *Env) checkPrebuilt(ctx context.Context, r *runState) error {
	baseName := e.Names.Tool(r.req.Task)
	if r.sidecar {
		baseName = e.Names.SidecarAgentRuntime()
	}
	rr, err := e.Resolver(r.plat)
	if err != nil {
		return err
	}
	agentRes, err := rr.Resolve(ctx, r.agentName)
	if err != nil {
		return fmt.Errorf("the prebuilt image %s: %w", r.agentName, err)
	}
	baseRes, err := rr.Resolve(ctx, baseName)
	if err != nil {
		return fmt.Errorf("checking the prebuilt image %s needs the image it was built on, %s: %w", r.agentName, baseName, err)
	}
	// The policy holds the agent's layers to the tool image under them, so
	// that image must be one this machine believes: made here, or pulled
	// from a trusted registry or signed (docs/registries.md). Otherwise
	// whoever can push the tag writes the grader the agent is checked
	// against, and the check proves nothing.
	if baseRes.PulledFrom != "" {
		acc, err := remote.New(e.RegistryOptions...)
		if err != nil {
			return err
		}
		if why := e.untrusted(ctx, acc, baseRes); why != nil {
			return fmt.Errorf("the prebuilt image %s is built on %s from %s, which cannot be believed: %v; or build the tool image here (drop --prebuilt)", r.agentName, baseName, baseRes.PulledFrom, why)
		}
	}
	pol, err := agentimage.NewPolicy(baseRes.Image)
	if err != nil {
		return err
	}
	// A sandbox agent image is its tool image without the answers (the
	// blind layer) plus the agent's layers; the sidecar agent runtime
	// holds no answer to hide.
	under := baseRes.Image
	if !r.sidecar {
		if under, err = agentimage.Blind(baseRes.Image); err != nil {
			return err
		}
	}
	if _, err := agentimage.CheckAdded(ctx, under, agentRes.Image, pol); err != nil {
		return fmt.Errorf("the prebuilt image %s breaks the agent policy: %w", r.agentName, err)
	}
	d, err := agentRes.Image.Digest()
	if err != nil {
		return err
	}
	r.agentName = agentRes.Ref.Context().Name() + "@" + d.String()
	if !r.sidecar {
		// The task container runs the tool image checked here.
		td, err := baseRes.Image.Digest()
		if err != nil {
			return err
		}
		r.toolName = baseRes.Ref.Context().Name() + "@" + td.String()
	}
	e.logf("prebuilt %s: its agent layers pass the policy on %s", r.agentName, baseName)
	return nil
}
