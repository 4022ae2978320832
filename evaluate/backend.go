package evaluate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/errdefs"

	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// Backend builds images and runs runs. Build calls are made once per key
// by the engine (see Evaluate), so an implementation need not share work
// itself.
type Backend interface {
	// BuildTask builds what every run of task needs (its case and tool
	// images).
	BuildTask(ctx context.Context, task string) (*pipeline.TaskImages, error)
	// BuildAgent builds agent's image on the task's images.
	BuildAgent(ctx context.Context, task, agent string, ti *pipeline.TaskImages) (*pipeline.RunImages, error)
	// Run runs job on images (nil: prebuilt, pull them), leaving its run
	// folder under dir, and returns that folder. An error is an
	// infrastructure failure (the run may be retried); a run that ran
	// and graded badly is not an error.
	Run(ctx context.Context, job Job, images *pipeline.RunImages, dir string) (string, error)
	// Cleanup removes what runs of evaluation id left behind when the
	// process running them was killed (containers, tasks).
	Cleanup(ctx context.Context, id string) error
}

// EvalLabel is the container label that names a run's evaluation.
const EvalLabel = "ssebench.eval"

// Containerd runs on this machine's containerd through pipeline.Env.
type Containerd struct {
	Env *pipeline.Env
	// Request is the template of every run: dataset or catalog, model,
	// timeout, difficulty, network, containerd address, prebuilt.
	Request pipeline.RunRequest
	// EvalID labels the containers (EvalLabel).
	EvalID string
}

var _ Backend = (*Containerd)(nil)

func (c *Containerd) req(task, agent string) pipeline.RunRequest {
	r := c.Request
	r.Task, r.Agent = task, agent
	return r
}

// BuildTask implements Backend.
func (c *Containerd) BuildTask(ctx context.Context, task string) (*pipeline.TaskImages, error) {
	return c.Env.BuildTask(ctx, c.req(task, "-"))
}

// BuildAgent implements Backend.
func (c *Containerd) BuildAgent(ctx context.Context, task, agent string, ti *pipeline.TaskImages) (*pipeline.RunImages, error) {
	return c.Env.BuildAgent(ctx, c.req(task, agent), ti)
}

// Run implements Backend.
func (c *Containerd) Run(ctx context.Context, job Job, images *pipeline.RunImages, dir string) (string, error) {
	r := c.req(job.Task, job.Agent)
	r.Images, r.RunsDir, r.Attempt = images, dir, job.Attempt
	r.Labels = map[string]string{EvalLabel: c.EvalID}
	res, err := c.Env.Run(ctx, r)
	if err != nil {
		return "", err
	}
	if res.Summary.Status == "stopped" {
		return "", fmt.Errorf("run %s was stopped", res.Summary.RunID)
	}
	return res.Dir, nil
}

// Cleanup implements Backend: it kills and deletes the containers that
// carry the evaluation's label, then removes from containerd the images
// its runs imported (they carry the label too), unless kept
// (--keep-images): a killed evaluation's runs could not.
func (c *Containerd) Cleanup(ctx context.Context, id string) error {
	addr := c.Request.ContainerdAddr
	if addr == "" {
		addr = os.Getenv(runner.AddressEnv)
	}
	if addr == "" {
		addr = runner.DefaultAddress
	}
	ns := runner.Namespace()
	cl, err := containerd.New(addr, containerd.WithDefaultNamespace(ns))
	if err != nil {
		return fmt.Errorf("connecting to containerd: %w", err)
	}
	defer cl.Close()
	ctx = namespaces.WithNamespace(ctx, ns)
	ctrs, err := cl.Containers(ctx, evalFilter(id))
	if err != nil {
		return fmt.Errorf("listing the evaluation's containers: %w", err)
	}
	var errs []error
	for _, ctr := range ctrs {
		if t, err := ctr.Task(ctx, nil); err == nil {
			t.Kill(ctx, syscall.SIGKILL)
			if ch, err := t.Wait(ctx); err == nil {
				<-ch
			}
			if _, err := t.Delete(ctx, containerd.WithProcessKill); err != nil {
				errs = append(errs, err)
			}
		}
		if err := ctr.Delete(ctx, runner.WithRootCleanup); err != nil {
			errs = append(errs, fmt.Errorf("removing container %s: %w", ctr.ID(), err))
		}
	}
	imgs, err := cl.ImageService().List(ctx, evalFilter(id))
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("listing the evaluation's images: %w", err))...)
	}
	for _, img := range imgs {
		if img.Labels[runner.LabelKept] != "" {
			continue
		}
		if err := cl.ImageService().Delete(ctx, img.Name); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("removing image %s from containerd: %w", img.Name, err))
		}
	}
	return errors.Join(errs...)
}

// evalFilter is the containerd filter of the containers of evaluation id.
func evalFilter(id string) string { return fmt.Sprintf("labels.%q==%q", EvalLabel, id) }

// Cluster runs an evaluation's runs on a cluster: the builds and runs of
// Containerd, whose Request.Cluster is set, and a Cleanup that deletes by
// label what the runs of a killed evaluation left in the cluster.
type Cluster struct {
	Containerd
	// DeleteLabeled deletes the objects that match a label selector and
	// waits for their pods to go (kube.Runner.DeleteLabeled).
	DeleteLabeled func(ctx context.Context, selector string) error
}

var _ Backend = (*Cluster)(nil)

// Cleanup implements Backend: it deletes the Jobs, pods and the rest
// that carry the evaluation's label.
func (c *Cluster) Cleanup(ctx context.Context, id string) error {
	if err := c.DeleteLabeled(ctx, EvalLabel+"="+id); err != nil {
		return fmt.Errorf("deleting what evaluation %s left in the cluster: %w", id, err)
	}
	return nil
}
