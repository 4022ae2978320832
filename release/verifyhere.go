package release

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// ContainerdBackend is the backend Verify takes for the dataset in dir
// on this machine's containerd through e: every run of the tasks' own
// folders on the restricted network. base holds the rest of every run
// (timeout, containerd's address, the images kept); its Output defaults
// to nothing.
func ContainerdBackend(e *pipeline.Env, dir string, base pipeline.RunRequest) (func(planID string) evaluate.Backend, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	base.Dataset, base.Network = abs, runner.NetworkRestricted
	if base.Output == nil {
		base.Output = io.Discard
	}
	return func(id string) evaluate.Backend {
		return &evaluate.Containerd{Env: e, EvalID: id, Request: base}
	}, nil
}

// NewProgress prints the progress of a verification's runs to w, where
// the dummy's and the stubs' runs are meant to fail: they are marked as
// expected.
func NewProgress(w io.Writer) evaluate.Progress {
	return evaluate.NewPrinter(w, evaluate.ExpectFailing(DummyAgent, StubsAgent))
}

// WriteTable writes r's findings to w as a table: task, agent, check,
// ok or FAILED, and why.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tAGENT\tCHECK\tRESULT\tWHY")
	for _, f := range r.Findings {
		res := "ok"
		if !f.OK {
			res = "FAILED"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Task, f.Agent, f.Check, res, f.Why)
	}
	return tw.Flush()
}

// WriteEnd ends a verification: it writes to w where its runs are and,
// when every check passed, how many tasks verified; else it returns the
// error naming every check that failed.
func (r *Report) WriteEnd(w io.Writer) error {
	if r.Dir != "" {
		fmt.Fprintf(w, "runs in %s\n", r.Dir)
	}
	if failed := r.Failed(); len(failed) > 0 {
		var parts []string
		for _, f := range failed {
			parts = append(parts, fmt.Sprintf("%s %s %s (%s)", f.Task, f.Agent, f.Check, f.Why))
		}
		return fmt.Errorf("%s failed: %s", units.Plural(len(failed), "check"), strings.Join(parts, "; "))
	}
	fmt.Fprintf(w, "%s verified\n", units.Plural(len(r.Verified), "task"))
	return nil
}
