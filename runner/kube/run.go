package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// fatalWaiting are the reasons of a waiting container that waiting longer
// does not cure: the run fails at once, naming it, instead of sitting
// until its deadline.
var fatalWaiting = map[string]bool{
	"ErrImagePull":               true,
	"ImagePullBackOff":           true,
	"InvalidImageName":           true,
	"ErrImageNeverPull":          true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
}

var _ interface {
	Run(context.Context, runner.RunSpec) (*runner.Result, error)
	Close() error
} = (*Runner)(nil)

// Run runs spec as one Job and waits for it to end: the pod's output goes
// to spec.Output, and the results directory and archive come back into
// the folders of spec.Mounts through the pod's log. The container's exit
// status is in Result.ExitCode; a non-zero status is not an error.
//
// spec.Image must be in a registry (spec.Pull; ErrNotInRegistry
// otherwise) and pinned by digest. A restricted spec.Network gets a
// NetworkPolicy that denies all traffic. When ctx is cancelled, the Job is
// deleted (its container gets SIGTERM) and Run returns the Result with
// Stopped set and an error matching ctx.Err().
//
// Run deletes everything it created, whatever happens, with a context
// that outlives ctx, and waits until the pod is gone.
func (r *Runner) Run(ctx context.Context, spec runner.RunSpec) (*runner.Result, error) {
	start := time.Now()
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	p, err := r.opts.planRun(spec, token)
	if err != nil {
		return nil, err
	}
	res, _, err := r.runPlan(ctx, p, spec.ID, spec.Output, spec.Gateway, start, nil)
	return res, err
}

// runPlan creates p's objects, waits for its Job's pod, brings its
// results back and waits for its run container (containerName) to end;
// watch, when set, is called with the pod each time its status is read
// while the run container runs, and an error it returns ends the run. It
// returns the pod's name too ("" when none started). Everything created is
// deleted on the way out, with a context that outlives ctx.
func (r *Runner) runPlan(ctx context.Context, p *plan, id string, output io.Writer, gw *runner.Gateway, start time.Time, watch func(*corev1.Pod) error) (_ *runner.Result, podName string, retErr error) {
	var err error
	ns := r.opts.namespace
	res := &runner.Result{ContainerID: p.name}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if err := r.deleteRun(cctx, p.name); err != nil && retErr == nil {
			retErr = err
		}
	}()

	// The policy first: the pod never runs unrestricted.
	if p.policy != nil {
		if err := r.api.networkPolicies(ns).create(ctx, p.policy, nil); err != nil {
			return nil, "", fmt.Errorf("creating the run's NetworkPolicy in namespace %s: %w", ns, err)
		}
	}
	var report *reportReader
	if p.gateway != nil {
		if report, err = r.startGateway(ctx, p, gw); err != nil {
			if ctx.Err() != nil {
				res.Stopped = true
				return res, "", err
			}
			return nil, "", err
		}
		defer func() {
			// Before the deletion above: the gateway's last records
			// come through its pod's log.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
			defer cancel()
			if err := r.stopGateway(cctx, p, report); err != nil && retErr == nil {
				retErr = err
			}
		}()
	}
	if err := r.api.jobs(ns).create(ctx, p.job, nil); err != nil {
		return nil, "", fmt.Errorf("creating Job %s in namespace %s: %w", p.name, ns, err)
	}
	pod, err := r.waitStarted(ctx, p.name)
	if err != nil {
		if ctx.Err() != nil {
			res.Stopped = true
			return res, "", err
		}
		return nil, "", err
	}
	res.StartupTime = time.Since(start)
	started := time.Now()

	// The watch looks at the pod while its run container runs: an error
	// of it (the pair's agent container cannot start) stops the run.
	rctx, stopRun := context.WithCancelCause(ctx)
	defer stopRun(nil)
	if watch != nil {
		go r.watchPod(rctx, pod, watch, stopRun)
	}
	streamErr := r.readLog(rctx, pod, output, p)
	if cause := context.Cause(rctx); ctx.Err() == nil && rctx.Err() != nil && cause != nil {
		return nil, pod, cause
	}
	if ctx.Err() != nil {
		res.Stopped = true
		res.Duration = time.Since(started)
		return res, pod, fmt.Errorf("run %s: %w", id, ctx.Err())
	}
	code, killed, err := r.waitExit(ctx, pod, containerName)
	res.Duration = time.Since(started)
	if err != nil {
		return nil, pod, err
	}
	if watch != nil {
		// Once more, as the run ends: the watch sees the pod's last
		// state before it is deleted.
		last := &corev1.Pod{}
		if err := r.api.pods(ns).get(ctx, pod, last); err == nil {
			_ = watch(last)
		}
	}
	res.ExitCode = code
	if res.Killed == "" {
		res.Killed = killed
	}
	switch {
	case errors.Is(streamErr, contract.ErrNoResultsStream):
		// The container ended before its entrypoint wrote the results
		// (it crashed, or it is not ssebench's): the run has none, as a
		// container on containerd that wrote none.
		if output != nil {
			fmt.Fprintf(output, "ssebench: pod %s ended (exit %d) without writing its results\n", pod, code)
		}
	case streamErr != nil:
		return res, pod, fmt.Errorf("bringing the results of pod %s back: %w", pod, streamErr)
	}
	return res, pod, nil
}

// watchPod reads pod every poll interval and calls watch with it until ctx
// ends; an error of watch stops the run (stop).
func (r *Runner) watchPod(ctx context.Context, pod string, watch func(*corev1.Pod) error, stop context.CancelCauseFunc) {
	for sleep(ctx, r.opts.pollInterval) == nil {
		p := &corev1.Pod{}
		if err := r.api.pods(r.opts.namespace).get(ctx, pod, p); err != nil {
			continue
		}
		if err := watch(p); err != nil {
			stop(err)
			return
		}
	}
}

// waitStarted waits until the Job's pod has its container running (or
// already ended) and returns the pod's name. A Job that failed and a
// container that cannot start (its image cannot be pulled, say) are
// errors at once.
func (r *Runner) waitStarted(ctx context.Context, name string) (string, error) {
	ns := r.opts.namespace
	sel := metav1.ListOptions{LabelSelector: RunLabel + "=" + name}
	for {
		job := &batchv1.Job{}
		if err := r.api.jobs(ns).get(ctx, name, job); err != nil {
			return "", fmt.Errorf("reading Job %s: %w", name, err)
		}
		if c := jobFailed(job); c != nil {
			return "", fmt.Errorf("Job %s failed before its pod started: %s: %s", name, c.Reason, c.Message)
		}
		pods := &corev1.PodList{}
		if err := r.api.pods(ns).list(ctx, sel, pods); err != nil {
			return "", fmt.Errorf("listing the pods of Job %s: %w", name, err)
		}
		for _, pod := range pods.Items {
			for _, cs := range pod.Status.ContainerStatuses {
				if cs.Name != containerName {
					continue
				}
				switch {
				case cs.State.Running != nil || cs.State.Terminated != nil:
					return pod.Name, nil
				case cs.State.Waiting != nil && fatalWaiting[cs.State.Waiting.Reason]:
					return "", fmt.Errorf("the cluster cannot start pod %s: %s: %s", pod.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message)
				}
			}
			if pod.Status.Phase == corev1.PodFailed && len(pod.Status.ContainerStatuses) == 0 {
				return "", fmt.Errorf("pod %s failed before its container started: %s: %s", pod.Name, pod.Status.Reason, pod.Status.Message)
			}
		}
		if err := sleep(ctx, r.opts.pollInterval); err != nil {
			return "", err
		}
	}
}

func jobFailed(job *batchv1.Job) *batchv1.JobCondition {
	for i, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobFailed || c.Type == batchv1.JobFailureTarget) && c.Status == corev1.ConditionTrue {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

// readLog follows the container's log to its end, passing the output on
// and extracting the results block.
func (r *Runner) readLog(ctx context.Context, pod string, out io.Writer, p *plan) error {
	stream, err := r.api.pods(r.opts.namespace).logs(ctx, pod, &corev1.PodLogOptions{Container: containerName, Follow: true})
	if err != nil {
		return fmt.Errorf("reading the log of pod %s: %w", pod, err)
	}
	defer stream.Close()
	return contract.ReadResultsStream(stream, out, p.token, p.dest, 0)
}

// waitExit waits for the pod's container to have ended and returns its exit
// status, and the limit that ended it when the kubelet says so (see
// podKilled).
func (r *Runner) waitExit(ctx context.Context, pod, container string) (int, string, error) {
	for {
		p := &corev1.Pod{}
		if err := r.api.pods(r.opts.namespace).get(ctx, pod, p); err != nil {
			return 0, "", fmt.Errorf("reading pod %s: %w", pod, err)
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == container && cs.State.Terminated != nil {
				return int(cs.State.Terminated.ExitCode), podKilled(p, cs.State.Terminated), nil
			}
		}
		if err := sleep(ctx, r.opts.pollInterval); err != nil {
			return 0, "", err
		}
	}
}

// podKilled is the limit that ended pod p's container, as the kubelet
// reports it: an eviction for ephemeral storage (the run's --disk, the
// pod's ephemeral-storage limit) or the kernel's OOM kill of the
// container's main process.
func podKilled(p *corev1.Pod, t *corev1.ContainerStateTerminated) string {
	switch {
	case p.Status.Reason == "Evicted" && strings.Contains(p.Status.Message, "ephemeral"):
		return contract.KilledDisk
	case t.Reason == "OOMKilled":
		return contract.KilledMemory
	}
	return ""
}

// deleteRun deletes the run's Job, pod and NetworkPolicy (and its
// gateway's pod, Service, Secret and NetworkPolicy), and waits until the
// pods are gone.
func (r *Runner) deleteRun(ctx context.Context, name string) error {
	return r.DeleteLabeled(ctx, RunLabel+"="+name)
}

// DeleteLabeled deletes every Job, pod, NetworkPolicy, Service and Secret
// of the namespace that matches the label selector and that ssebench
// created, then waits until the pods are gone: what a killed evaluation
// left (`eval --resume`).
func (r *Runner) DeleteLabeled(ctx context.Context, selector string) error {
	ns := r.opts.namespace
	selector += "," + ManagedLabel + "=" + managedBy
	list := metav1.ListOptions{LabelSelector: selector}
	// Background: the Job goes at once and its pods with it; the pods are
	// deleted here too, so the wait below does not depend on the garbage
	// collector's pace.
	bg := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &bg}
	var errs []error
	keep := func(what string, err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting the %s labelled %s: %w", what, selector, err))
		}
	}
	keep("Jobs", r.api.jobs(ns).deleteCollection(ctx, del, list))
	keep("pods", r.api.pods(ns).deleteCollection(ctx, del, list))
	keep("NetworkPolicies", r.api.networkPolicies(ns).deleteCollection(ctx, del, list))
	keep("Services", deleteServices(ctx, r, list))
	keep("Secrets", r.api.secrets(ns).deleteCollection(ctx, del, list))
	for {
		pods := &corev1.PodList{}
		if err := r.api.pods(ns).list(ctx, list, pods); err != nil {
			errs = append(errs, fmt.Errorf("listing the pods labelled %s: %w", selector, err))
			break
		}
		if len(pods.Items) == 0 {
			break
		}
		if err := sleep(ctx, r.opts.pollInterval); err != nil {
			errs = append(errs, fmt.Errorf("waiting for the pods labelled %s to go: %w", selector, err))
			break
		}
	}
	return errors.Join(errs...)
}

// deleteServices deletes Services one by one: the API has no
// DeleteCollection for them.
func deleteServices(ctx context.Context, r *Runner, list metav1.ListOptions) error {
	svcs := &corev1.ServiceList{}
	if err := r.api.services(r.opts.namespace).list(ctx, list, svcs); err != nil {
		return err
	}
	var errs []error
	for _, s := range svcs.Items {
		if err := r.api.services(r.opts.namespace).delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// newToken is the run's results-stream token.
func newToken() (string, error) {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating the run's token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
