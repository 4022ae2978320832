package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/errdefs"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/internal/limitevents"
)

// drainTimeout bounds the wait for the last output after the task exits.
// The shim closes the streams once every process holding them is gone,
// which happens at once: when PID 1 exits the kernel kills the rest.
const drainTimeout = 10 * time.Second

// exitWaitTimeout bounds the wait for a task's exit after SIGKILL; the
// kernel delivers SIGKILL at once, so hitting it means the shim is stuck.
const exitWaitTimeout = 30 * time.Second

// Result is what a run did.
type Result struct {
	// ContainerID is the container's ID (generated when RunSpec.ID was
	// empty). After a Keep run, the container and its snapshot are still
	// in containerd under this ID.
	ContainerID string
	// Image is the image that ran and what getting it into containerd
	// took.
	Image *Image
	// ExitCode is the container's exit status; 128+N when signal N
	// killed it.
	ExitCode int
	// StartupTime is the time from Run's call until the task is about to
	// start: the import or pull, the unpack, and the creation of the
	// container and its task. Startup splits it.
	StartupTime time.Duration
	// Startup is what StartupTime was spent on.
	Startup Startup
	// Duration is the time from the start request to the task's exit.
	Duration time.Duration
	// Stopped says the run was cancelled and its task killed.
	Stopped bool
	// Killed names the limit of RunSpec.Limits the container hit, read
	// from its cgroup's counters before the task is deleted:
	// contract.KilledMemory when the kernel killed a process of it for
	// memory, contract.KilledPids when it refused a fork, and
	// contract.KilledDisk when it wrote more than its disk limit (its
	// unprivileged processes were killed, the entrypoint went on) or the
	// host's disk was nearly full (the whole task was killed). Empty when
	// none was hit, or the counters could not be read.
	Killed string
	// Leftover is what the run could not clean up after itself: the
	// image it could not remove or label, or the eviction of images past
	// the budget that failed (a delete that timed out behind containerd's
	// garbage collector). The run's results stand; `ssebench prune`
	// removes what is left.
	Leftover error
}

// Startup splits a container's start-up into its steps. Their sum is a
// little less than Result.StartupTime, which also counts the lease and
// the checks between them.
type Startup struct {
	// Import is getting the image's content and record into containerd:
	// the index, manifest and config blobs it lacked (the layers go
	// straight from the store into their snapshots: Unpack), or the
	// blobs a pull fetched.
	Import time.Duration
	// Unpack is unpacking the layers that had no snapshot yet.
	Unpack time.Duration
	// Create is the container: its root file system's snapshot, its
	// runtime spec and its record.
	Create time.Duration
	// Start is creating its task (the runtime's mounts, namespaces and
	// cgroup), up to the start request, which Result.Duration counts.
	Start time.Duration
}

// Run gets spec.Image into containerd (Import, or Pull when spec.Pull),
// creates the container, starts it, streams its output and waits for it
// to exit. It returns the container's exit status in Result.ExitCode; a
// non-zero status is not an error.
//
// When ctx is cancelled while the container runs, Run sends SIGTERM,
// then SIGKILL to every process after the stop timeout (see
// WithStopTimeout), waits for the exit, cleans up and returns both the
// Result (Stopped set) and an error that matches ctx.Err() with
// errors.Is.
//
// Run deletes the task, and unless spec.Keep the container and its
// snapshot, whatever happens, using a context that outlives ctx; then,
// with spec.RemoveImage, the image it put into containerd (see RunSpec).
// Interrupted runs clean up the same way.
func (r *Runner) Run(ctx context.Context, spec RunSpec) (_ *Result, retErr error) {
	start := time.Now()
	spec, err := spec.validate()
	if err != nil {
		return nil, err
	}
	ctx = r.withNamespace(ctx)
	// cleanupCtx keeps the namespace but not the cancellation: a run
	// interrupted by Ctrl-C must still remove what it created.
	cleanupCtx := context.WithoutCancel(ctx)
	res := &Result{ContainerID: spec.ID}

	// Released last, after the container is gone (deferred first).
	use, err := r.acquireImage(ctx, spec.Image)
	if err != nil {
		return nil, err
	}
	// An image that could not be removed does not make the run fail: its
	// results stand, the caller hears of it (Leftover), and `ssebench
	// prune` removes the image later.
	defer func() {
		added := res.Image != nil && (res.Image.Stats.BlobsWritten > 0 || res.Image.Stats.LayersUnpacked > 0)
		res.Leftover = r.releaseImage(cleanupCtx, use, spec, added)
	}()

	container, img, err := r.create(ctx, spec, &res.Startup)
	if err != nil {
		return nil, err
	}
	res.Image = img
	if !spec.Keep {
		defer func() {
			cctx, cancel := context.WithTimeout(cleanupCtx, cleanupTimeout)
			defer cancel()
			if err := container.Delete(cctx, WithRootCleanup); err != nil && !errdefs.IsNotFound(err) && retErr == nil {
				retErr = fmt.Errorf("removing container %s: %w", spec.ID, err)
			}
		}()
	}

	// Both streams always get a FIFO: containerd 1.6's shim fails to
	// create a task that has a stdout but no stderr (or the reverse).
	out, err := newOutput(orDiscard(spec.Output))
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", spec.ID, err)
	}
	defer out.close()
	taskStart := time.Now()
	var taskOpts []client.NewTaskOpts
	if !spec.Keep {
		ms, err := r.volatileRoot(ctx, container, spec.ID)
		if err != nil {
			return nil, err
		}
		if ms != nil {
			taskOpts = append(taskOpts, client.WithRootFS(ms))
		}
	}
	task, err := container.NewTask(ctx, out.creator(), taskOpts...)
	if err != nil {
		return nil, fmt.Errorf("creating the task of container %s: %w", spec.ID, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(cleanupCtx, cleanupTimeout)
		defer cancel()
		// WithProcessKill covers the error paths where the task still
		// runs.
		if _, err := task.Delete(cctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) && retErr == nil {
			retErr = fmt.Errorf("deleting the task of container %s: %w", spec.ID, err)
		}
	}()

	// Wait before Start, so that a task that exits at once is not missed;
	// on cleanupCtx, because the wait must survive cancellation.
	exitCh, err := task.Wait(cleanupCtx)
	if err != nil {
		return nil, fmt.Errorf("waiting for container %s: %w", spec.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("container %s not started: %w", spec.ID, err)
	}
	started := time.Now()
	res.StartupTime = started.Sub(start)
	// Where StartupTime ends: its parts never add up to more.
	res.Startup.Start = started.Sub(taskStart)
	// Start on cleanupCtx: a cancellation that arrives while the start
	// request is in flight must not leave a started task that this run
	// believes never started. The select below then stops it.
	if err := task.Start(cleanupCtx); err != nil {
		return nil, fmt.Errorf("starting container %s: %w", spec.ID, err)
	}
	if spec.Started != nil {
		spec.Started(task.Pid())
	}
	disk := r.newDiskWatch(ctx, container, spec)
	if disk != nil {
		wctx, stopWatch := context.WithCancel(cleanupCtx)
		defer stopWatch()
		go disk.run(wctx, func() { killUnprivileged(wctx, task) }, func() { _ = task.Kill(wctx, syscall.SIGKILL, client.WithKillAll) })
	}

	var status client.ExitStatus
	select {
	case status = <-exitCh:
	case <-ctx.Done():
		res.Stopped = true
		status, err = r.stop(cleanupCtx, task, exitCh)
		if err != nil {
			return nil, fmt.Errorf("stopping container %s: %w", spec.ID, err)
		}
	}
	// The cgroup goes with the task: its counters are read first.
	res.Killed = r.limitsHit(cleanupCtx, container)
	if disk != nil && disk.hit.Load() {
		res.Killed = contract.KilledDisk
	}
	// Deleting the task makes the shim finish copying and close its ends
	// of the FIFOs; only then is all the output there to read.
	if _, err := task.Delete(cleanupCtx); err != nil && !errdefs.IsNotFound(err) {
		return nil, fmt.Errorf("deleting the task of container %s: %w", spec.ID, err)
	}
	if err := out.finish(drainTimeout); err != nil {
		return nil, fmt.Errorf("container %s: %w", spec.ID, err)
	}
	code, exitedAt, err := status.Result()
	if err != nil {
		return nil, fmt.Errorf("waiting for container %s: %w", spec.ID, err)
	}
	res.Duration = time.Since(started)
	if exitedAt.After(started) {
		res.Duration = exitedAt.Sub(started)
	}
	res.ExitCode = int(code)
	if res.Stopped {
		return res, fmt.Errorf("container %s stopped: %w", spec.ID, ctx.Err())
	}
	return res, nil
}

// create gets the image into containerd and creates the container, under
// one lease: content and snapshots stay protected until the container
// references them. It records in st what each step took.
func (r *Runner) create(ctx context.Context, spec RunSpec, st *Startup) (client.Container, *Image, error) {
	ctx, done, err := r.lease(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer done()
	// Refuse a taken ID before doing anything, so that the clean-up of a
	// failed create below never removes a snapshot that is not ours.
	if _, err := r.client.LoadContainer(ctx, spec.ID); err == nil {
		return nil, nil, r.createError(spec.ID, errdefs.ErrAlreadyExists)
	} else if !errdefs.IsNotFound(err) {
		return nil, nil, fmt.Errorf("checking for container %s: %w", spec.ID, err)
	}
	if _, err := r.client.SnapshotService(r.snapshotter).Stat(ctx, spec.ID); err == nil {
		return nil, nil, r.createError(spec.ID, errdefs.ErrAlreadyExists)
	} else if !errdefs.IsNotFound(err) {
		return nil, nil, fmt.Errorf("checking for snapshot %s: %w", spec.ID, err)
	}
	var img *Image
	if spec.Pull {
		img, err = r.pullImage(ctx, spec.Image, spec.ImageLabels)
	} else {
		img, err = r.importImage(ctx, spec.Image, spec.ImageLabels)
	}
	if err != nil {
		return nil, nil, err
	}
	st.Import, st.Unpack = img.Stats.Duration-img.Stats.Unpack, img.Stats.Unpack
	created := time.Now()
	defer func() { st.Create = time.Since(created) }()
	// The record is not read back: `ssebench prune` in another process may
	// remove it meanwhile, and the lease holds what the container needs.
	ci := client.NewImageWithPlatform(r.client, images.Image{Name: img.Name, Target: img.Target}, r.matcher())
	container, err := r.client.NewContainer(ctx, spec.ID,
		client.WithSnapshotter(r.snapshotter),
		// The snapshot's key is the container ID, so a kept container's
		// file system is easy to find.
		client.WithNewSnapshot(spec.ID, ci),
		client.WithContainerLabels(spec.Labels),
		client.WithNewSpec(spec.specOpts(ci)...),
	)
	if err != nil {
		// WithNewSnapshot may have prepared the snapshot before a later
		// option failed; NewContainer does not remove it. The checks above
		// make sure the key was free, so the snapshot is ours.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if rerr := r.client.SnapshotService(r.snapshotter).Remove(cctx, spec.ID); rerr != nil && !errdefs.IsNotFound(rerr) {
			err = fmt.Errorf("%w (and removing snapshot %s: %v)", err, spec.ID, rerr)
		}
		return nil, nil, r.createError(spec.ID, err)
	}
	return container, img, nil
}

// createError explains a taken container ID; the error matches
// errdefs.ErrAlreadyExists.
func (r *Runner) createError(id string, err error) error {
	if errdefs.IsAlreadyExists(err) {
		return fmt.Errorf("creating container %s: a container or snapshot with this ID already exists in containerd namespace %s; remove it with `ctr -n %s containers rm %s` (and `ctr -n %s snapshots rm %s`) or choose another ID: %w",
			id, r.opts.namespace, r.opts.namespace, id, r.opts.namespace, id, errdefs.ErrAlreadyExists)
	}
	return fmt.Errorf("creating container %s: %w", id, err)
}

// stop sends SIGTERM, then SIGKILL to every process of the task after the
// stop timeout, and returns the exit status.
func (r *Runner) stop(ctx context.Context, task client.Task, exitCh <-chan client.ExitStatus) (client.ExitStatus, error) {
	if err := task.Kill(ctx, syscall.SIGTERM); err != nil && !errdefs.IsNotFound(err) {
		return client.ExitStatus{}, fmt.Errorf("sending SIGTERM: %w", err)
	}
	grace := time.NewTimer(r.opts.stopTimeout)
	defer grace.Stop()
	select {
	case st := <-exitCh:
		return st, nil
	case <-grace.C:
	}
	if err := task.Kill(ctx, syscall.SIGKILL, client.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
		return client.ExitStatus{}, fmt.Errorf("sending SIGKILL: %w", err)
	}
	select {
	case st := <-exitCh:
		return st, nil
	case <-time.After(exitWaitTimeout):
		return client.ExitStatus{}, errors.New("the task did not exit within " + exitWaitTimeout.String() + " of SIGKILL")
	}
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// limitsHit reads, on the host, the counters of the container's cgroup
// (the path its runtime spec names): what limit its processes hit.
func (r *Runner) limitsHit(ctx context.Context, container client.Container) string {
	spec, err := container.Spec(ctx)
	if err != nil || spec.Linux == nil || spec.Linux.CgroupsPath == "" || strings.Contains(spec.Linux.CgroupsPath, ":") {
		// A systemd slice path ("slice:prefix:name") is not a directory.
		return ""
	}
	return limitevents.Events{}.Killed(limitevents.Read(limitevents.CgroupDir, spec.Linux.CgroupsPath))
}
