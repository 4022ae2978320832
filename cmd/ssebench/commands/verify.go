package commands

import (
	"errors"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
)

// errChecksFailed makes the command exit 1 after it printed the failures.
var errChecksFailed = errors.New("the image does not meet the tool image contract")

func newCmdVerify(g *options.Global) *cobra.Command {
	var source, platform, tool string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify REF",
		Short: "Check a tool image against the contract without running it",
		Long: `Check a tool image against SPEC.md sections 4 and 12 without running it:
modes and owners of /ssebench, /ssebench-repo, /var/lib/ssebench and
/home/model; the model and sse-runner accounts; no other-writable entry
outside sticky directories; SOURCE_DIR owned by 1000:1000 with a one-commit
repository and no other .git directory; the entrypoint; no run-only variable
(SSE_*, TIMEOUT, SOURCE_DIR) in ENV; no symlinked account file or task
directory; outside SOURCE_DIR nothing owned by model or a deleted user, no
setuid program a system does not need, no second root, no passwordless
account. Each finding names the path and the rule of SPEC.md.

With --tool TOOL_REF, REF is an agent image (a --prebuilt one, say) built
on TOOL_REF: TOOL_REF, which grades, is checked against the contract; REF's
first layers must be TOOL_REF's and its blind layer (the answers whited
out), and the layers and config it adds must pass the agent policy of
docs/agents.md (nothing under
/ssebench or the runtime's paths, no account file, setuid file, device or
hard link out of the layer, no replaced or shadowed command, ENV on the
allow-list, USER the tool's or model). Prints each
failed check (FAIL) and warning (WARN: a directory early in PATH that model
can write) and exits 1 if any check failed.`,
		Example: `  ssebench verify localhost:5000/ssebench/tool/kvconf-12-afb9ee1:0.1.0-dev
  ssebench verify --source /src/kvconf localhost:5000/ssebench/tool/kvconf-12-afb9ee1:0.1.0-dev
  ssebench verify --tool localhost:5000/ssebench/tool/kvconf-12-afb9ee1:0.1.0-dev localhost:5000/ssebench/agent-x/kvconf-12-afb9ee1:1.0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, done, err := resolve(cmd, g, args[0], platform, false)
			if err != nil {
				return err
			}
			defer done()
			fails, err := verifyImage(cmd, g, res.Image, tool, platform, source)
			if err != nil {
				return fmt.Errorf("verifying %s: %w", args[0], err)
			}
			return printVerify(cmd, args[0], fails, asJSON)
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "SOURCE_DIR (default: what the image's manifest records)")
	cmd.Flags().StringVar(&platform, "platform", "", "platform to pick from an index (default linux/<host arch>)")
	cmd.Flags().StringVar(&tool, "tool", "", "REF is an agent image built on this tool image: check its agent layers and config against the agent policy")
	addJSONFlag(cmd, &asJSON)
	return cmd
}

// verifyImage checks img against the contract or, when tool names its
// tool image, as an agent image built on it.
func verifyImage(cmd *cobra.Command, g *options.Global, img v1.Image, tool, platform, source string) ([]assemble.Failure, error) {
	if tool == "" {
		return assemble.Verify(cmd.Context(), img, source)
	}
	res, done, err := resolve(cmd, g, tool, platform, false)
	if err != nil {
		return nil, err
	}
	defer done()
	return pipeline.VerifyAgentImage(cmd.Context(), res.Image, tool, source, img)
}

// printVerify prints verify's findings of ref (or their JSON), and fails
// when a check failed.
func printVerify(cmd *cobra.Command, ref string, fails []assemble.Failure, asJSON bool) error {
	out := cmd.OutOrStdout()
	if asJSON {
		v := assemble.NewVerifyReport(ref, fails)
		if err := writeJSONTo(out, v); err != nil {
			return err
		}
		if !v.OK {
			cmd.SilenceErrors = true
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s failed\n", ref, units.Plural(len(v.Failures), "check"))
			return errChecksFailed
		}
		return nil
	}
	failed := 0
	for _, f := range fails {
		if f.Warning {
			fmt.Fprintf(out, "WARN %s\n", f)
			continue
		}
		failed++
		fmt.Fprintf(out, "FAIL %s\n", f)
	}
	if failed > 0 {
		cmd.SilenceErrors = true
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s failed\n", ref, units.Plural(failed, "check"))
		return errChecksFailed
	}
	fmt.Fprintf(out, "ok %s\n", ref)
	return nil
}
