package commands

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/evaluate/predictions"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/results"
	"github.com/42-b3yond-6ug/ssebench/runner"
	"github.com/42-b3yond-6ug/ssebench/task/catalog"
)

type gradeOptions struct {
	// KeepImages is --keep-images.
	KeepImages                                      options.KeepImages
	Predictions, Dataset, Catalog, RunsDir, Runtime string
	Tasks                                           []string
	Jobs, Timeout, Retries                          int
	JSON                                            bool
	Resources                                       contract.Limits
}

func newCmdGrade(g *options.Global) *cobra.Command {
	o := &gradeOptions{Resources: contract.DefaultLimits}
	cmd := &cobra.Command{
		Use:   "grade --predictions FILE [--dataset DIR | --catalog PATH] [--tasks ...] [--jobs N] [--json]",
		Short: "Grade patches without running an agent: a predictions file as SWE-bench takes it",
		Long: `Grade the patches of a predictions file, as SWE-bench users submit them:
JSON Lines (or one JSON array) of objects with instance_id (a task id),
model_name_or_path (who made the patch) and model_patch (a unified diff).

Each patch is graded by the same grader as an agent's change, into an
evaluation folder like eval's (runs/eval-<id>/, with plan.json, runs/
and the report), the model's name where the agent's name goes: "ssebench
runs ls/show/report" read it. A patch is untrusted input, so it is applied
as an agent would change the source: by agents/prediction, as the model
user, in the agent phase of a run of its own.

One line is printed per prediction. A patch is applied whole, with no fuzz
and no backup files, or not at all. An empty patch is graded on the
unchanged source (FAILED); one that is not a diff or does not apply is
graded there too, with a verdict of its own, NOT APPLIED, in runs ls and
every report; result.json's notes say why. An unknown instance_id (with the
closest task id), a duplicate of an earlier prediction by the same model
and a malformed name are not graded: evaluation.json lists them with the
reason, and so does every report. Exit status: 0 when every prediction
that could be graded was, whatever the grades; 1 otherwise.`,
		Example: `  ssebench grade --predictions preds.jsonl
  ssebench grade --predictions preds.json --dataset datasets/examples --tasks kvconf-12-afb9ee1 --jobs 2
  ssebench grade --predictions preds.jsonl --json > grades.json`,
		Args: options.KeepImagesArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return runGrade(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Predictions, "predictions", "", "predictions file: JSON Lines or a JSON array of {instance_id, model_name_or_path, model_patch} (required)")
	f.StringVar(&o.Dataset, "dataset", "", "dataset folder (default: datasets/examples under the home)")
	f.StringVar(&o.Catalog, "catalog", "", "catalog to pull the case images from: folder, manifest.json, pinned https:// URL or oci:// artifact (default $"+catalog.CatalogEnv+")")
	f.StringSliceVar(&o.Tasks, "tasks", nil, "grade only the predictions of these task ids (default: every prediction)")
	f.IntVar(&o.Jobs, "jobs", 0, "runs at once (default: one per core, at most one per 2 GiB of available memory)")
	f.IntVar(&o.Retries, "retries", evaluate.DefaultRetries, "times a run that failed for an infrastructure reason is tried again")
	f.Var(options.Seconds(&o.Timeout), "timeout", "how long applying a patch may take: a duration (10m) or seconds (default 10m)")
	f.StringVar(&o.RunsDir, "runs-dir", "runs", "where the evaluation folder eval-<id>/ goes")
	f.BoolVar(&o.JSON, "json", false, "print the predictions' outcomes as JSON on stdout instead of the report")
	options.AddKeepImagesFlag(f, &o.KeepImages)
	options.AddLimitFlags(f, &o.Resources)
	f.StringVar(&o.Runtime, "runtime", "", "runtime image (default $SSEBENCH_RUNTIME_IMAGE, else REGISTRY/runtime:VERSION)")
	return cmd
}

func runGrade(cmd *cobra.Command, g *options.Global, o *gradeOptions) error {
	if err := o.validate(cmd, g); err != nil {
		return err
	}
	e, done, err := newEnv(g, cmd, o.Runtime)
	if err != nil {
		return err
	}
	defer done()
	e.Log = nil
	gr, err := o.grading(cmd, g, e)
	if err != nil {
		return err
	}
	outcomes, byKey := gr.Outcomes()
	stderr := cmd.ErrOrStderr()
	njobs, why := evaluate.DefaultJobs()
	if cmd.Flag("jobs").Changed {
		njobs, why = o.Jobs, "--jobs"
	}
	fmt.Fprintf(stderr, "grading %s of %s in %s, %d at once (%s)\n", results.Plural(len(gr.Plan.Runs), "prediction", "predictions"),
		results.Plural(len(outcomes), "prediction", "predictions"), gr.Dir, njobs, why)
	for _, out := range outcomes {
		if out.Status == "refused" {
			fmt.Fprintln(stderr, out.Line())
		}
	}
	var runErr error
	if len(gr.Plan.Runs) > 0 {
		b := predictions.NewBackend(evaluate.Containerd{Env: e, EvalID: gr.Plan.ID, Request: pipeline.RunRequest{
			Dataset: gr.Plan.Dataset, Catalog: gr.Plan.Catalog, Timeout: gr.Plan.Timeout,
			Network: runner.NetworkRestricted, ContainerdAddr: g.ContainerdAddr, Output: io.Discard,
			Resources: &o.Resources, KeepImages: o.KeepImages.Keep, ImageBudget: o.KeepImages.Budget,
		}}, gr.Patches)
		var eout *evaluate.Outcome
		eout, runErr = evaluate.Evaluate(cmd.Context(), b, gr.Dir, gr.Plan, evaluate.WithJobs(njobs), evaluate.WithRetries(o.Retries),
			evaluate.WithProgress(predictions.NewProgress(stderr, gr, byKey)))
		if eout != nil {
			for k, err := range eout.Failed {
				byKey[k].Status, byKey[k].Reason = "error", err.Error()
			}
		}
	}
	return printGrade(cmd, o, gr.Dir, outcomes, runErr)
}

// validate refuses flags that cannot grade, before anything is opened.
func (o *gradeOptions) validate(cmd *cobra.Command, g *options.Global) error {
	if o.Predictions == "" {
		return errors.New("--predictions is required: pass a JSON Lines file of {instance_id, model_name_or_path, model_patch}")
	}
	if err := o.Resources.Validate(); err != nil {
		return err
	}
	if cmd.Flag("jobs").Changed && o.Jobs < 1 {
		return fmt.Errorf("--jobs %d: want at least 1", o.Jobs)
	}
	if o.Dataset != "" && o.Catalog != "" {
		return errors.New("--dataset and --catalog name two sources of the tasks: pass one")
	}
	if o.Catalog == "" && o.Dataset == "" {
		o.Catalog = g.Lookup(catalog.CatalogEnv)
	}
	if o.Timeout == 0 {
		o.Timeout = 600
	}
	return nil
}

// grading checks what the grade needs (agents/prediction, the tasks, the
// daemons) and reads the predictions into a new evaluation folder, whose
// plan it writes.
func (o *gradeOptions) grading(cmd *cobra.Command, g *options.Global, e *pipeline.Env) (*predictions.Grading, error) {
	return predictions.Prepare(cmd.Context(), e, predictions.Request{
		Predictions: o.Predictions, Dataset: o.Dataset, Catalog: o.Catalog, Tasks: evaluate.SplitList(o.Tasks),
		RunsDir: o.RunsDir, Timeout: o.Timeout,
		Ready: func() error { return checkDaemons(g, "grade", daemonNeeds{Containerd: true, BuildKit: true}) },
	})
}

// printGrade prints the outcomes (--json) or the report of the folder dir,
// and says how the grade ended; runErr is the evaluation's.
func printGrade(cmd *cobra.Command, o *gradeOptions, dir string, outcomes []*predictions.Outcome, runErr error) error {
	if o.JSON {
		if err := writeJSONTo(cmd.OutOrStdout(), outcomes); err != nil {
			return err
		}
	} else if runs, lerr := results.List(dir); lerr == nil {
		rep := results.NewReport(filepath.Base(dir), runs)
		rep.Evaluation, _ = results.ReadEvaluation(dir)
		if err := results.Write(cmd.OutOrStdout(), rep, "md"); err != nil && runErr == nil {
			runErr = err
		}
	}
	if err := cmd.Context().Err(); err != nil {
		// Interrupted: main says so and exits 130; what finished stays.
		return err
	}
	if runErr != nil {
		// Eval's words would point to `eval --resume`, which cannot run
		// a grade's plan (its agents are models' names).
		return fmt.Errorf("grading failed for an infrastructure reason: %w (grade the file again)", unwrapResume(runErr))
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "results in %s\n", dir)
	return nil
}

// unwrapResume drops eval's advice to resume from err.
func unwrapResume(err error) error {
	s := err.Error()
	if i := strings.Index(s, "; `ssebench eval --resume"); i >= 0 {
		return errors.New(s[:i])
	}
	return err
}
