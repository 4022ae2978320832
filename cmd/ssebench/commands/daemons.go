package commands

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
)

// daemonNeeds says which daemons a command will use.
type daemonNeeds struct{ Containerd, BuildKit bool }

// checkDaemons is pipeline.CheckDaemons at the addresses of the flags.
func checkDaemons(g *options.Global, command string, need daemonNeeds) error {
	return pipeline.CheckDaemons(command, pipeline.Daemons{Containerd: need.Containerd, BuildKit: need.BuildKit,
		ContainerdAddr: g.ContainerdAddr, BuildKitAddr: g.BuildKitAddr})
}

// containerdBackend says whether the command runs its containers in
// containerd: not with --backend kubernetes (or SSEBENCH_BACKEND).
func containerdBackend(cmd *cobra.Command, g *options.Global, flag string) bool {
	name := flag
	if f := cmd.Flag("backend"); f == nil || !f.Changed {
		name = strings.TrimSpace(g.Lookup(pipeline.BackendEnv))
	}
	b, err := pipeline.ParseBackend(name)
	return err != nil || b != pipeline.BackendKubernetes
}
