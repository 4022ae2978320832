package commands

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/release"
	"github.com/42-b3yond-6ug/ssebench/task"
)

type verifyDatasetOptions struct {
	// KeepImages is --keep-images.
	KeepImages    options.KeepImages
	Tasks         []string
	Jobs, Timeout int
	RunsDir       string
	Runtime       string
	WriteTests    bool
	Reruns        int
}

func newCmdDatasetVerify(g *options.Global) *cobra.Command {
	o := &verifyDatasetOptions{}
	cmd := &cobra.Command{
		Use:   "verify DIR [--tasks a,b] [--jobs N] [--runs-dir D]",
		Short: "Grade every task with its reference patch and unchanged, and report what is not sound",
		Long: `Run every task of the dataset twice, as an evaluation: with the reference
agent (agents/reference), which applies the task's own files.patch and must
pass every check the task's manifest entry lists, and with the dummy agent,
which changes nothing: the buggy tree must build, pass its function tests,
and still trigger every proof of concept, each on its own. A task folder
with problems fails its "validate" check; the other tasks still run.

A table of every check is printed; the exit status is 1 when any failed,
with an error naming each failed task and check. The case images of the
tasks that passed are recorded with the local store, for "dataset lock"
and "dataset publish". The runs are kept in --runs-dir/verify-<id>/. With --reruns N the whole
verification runs N times, and a task is recorded only when every run
verified it: a flaky test fails it, with the run that failed named.

The hidden tests are judged by name (docs/tasks.md): from the two runs'
test reports, a test that fails on the buggy tree with the hidden tests and
passes with the fix belongs in tests.fail_to_pass, one that passes in every
run in tests.pass_to_pass. Verify fails a task whose lists differ, one line
per test, and warns about a task without lists (judged by exit code only).
With --write-tests it writes the lists into each task's sse/config.yaml
instead, keeping the rest of the file, and records nothing as verified:
run verify again, which builds the case images with the new config.`,
		Example: `  ssebench dataset verify datasets/examples
  ssebench dataset verify datasets/examples --tasks kvconf-12-afb9ee1 --jobs 2`,
		Args: options.KeepImagesArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error { return runDatasetVerify(cmd, g, o, args[0]) },
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.Tasks, "tasks", nil, "only these task ids (default: every task folder)")
	f.IntVar(&o.Jobs, "jobs", 0, "runs at once (default: one per core, at most one per 2 GiB of available memory)")
	f.StringVar(&o.RunsDir, "runs-dir", "runs", "where the verification's folder verify-<id>/ goes")
	f.Var(options.Seconds(&o.Timeout), "timeout", "how long each agent may run: a duration (90m, 1h30m) or seconds (default 1h)")
	f.StringVar(&o.Runtime, "runtime", "", "runtime image (default $SSEBENCH_RUNTIME_IMAGE, else REGISTRY/runtime:VERSION)")
	f.IntVar(&o.Reruns, "reruns", 1, "run the verification N times and keep a task only when every run verified it (catches flaky tests; 3 for a dataset's verify)")
	options.AddKeepImagesFlag(f, &o.KeepImages)
	f.BoolVar(&o.WriteTests, "write-tests", false, "write each task's tests.fail_to_pass and tests.pass_to_pass, as the runs give them, into its sse/config.yaml instead of checking them")
	return cmd
}

func runDatasetVerify(cmd *cobra.Command, g *options.Global, o *verifyDatasetOptions, dir string) error {
	ds, _, err := task.LoadDatasetTolerant(dir)
	if err != nil {
		return printProblems(cmd, err, dir)
	}
	e, done, err := newEnv(g, cmd, o.Runtime)
	if err != nil {
		return err
	}
	defer done()
	e.Log = nil // the builds' lines would drown the runs'
	backend, err := release.ContainerdBackend(e, dir, pipeline.RunRequest{
		Timeout: o.Timeout, ContainerdAddr: g.ContainerdAddr, KeepImages: o.KeepImages.Keep, ImageBudget: o.KeepImages.Budget,
	})
	if err != nil {
		return err
	}
	jobs, _ := evaluate.DefaultJobs()
	if cmd.Flag("jobs").Changed {
		jobs = o.Jobs
	}
	rep, err := release.Verify(cmd.Context(), backend, dir, release.VerifyOptions{
		Tasks: evaluate.SplitList(o.Tasks), RunsDir: o.RunsDir, WriteTests: o.WriteTests, Reruns: o.Reruns,
		Eval: []evaluate.Option{evaluate.WithJobs(jobs), evaluate.WithProgress(release.NewProgress(cmd.ErrOrStderr()))},
	})
	if err != nil {
		return err
	}
	rep.WriteTable(cmd.OutOrStdout())
	for _, w := range rep.Warnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", w)
	}
	if err := release.Remember(e.Store.Dir(), ds.Name, ds.Version, rep); err != nil {
		return err
	}
	return rep.WriteEnd(cmd.ErrOrStderr())
}

func newCmdDatasetLock(g *options.Global) *cobra.Command {
	var check bool
	var revision string
	cmd := &cobra.Command{
		Use:   "lock DIR [--check] [--revision REV]",
		Short: "Write DIR/images.lock.json from the case images that verified, or check it",
		Long: `Write DIR/images.lock.json (SPEC.md section 11): for every task whose case
image verified ("ssebench dataset verify") with the task folder as it is now,
its digest, files digest and revision (--revision, else the commit of the git
checkout holding DIR; an entry that did not change keeps its revision). Tasks
that did not verify, or changed since, are listed and left out.

With --check, write nothing and print every difference: a task missing,
pinned to another digest, or pinned from other files (stale); exit 1 if any.`,
		Example: `  ssebench dataset lock datasets/examples
  ssebench dataset lock --check datasets/examples`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDatasetLock(cmd, g, args[0], revision, check)
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "check images.lock.json instead of writing it")
	cmd.Flags().StringVar(&revision, "revision", "", "the commit the images are built from (default: git rev-parse HEAD in DIR)")
	return cmd
}

func runDatasetLock(cmd *cobra.Command, g *options.Global, dir, revision string, check bool) error {
	ds, broken, err := task.LoadDatasetTolerant(dir)
	if err != nil {
		return printProblems(cmd, err, dir)
	}
	s, err := g.OpenStore()
	if err != nil {
		return err
	}
	defer s.Close()
	u, err := release.NewLockUpdate(cmd.Context(), dir, ds, broken, s.Dir(), revision, check)
	if err != nil {
		return err
	}
	if check {
		if line := u.WriteCheck(cmd.OutOrStdout()); line != "" {
			cmd.SilenceErrors = true
			fmt.Fprintln(cmd.ErrOrStderr(), line)
			return errProblems
		}
		return nil
	}
	if err := u.Write(); err != nil {
		return err
	}
	for _, w := range u.Unverified {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: not locked: %s\n", w)
	}
	fmt.Fprintln(cmd.OutOrStdout(), u)
	return nil
}

func newCmdDatasetPublish(g *options.Global) *cobra.Command {
	var revision string
	cmd := &cobra.Command{
		Use:   "publish DIR --registry PREFIX [--revision REV]",
		Short: "Push the verified case images and the catalog, and merge their digests into the lock",
		Long: `Publish the dataset under PREFIX (--registry, required): every task's case
image that verified is pushed as PREFIX/case/<dataset>/<task>:<version>-<rev>
(the first 7 characters of --revision, default the commit of the git checkout
holding DIR), which is refused when it already names another image, then
tagged <version>, which moves. An image whose store digest differs from the
one that verified, or whose folder changed since, is refused, and nothing is
pushed. Published tags are never deleted or rewritten.

The digests are merged into DIR/images.lock.json, and manifest.json and the
lock are pushed as the catalog artifact PREFIX/catalog/<dataset>:<version>:
"ssebench tasks list --catalog oci://PREFIX/catalog/<dataset>:<version>"
reads it. A mirror does not carry it unless named: add
PREFIX/catalog/<dataset>:<version> to "ssebench mirror"'s arguments.`,
		Example: `  ssebench dataset publish datasets/examples --registry localhost:5000/ssebench
  ssebench dataset publish datasets/examples --registry localhost:5000/ssebench --revision 0123abc`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if !cmd.Flag("registry").Changed {
				return errors.New("--registry is required: name the prefix to publish under, e.g. --registry localhost:5000/ssebench")
			}
			names, err := g.Names()
			if err != nil {
				return err
			}
			rev, err := release.PublishRevision(cmd.Context(), dir, revision)
			if err != nil {
				return err
			}
			ds, err := task.LoadDataset(dir)
			if err != nil {
				return printProblems(cmd, err, dir)
			}
			s, ropts, err := g.StoreOptions(nil)
			if err != nil {
				return err
			}
			defer s.Close()
			rec, err := release.StoredRecord(s.Dir(), ds)
			if err != nil {
				return err
			}
			lock, pub, err := release.Publish(cmd.Context(), dir, rec, release.PublishOptions{
				Registry: names.Registry, Revision: rev, Store: s, Remote: ropts, Log: cmd.ErrOrStderr(),
			})
			if err != nil {
				return err
			}
			for _, p := range pub {
				fmt.Fprintf(cmd.OutOrStdout(), "%s@%s\n", p.Immutable, p.Digest)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n", release.CatalogRef(names.Registry, ds.Name, ds.Version))
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s (%s pinned)\n", filepath.Join(dir, task.LockFile), units.Plural(len(lock.Images), "task"))
			return nil
		},
	}
	cmd.Flags().StringVar(&revision, "revision", "", "the commit the images are built from (default: git rev-parse HEAD in DIR)")
	return cmd
}

type datasetToolsOptions struct {
	Tasks            []string
	CaseTag, Runtime string
	Platform         string
	Push, JSON       bool
}

func newCmdDatasetTools(g *options.Global) *cobra.Command {
	o := &datasetToolsOptions{}
	cmd := &cobra.Command{
		Use:   "tools DIR [--push] [--tasks a,b] [--case-tag TAG] [--runtime REF]",
		Short: "Assemble the tool image of every task of a dataset; with --push, push and sign only those that changed",
		Long: `Assemble the tool image of every task of the dataset (as "assemble tool"
does) from its published case image, REGISTRY/case/<dataset>/<task>:<TAG>
(--case-tag, default the dataset's version, as "dataset publish" tags it),
and the runtime image (--runtime, else SSEBENCH_RUNTIME_IMAGE, else
REGISTRY/runtime:VERSION). A tool image pushed before and trusted (signed
with --sign-key's key, or --verify-key, or from a --trust-registry) gives
its system and source layers, so no case layer is read.

With --push, a tool image the registry already holds under its tag, with a
signature that --sign-key's key verifies when one is set, is left alone:
nothing of it is pushed or signed again ("unchanged"). The others are
pushed, moving only the blobs the registry lacks (the case and runtime
layers are mounted from their repositories), and signed with --sign-key;
a task's first tool image also publishes the facts of the case layers it
read, as "assemble tool --push" does. This is the CI job of a runtime bump
(docs/ci.md).

One line per task, then the figures: tool images rebuilt and unchanged,
bytes uploaded, mounted and skipped, and the time taken.`,
		Example: `  ssebench dataset tools datasets/examples --registry localhost:5000/ssebench --push --sign-key ci-sign.pem
  ssebench dataset tools datasets/examples --runtime localhost:5000/ssebench/runtime:0.2.0 --push --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDatasetTools(cmd, g, o, args[0])
		},
	}
	f := cmd.Flags()
	addJSONFlag(cmd, &o.JSON)
	f.StringSliceVar(&o.Tasks, "tasks", nil, "only these task ids (default: every task of the dataset)")
	f.StringVar(&o.CaseTag, "case-tag", "", "tag of the case images (default: the dataset's version, from dataset.yaml)")
	f.StringVar(&o.Runtime, "runtime", "", "runtime image (default $SSEBENCH_RUNTIME_IMAGE, else REGISTRY/runtime:VERSION)")
	f.StringVar(&o.Platform, "platform", "", "platform to assemble for (default: each case image's)")
	f.BoolVar(&o.Push, "push", false, "push (and, with --sign-key, sign) the tool images the registry does not already hold")
	return cmd
}

func runDatasetTools(cmd *cobra.Command, g *options.Global, o *datasetToolsOptions, dir string) error {
	start := time.Now()
	ds, err := task.LoadDataset(dir)
	if err != nil {
		return printProblems(cmd, err, dir)
	}
	p, err := options.ParsePlatform(o.Platform)
	if err != nil {
		return err
	}
	e, done, err := newEnv(g, cmd, o.Runtime)
	if err != nil {
		return err
	}
	defer done()
	acc, err := g.Access()
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	opts := []release.ToolsOption{release.WithTasks(evaluate.SplitList(o.Tasks)), release.WithCaseTag(o.CaseTag), release.WithPlatform(p)}
	if o.Push {
		opts = append(opts, release.WithPush(acc))
	}
	if !o.JSON {
		opts = append(opts, release.WithToolProgress(func(img release.ToolImage) {
			fmt.Fprintf(w, "%s@%s %s\n", img.Name, img.Digest, img.Result)
		}))
	}
	rep, err := release.Tools(cmd.Context(), e, ds, opts...)
	if err != nil {
		return err
	}
	if o.JSON {
		return writeJSONTo(w, rep.Summary(ds.Name, time.Since(start)))
	}
	rep.WriteFigures(w, o.Push, time.Since(start))
	return nil
}
