package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/assemble/agentimage"
)

// VerifyAgentImage checks the tool image tool (toolRef) against the
// contract, and what the agent image agent adds to it against the agent
// policy: the tool image is what grades; the agent image is it without
// the answers plus the agent's layers. A refusal is a failure, not an
// error.
func VerifyAgentImage(ctx context.Context, tool v1.Image, toolRef, source string, agent v1.Image) ([]assemble.Failure, error) {
	fails, err := assemble.Verify(ctx, tool, source)
	if err != nil {
		return nil, fmt.Errorf("verifying the tool image %s: %w", toolRef, err)
	}
	pol, err := agentimage.NewPolicy(tool)
	if err != nil {
		return nil, err
	}
	// A sandbox agent image is the tool image without the answers (its
	// blind layer) plus the agent's layers; a sidecar agent image is
	// tool-sidecar-agent, which has none, plus the agent's.
	under := tool
	if cf, err := tool.ConfigFile(); err != nil {
		return nil, err
	} else if !slices.Equal(cf.Config.Entrypoint, assemble.SidecarAgentEntrypoint) {
		if under, err = agentimage.Blind(tool); err != nil {
			return nil, err
		}
	}
	_, err = agentimage.CheckAdded(ctx, under, agent, pol)
	var refused *agentimage.RefusedError
	switch {
	case err == nil:
		return fails, nil
	case errors.As(err, &refused):
		return append(fails, assemble.Failure{Check: "agent policy", Path: refused.Entry, Msg: err.Error(), Rule: agentRule}), nil
	case errors.Is(err, agentimage.ErrNotOnBase):
		return append(fails, assemble.Failure{Check: "agent policy", Msg: err.Error(), Rule: agentRule}), nil
	}
	return nil, err
}

// agentRule is the rule the agent policy enforces.
const agentRule = "docs/agents.md: an agent image is its tool image plus layers that touch nothing the grader reads or runs"
