package commands

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/release"
	"github.com/42-b3yond-6ug/ssebench/task"
	"github.com/42-b3yond-6ug/ssebench/task/importer/govulndb"
)

func newCmdDataset(g *options.Global) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dataset",
		Short: "Validate, verify, lock and publish datasets",
		Example: `  ssebench dataset validate datasets/examples
  ssebench dataset manifest --check datasets/examples
  ssebench dataset verify datasets/examples
  ssebench dataset lock datasets/examples
  ssebench dataset publish datasets/examples --registry localhost:5000/ssebench
  ssebench dataset import govulndb GO-2023-1989 --into datasets/govuln`,
	}
	cmd.AddCommand(newCmdDatasetImport(g), newCmdDatasetManifest(), newCmdDatasetValidate(), newCmdDatasetVerify(g), newCmdDatasetLock(g), newCmdDatasetPublish(g))
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
	fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", what, units.Plural(len(ps), "problem"))
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
			// Streamed: a task's files are hashed and written one by
			// one, never held together.
			n, err := d.WriteManifestFile()
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s/manifest.json (%s)\n", dir, units.Plural(n, "task"))
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
			for _, w := range d.Warnings() {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ok %s: %s\n", args[0], units.Plural(len(d.Tasks), "task"))
			return nil
		},
	}
	addJSONFlag(cmd, &asJSON)
	return cmd
}

func newCmdDatasetImport(g *options.Global) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import SOURCE",
		Short: "Make task folders from a vulnerability database",
		Long: `Make task folders from a database of real, fixed vulnerabilities. The one
source today is govulndb, the Go vulnerability database (docs/tasks.md,
"Importing from the Go vulnerability database").`,
		Example: `  ssebench dataset import govulndb GO-2022-1144 --into datasets/govuln
  ssebench dataset import govulndb --keep-verified --reasons verify.txt --into datasets/govuln`,
	}
	cmd.AddCommand(newCmdDatasetImportGovulndb(g))
	return groupCommand(cmd)
}

// rewriteManifest writes DIR/manifest.json from the folders, so that
// verify and lock see the tasks just written or dropped.
func rewriteManifest(cmd *cobra.Command, dir string) error {
	d, err := task.LoadDataset(dir)
	if err != nil {
		return printProblems(cmd, err, dir)
	}
	_, err = d.WriteManifestFile()
	return err
}

// keepVerified keeps the tasks of dir that the local store's record says
// verified with their folders as they are, and drops the others.
func keepVerified(cmd *cobra.Command, g *options.Global, dir string, reasonFiles []string) error {
	ds, err := task.LoadDataset(dir)
	if err != nil {
		return printProblems(cmd, err, dir)
	}
	st, err := g.OpenStore()
	if err != nil {
		return err
	}
	defer st.Close()
	rec, err := release.StoredRecord(st.Dir(), ds)
	if err != nil {
		return err
	}
	kept, dropped, err := govulndb.KeepVerified(govulndb.KeepOptions{Dataset: ds, Verified: rec.Verified, ReasonFiles: reasonFiles})
	if err != nil {
		return err
	}
	if err := rewriteManifest(cmd, dir); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s kept, %d dropped (reasons in %s/%s)\n", units.Plural(kept, "task"), dropped, dir, govulndb.TableFile)
	return nil
}

func newCmdDatasetImportGovulndb(g *options.Global) *cobra.Command {
	var into, dbVersion string
	var all, keep bool
	var reasons []string
	cmd := &cobra.Command{
		Use:   "govulndb [GO-ID...|--all] --into DIR",
		Short: "Make a task of each Go vulnerability database report that can make a sound one",
		Long: `Read the reports of the Go vulnerability database (the module
golang.org/x/vulndb at a pinned version, fetched through the Go module proxy
and checked against the checksum database, as "go mod download" does: it
honours GOPROXY, GONOSUMDB and GOFLAGS) and write a task folder DIR/<id> for
each report that can make a sound task: a Dockerfile that fetches the module
at the report's vulnerable_at and vendors its dependencies when the case
image is built, the fix (the non-test changes of the affected packages up to
the fixed version) as files.patch and its tests as files.future_test.

A report that cannot make a task (the standard library, no test in the fix,
a fix too large, cgo, no go.mod, a Go newer than the base image's) is
skipped with the reason. Every report's line goes to DIR/import.tsv. Then
run "ssebench dataset verify DIR --write-tests" to list the hidden tests,
and "ssebench dataset verify DIR --reruns 3" to keep the sound tasks.`,
		Example: `  ssebench dataset import govulndb GO-2023-1989 GO-2024-2937 --into datasets/govuln
  ssebench dataset import govulndb --all --into /tmp/govuln-all`,
		Args: cobra.MatchAll(cobra.ArbitraryArgs, func(cmd *cobra.Command, args []string) error {
			if keep {
				if len(args) > 0 || all {
					return errors.New("--keep-verified takes no reports: it keeps or drops what DIR holds")
				}
				return nil
			}
			if all == (len(args) > 0) {
				return errors.New("name the reports to import (GO-YYYY-NNNN ...) or pass --all, not both")
			}
			return nil
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			if into == "" {
				return errors.New("--into DIR is required: the dataset folder to write the tasks to")
			}
			if keep {
				return keepVerified(cmd, g, into, reasons)
			}
			rows, err := govulndb.Import(cmd.Context(), govulndb.Options{
				IDs: args, All: all, Into: into, DBVersion: dbVersion, Log: cmd.ErrOrStderr(),
			})
			if err != nil {
				return err
			}
			imported := govulndb.WriteRows(cmd.OutOrStdout(), rows)
			if err := rewriteManifest(cmd, into); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%d of %s imported into %s (table: %s/%s)\n", imported, units.Plural(len(rows), "report"), into, into, govulndb.TableFile)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&into, "into", "", "the dataset folder to write the task folders to")
	f.BoolVar(&all, "all", false, "import every report of the database")
	f.BoolVar(&keep, "keep-verified", false, "keep the tasks of DIR that verified (the local store's record of \"dataset verify\") and drop the others, with the reasons in DIR/import.tsv")
	f.StringSliceVar(&reasons, "reasons", nil, "with --keep-verified: files holding the tables \"dataset verify\" printed, whose failed checks become the reasons")
	f.StringVar(&dbVersion, "db-version", govulndb.DBVersion, "the version of golang.org/x/vulndb to read")
	return cmd
}
