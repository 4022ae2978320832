package runner

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/name"
)

// Labels ssebench sets on the image records it creates in containerd.
const (
	// LabelImported marks an image record that ssebench created by
	// importing or pulling an image; its value is when (RFC 3339, UTC).
	// Prune removes such images and no others.
	LabelImported = "ssebench.imported"
	// LabelKept marks an imported image that a run was asked to keep
	// (RunSpec.RemoveImage false, `--keep-images`): Prune removes it only
	// with PruneAll.
	LabelKept = "ssebench.keep"
)

// useKey names one image record of one containerd namespace.
type useKey struct{ address, namespace, image string }

// imageUse counts the runs of this process that use an image record, and
// remembers whether this process put the record there.
type imageUse struct {
	runs int
	// ours: the record did not exist when the first run of this process
	// that uses it began. Only then may a run remove it: an image that was
	// there before belongs to someone else (another tool, or a run with
	// --keep-images).
	ours bool
}

// uses is process-wide because every run opens a Runner of its own: an
// evaluation with --jobs N runs N Runners at once on the same images.
var uses = struct {
	sync.Mutex
	m map[useKey]*imageUse
}{m: map[useKey]*imageUse{}}

// acquireImage counts a run that is about to use the image ref and
// returns the key to release it with.
func (r *Runner) acquireImage(ctx context.Context, ref string) (useKey, error) {
	parsed, err := name.ParseReference(ref)
	if err != nil {
		return useKey{}, fmt.Errorf("image %s: %w", ref, err)
	}
	k := useKey{r.opts.address, r.opts.namespace, containerdName(parsed)}
	uses.Lock()
	defer uses.Unlock()
	u := uses.m[k]
	if u == nil {
		// Under the lock, so that a removal by releaseImage and this check
		// cannot interleave.
		_, err := r.client.ImageService().Get(ctx, k.image)
		if err != nil && !errdefs.IsNotFound(err) {
			return useKey{}, fmt.Errorf("checking containerd for image %s: %w", k.image, err)
		}
		u = &imageUse{ours: err != nil}
		uses.m[k] = u
	}
	u.runs++
	return k, nil
}

// releaseImage ends a run's use of k. Under a budget (spec.ImageBudget,
// not spec.RemoveImage) the image stays, and a run that added content or
// layers (added) then evicts what no longer fits (Evict). Otherwise the
// last run of the process to use an image this process put into
// containerd removes its record, keeps it for a later run
// (spec.ImageNeeded) or labels it kept. Only the record goes:
// containerd's garbage collector frees the content and snapshots nothing
// else holds, and a container still running keeps its own snapshot.
func (r *Runner) releaseImage(ctx context.Context, k useKey, spec RunSpec, added bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	ctx = r.withNamespace(ctx)
	if !spec.RemoveImage && spec.ImageBudget > 0 {
		uses.Lock()
		if u := uses.m[k]; u != nil {
			if u.runs--; u.runs == 0 {
				delete(uses.m, k)
			}
		}
		uses.Unlock()
		if !added {
			return nil
		}
		_, err := r.Evict(ctx, spec.ImageBudget)
		return err
	}
	uses.Lock()
	defer uses.Unlock()
	u := uses.m[k]
	if u == nil {
		return nil
	}
	if u.runs--; u.runs > 0 {
		return nil
	}
	if !u.ours {
		delete(uses.m, k)
		return nil
	}
	switch {
	case spec.RemoveImage && spec.ImageNeeded != nil && spec.ImageNeeded():
		// Still ours: the later run that uses it removes it.
		return nil
	case spec.RemoveImage:
		delete(uses.m, k)
		if err := r.client.ImageService().Delete(ctx, k.image); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("removing image %s from containerd: %w (ssebench prune removes it later)", k.image, err)
		}
		return nil
	default:
		// Kept: from now on it is an image that was there before.
		delete(uses.m, k)
		return r.labelKept(ctx, k.image)
	}
}

// labelKept labels an imported image record LabelKept.
func (r *Runner) labelKept(ctx context.Context, image string) error {
	is := r.client.ImageService()
	img, err := is.Get(ctx, image)
	if errdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("labelling image %s kept: %w", image, err)
	}
	if _, ok := img.Labels[LabelImported]; !ok || img.Labels[LabelKept] != "" {
		return nil
	}
	img.Labels[LabelKept] = "true"
	if _, err := is.Update(ctx, img, "labels."+LabelKept); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("labelling image %s kept: %w", image, err)
	}
	return nil
}

// importLabels are the labels of an image record ssebench creates: extra
// and LabelImported.
func importLabels(extra map[string]string) map[string]string {
	l := map[string]string{}
	for k, v := range extra {
		l[k] = v
	}
	l[LabelImported] = time.Now().UTC().Format(time.RFC3339)
	return l
}
