package commands

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/task"
)

func newCmdDataset(g *options.Global) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dataset",
		Short: "Validate, verify, lock and publish datasets",
		Example: `  ssebench dataset validate datasets/examples
  ssebench dataset manifest --check datasets/examples
  ssebench dataset verify datasets/examples
  ssebench dataset lock datasets/examples
  ssebench dataset publish datasets/examples --registry localhost:5000/ssebench`,
	}
	cmd.AddCommand(newCmdDatasetManifest(), newCmdDatasetValidate(), newCmdDatasetVerify(g), newCmdDatasetLock(g), newCmdDatasetPublish(g))
	cmd.AddCommand(newCmdDatasetTools(g)) // the CI job of a runtime bump (docs/ci.md)
	return groupCommand(cmd)
}

// errProblems makes a dataset command exit 1 after it printed the problems.
var errProblems = errors.New("the dataset has problems")

// printProblems prints every problem on its own line and returns an error
// summing them up, or nil when there is none.
func printProblems(cmd *cobra.Command, err error, what string) error {
	var ps task.Problems
	if !errors.As(err, &ps) {
		return err
	}
	for _, p := range ps {
		fmt.Fprintln(cmd.OutOrStdout(), p.String())
	}
	cmd.SilenceErrors = true
	fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d problem(s)\n", what, len(ps))
	return errProblems
}

func newCmdDatasetManifest() *cobra.Command {
	var check bool
	cmd := &cobra.Command{
		Use:   "manifest DIR [--check]",
		Short: "Write DIR/manifest.json from the dataset's tasks, or check it",
		Long: `Write DIR/manifest.json (SPEC.md section 11) from dataset.yaml and every
task folder: id, language, project, repository, base, image, arch, checks,
files and metadata, tasks sorted by id. With --check, write nothing and
report every difference from the file on disk (exit 1 if any).`,
		Example: `  ssebench dataset manifest datasets/examples
  ssebench dataset manifest --check datasets/examples`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if check {
				ps, err := task.CheckManifest(dir)
				if err != nil {
					return printProblems(cmd, err, dir)
				}
				if len(ps) > 0 {
					return printProblems(cmd, ps, dir+"/manifest.json is out of date (run `ssebench dataset manifest "+dir+"`)")
				}
				fmt.Fprintf(cmd.OutOrStdout(), "ok %s/manifest.json\n", dir)
				return nil
			}
			d, err := task.LoadDataset(dir)
			if err != nil {
				return printProblems(cmd, err, dir)
			}
			m, err := d.Manifest()
			if err != nil {
				return err
			}
			if err := task.WriteManifest(dir, m); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s/manifest.json (%d tasks)\n", dir, len(m.Tasks))
			return nil
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "check manifest.json instead of writing it")
	return cmd
}

func newCmdDatasetValidate() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate DIR",
		Short: "Check every task of a dataset and report every problem at once",
		Long: `Check dataset.yaml and every task folder: config.yaml (keys, id, source,
paths), the Dockerfile (ARG SSEBENCH_REGISTRY before the first FROM, the last
FROM pinned, sse/ copied to /ssebench) and the files the config names. Every
problem is printed on its own line; exit 1 if there is any. A task whose
config lists no tests (tests.fail_to_pass, tests.pass_to_pass) is valid, but
a warning says that its test checks are judged by exit code only.`,
		Example: `  ssebench dataset validate datasets/examples`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := task.LoadDataset(args[0])
			if asJSON {
				return validateJSON(cmd, args[0], d, err)
			}
			if err != nil {
				return printProblems(cmd, err, args[0])
			}
			for _, t := range d.Tasks {
				if t.Config == nil {
					continue
				}
				for _, w := range t.Config.Warnings() {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s: %s\n", t.ID, w)
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok %s: %d tasks\n", args[0], len(d.Tasks))
			return nil
		},
	}
	addJSONFlag(cmd, &asJSON)
	return cmd
}
