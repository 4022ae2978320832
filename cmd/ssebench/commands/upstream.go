package commands

import (
	"context"
	"path/filepath"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/gateway"
)

// checkUpstream refuses, before any image is made, a run whose model
// upstream does not answer (gateway.ProbeUpstream); modelsDir defaults to
// the home's models/.
func checkUpstream(ctx context.Context, g *options.Global, home, model, modelFile, modelsDir string) error {
	if modelsDir == "" {
		modelsDir = filepath.Join(home, "models")
	}
	return gateway.ProbeUpstream(ctx, model, modelFile, modelsDir, g.Lookup)
}
