package agentimage

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
)

// ErrBypassesEntrypoint marks an agent image whose config would take the
// run away from the tool image's entrypoint: another ENTRYPOINT, or an ENV
// that sets a variable only the run may set (SPEC.md section 16). Match it
// with errors.Is.
var ErrBypassesEntrypoint = errors.New("the runtime's entrypoint must stay in charge")

// CheckConfig checks an agent image's config against the tool image's it
// was built on: the ENTRYPOINT is the tool image's (optionally followed by
// "--"), and no variable the runtime reads (contract.RunOnly) is set by the
// agent. The run sets those; an agent image that sets SSE_RUNNER_USER=root
// or replaces the entrypoint would run its command as root, ungraded.
func CheckConfig(tool, agent v1.Config) error {
	ep := agent.Entrypoint
	if !slices.Equal(ep, tool.Entrypoint) && !(len(tool.Entrypoint) > 0 && tool.Entrypoint[len(tool.Entrypoint)-1] != "--" && slices.Equal(ep, append(slices.Clone(tool.Entrypoint), "--"))) {
		return fmt.Errorf("ENTRYPOINT is %q, want the tool image's %q: the agent's command goes in CMD: %w", ep, tool.Entrypoint, ErrBypassesEntrypoint)
	}
	had := map[string]string{}
	for _, kv := range tool.Env {
		k, v, _ := strings.Cut(kv, "=")
		had[k] = v
	}
	for _, kv := range agent.Env {
		k, v, _ := strings.Cut(kv, "=")
		if old, ok := had[k]; contract.RunOnly(k) && (!ok || old != v) {
			return fmt.Errorf("ENV %s: only the run sets %s: remove it from the agent's Dockerfile: %w", k, k, ErrBypassesEntrypoint)
		}
	}
	return nil
}

// allowedEntrypoints are the ENTRYPOINTs an agent Dockerfile may write:
// the tool image's, with "--" before the CMD, or the sidecar agent
// runtime's (SPEC.md section 7).
var allowedEntrypoints = [][]string{
	{runtimebin.Entrypoint},
	{runtimebin.Entrypoint, "--"},
	{runtimebin.Entrypoint, "--mode", "sidecar", "--"},
}

// checkInstruction refuses, before anything is built, the ENTRYPOINT and
// ENV instructions CheckConfig would refuse once their values are known:
// this is what stops an image BuildKit pushes itself (BuildRequest.Push).
func checkInstruction(in *instruction) error {
	switch in.cmd {
	case "entrypoint":
		args := commandLine(in)
		if !in.json || !slices.ContainsFunc(allowedEntrypoints, func(ep []string) bool { return slices.Equal(ep, args) }) {
			return fmt.Errorf("ENTRYPOINT %s: the tool image's entrypoint (%s) runs the agent's CMD: %w", strings.Join(args, " "), runtimebin.Entrypoint, ErrBypassesEntrypoint)
		}
	case "env":
		kvs, err := keyValues(in)
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			if contract.RunOnly(kv[0]) {
				return fmt.Errorf("ENV %s: only the run sets %s: remove it from the agent's Dockerfile: %w", kv[0], kv[0], ErrBypassesEntrypoint)
			}
		}
	}
	return nil
}
