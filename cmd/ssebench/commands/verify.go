package commands

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
)

// errChecksFailed makes the command exit 1 after it printed the failures.
var errChecksFailed = errors.New("the image does not meet the tool image contract")

func newCmdVerify(g *options.Global) *cobra.Command {
	var source, platform string
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
account. Each finding names the path and the rule of SPEC.md. Prints each
failed check (FAIL) and warning (WARN: a directory early in PATH that model
can write) and exits 1 if any check failed.`,
		Example: `  ssebench verify localhost:5000/ssebench/tool/kvconf-12-afb9ee1:0.1.0-dev
  ssebench verify --source /src/kvconf localhost:5000/ssebench/tool/kvconf-12-afb9ee1:0.1.0-dev`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, done, err := resolve(cmd, g, args[0], platform, false)
			if err != nil {
				return err
			}
			defer done()
			img := res.Image
			fails, err := assemble.Verify(cmd.Context(), img, source)
			if err != nil {
				return fmt.Errorf("verifying %s: %w", args[0], err)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				v := verifyJSON(args[0], fails)
				if err := writeJSONTo(out, v); err != nil {
					return err
				}
				if !v.OK {
					cmd.SilenceErrors = true
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d check(s) failed\n", args[0], len(v.Failures))
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
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d check(s) failed\n", args[0], failed)
				return errChecksFailed
			}
			fmt.Fprintf(out, "ok %s\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringVar(&source, "source", "", "SOURCE_DIR (default: what the image's manifest records)")
	cmd.Flags().StringVar(&platform, "platform", "", "platform to pick from an index (default linux/<host arch>)")
	addJSONFlag(cmd, &asJSON)
	return cmd
}
