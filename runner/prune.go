package runner

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/errdefs"
	"github.com/opencontainers/image-spec/identity"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/42-b3yond-6ug/ssebench/internal/units"
)

// pruneGrace is how old a container without a running task must be
// before Prune removes it: a run creates its container a moment before
// its task, and must not lose it in between.
const pruneGrace = time.Minute

// expireLabel is the label containerd's leases.WithExpiration sets.
const expireLabel = "containerd.io/gc.expire"

// Kinds of what Prune removes (PrunedItem.Kind).
const (
	PruneImage     = "image"
	PruneContainer = "container"
	PruneSnapshot  = "snapshot"
	PruneLease     = "lease"
)

// PruneOption configures Prune.
type PruneOption func(*pruneOptions)

type pruneOptions struct {
	dryRun, all bool
	grace       time.Duration
}

// withPruneGrace sets the grace period of containers (tests).
func withPruneGrace(d time.Duration) PruneOption { return func(o *pruneOptions) { o.grace = d } }

// PruneDryRun makes Prune only list what it would remove.
func PruneDryRun() PruneOption { return func(o *pruneOptions) { o.dryRun = true } }

// PruneAll makes Prune remove the images kept by --keep-images
// (LabelKept) too.
func PruneAll() PruneOption { return func(o *pruneOptions) { o.all = true } }

// Pruned is what Prune removed, or would remove.
type Pruned struct {
	Namespace string       `json:"namespace"`
	DryRun    bool         `json:"dry_run"`
	Items     []PrunedItem `json:"items"`
	// Bytes is what the namespace's content and snapshots took less
	// afterwards, measured; in a dry run, an estimate: the blobs and
	// unpacked layers only the removed images hold, and the removed
	// snapshots' own size.
	Bytes int64 `json:"bytes"`
}

// PrunedItem is one thing Prune removed.
type PrunedItem struct {
	// Kind is PruneImage, PruneContainer, PruneSnapshot or PruneLease.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Bytes is its size, in a dry run (see Pruned.Bytes); 0 otherwise.
	Bytes int64 `json:"bytes"`
}

// Count returns how many items of kind were pruned.
func (p *Pruned) Count(kind string) int {
	n := 0
	for _, it := range p.Items {
		if it.Kind == kind {
			n++
		}
	}
	return n
}

// Prune removes what ssebench left in the runner's namespace: the
// containers of finished runs (those whose ID starts with "ssebench-" or
// that carry a run's label, and have no running task), the images it
// imported (LabelImported; LabelKept too with PruneAll) that no remaining
// container uses, the extract snapshots of interrupted unpacks that no
// lease holds, and expired leases. containerd's garbage collector then
// frees the content and snapshots nothing holds, before Prune returns.
// Images other tools put in the namespace, and other namespaces, are
// never touched.
func (r *Runner) Prune(ctx context.Context, opts ...PruneOption) (*Pruned, error) {
	o := pruneOptions{grace: pruneGrace}
	for _, opt := range opts {
		opt(&o)
	}
	ctx = r.withNamespace(ctx)
	p := &Pruned{Namespace: r.opts.namespace, DryRun: o.dryRun, Items: []PrunedItem{}}
	var before int64
	if !o.dryRun {
		var err error
		if before, err = r.diskUse(ctx); err != nil {
			return nil, err
		}
	}
	inUse, err := r.pruneContainers(ctx, p, o)
	if err != nil {
		return nil, err
	}
	if err := r.pruneImages(ctx, p, o, inUse); err != nil {
		return nil, err
	}
	held, err := r.pruneLeases(ctx, p, o)
	if err != nil {
		return nil, err
	}
	if err := r.pruneSnapshots(ctx, p, o, held); err != nil {
		return nil, err
	}
	if o.dryRun {
		for _, it := range p.Items {
			p.Bytes += it.Bytes
		}
		return p, nil
	}
	if err := r.collectGarbage(ctx); err != nil {
		return nil, err
	}
	after, err := r.diskUse(ctx)
	if err != nil {
		return nil, err
	}
	if before > after {
		p.Bytes = before - after
	}
	return p, nil
}

// pruneContainers removes the stopped containers of runs and returns the
// images the remaining containers use.
func (r *Runner) pruneContainers(ctx context.Context, p *Pruned, o pruneOptions) (map[string]bool, error) {
	ctrs, err := r.client.Containers(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing containerd's containers: %w", err)
	}
	inUse := map[string]bool{}
	for _, c := range ctrs {
		info, err := c.Info(ctx, client.WithoutRefreshedMetadata)
		if err != nil {
			return nil, fmt.Errorf("reading container %s: %w", c.ID(), err)
		}
		if !r.finished(ctx, c, info, o.grace) {
			inUse[info.Image] = true
			continue
		}
		it := PrunedItem{Kind: PruneContainer, Name: c.ID()}
		if o.dryRun {
			sn, key := rootSnapshot(info)
			it.Bytes = r.snapshotSize(ctx, sn, key)
			p.Items = append(p.Items, it)
			continue
		}
		if t, err := c.Task(ctx, nil); err == nil {
			if _, err := t.Delete(ctx); err != nil && !errdefs.IsNotFound(err) {
				return nil, fmt.Errorf("deleting the task of container %s: %w", c.ID(), err)
			}
		}
		if err := c.Delete(ctx, WithRootCleanup); err != nil && !errdefs.IsNotFound(err) {
			return nil, fmt.Errorf("removing container %s: %w", c.ID(), err)
		}
		p.Items = append(p.Items, it)
	}
	return inUse, nil
}

// finished says c is a container of an ssebench run that no longer runs:
// its task is stopped or gone, and it is older than grace.
func (r *Runner) finished(ctx context.Context, c client.Container, info containers.Container, grace time.Duration) bool {
	if !strings.HasPrefix(c.ID(), "ssebench-") && info.Labels["ssebench.run-id"] == "" {
		return false
	}
	if time.Since(info.UpdatedAt) < grace {
		return false
	}
	t, err := c.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return true
	}
	if err != nil {
		return false
	}
	st, err := t.Status(ctx)
	return err == nil && st.Status == client.Stopped
}

// pruneImages removes the images ssebench imported that no remaining
// container uses.
func (r *Runner) pruneImages(ctx context.Context, p *Pruned, o pruneOptions, inUse map[string]bool) error {
	is := r.client.ImageService()
	all, err := is.List(ctx)
	if err != nil {
		return fmt.Errorf("listing containerd's images: %w", err)
	}
	var gone, kept []images.Image
	for _, img := range all {
		_, ours := img.Labels[LabelImported]
		if !ours || inUse[img.Name] || (img.Labels[LabelKept] != "" && !o.all) {
			kept = append(kept, img)
			continue
		}
		gone = append(gone, img)
	}
	var sizes map[string]int64
	if o.dryRun {
		sizes = r.uniqueContent(ctx, gone, kept)
	}
	for _, img := range gone {
		if !o.dryRun {
			if err := is.Delete(ctx, img.Name); err != nil && !errdefs.IsNotFound(err) {
				return fmt.Errorf("removing image %s from containerd: %w", img.Name, err)
			}
		}
		p.Items = append(p.Items, PrunedItem{Kind: PruneImage, Name: img.Name, Bytes: sizes[img.Name]})
	}
	return nil
}

// uniqueContent returns, per image of gone, the size of the blobs and of
// the unpacked layers (the runner's platform and snapshotter) it holds that
// no image of kept (nor an earlier image of gone) holds.
func (r *Runner) uniqueContent(ctx context.Context, gone, kept []images.Image) map[string]int64 {
	cs := r.client.ContentStore()
	sn := r.client.SnapshotService(r.snapshotter)
	seen := map[string]bool{}
	for _, img := range kept {
		r.walkContent(ctx, cs, img.Target, func(d ocispec.Descriptor, _ int64) { seen[d.Digest.String()] = true })
		for _, c := range r.chains(ctx, cs, img.Target) {
			seen[c] = true
		}
	}
	sizes := map[string]int64{}
	for _, img := range gone {
		r.walkContent(ctx, cs, img.Target, func(d ocispec.Descriptor, size int64) {
			if !seen[d.Digest.String()] {
				seen[d.Digest.String()] = true
				sizes[img.Name] += size
			}
		})
		for _, c := range r.chains(ctx, cs, img.Target) {
			if !seen[c] {
				seen[c] = true
				if u, err := sn.Usage(ctx, c); err == nil {
					sizes[img.Name] += u.Size
				}
			}
		}
	}
	return sizes
}

// chains are the snapshot names (chain ids) of target's layers for the
// runner's platform; none when containerd lacks the manifest or config.
func (r *Runner) chains(ctx context.Context, cs content.Store, target ocispec.Descriptor) []string {
	m, err := images.Manifest(ctx, cs, target, r.matcher())
	if err != nil {
		return nil
	}
	diffIDs, err := images.RootFS(ctx, cs, m.Config)
	if err != nil {
		return nil
	}
	out := make([]string, len(diffIDs))
	for i := range diffIDs {
		out[i] = identity.ChainID(diffIDs[:i+1]).String()
	}
	return out
}

// walkContent calls f on each blob of target that containerd has.
func (r *Runner) walkContent(ctx context.Context, cs content.Store, target ocispec.Descriptor, f func(ocispec.Descriptor, int64)) {
	h := images.HandlerFunc(func(ctx context.Context, d ocispec.Descriptor) ([]ocispec.Descriptor, error) {
		info, err := cs.Info(ctx, d.Digest)
		if err != nil {
			// Another platform's manifest, never imported.
			return nil, images.ErrSkipDesc
		}
		f(d, info.Size)
		return images.Children(ctx, cs, d)
	})
	_ = images.Walk(ctx, h, target)
}

// pruneLeases removes the expired leases and returns the resources the
// others hold ("type/id").
func (r *Runner) pruneLeases(ctx context.Context, p *Pruned, o pruneOptions) (map[string]bool, error) {
	ls := r.client.LeasesService()
	all, err := ls.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing containerd's leases: %w", err)
	}
	held := map[string]bool{}
	now := time.Now()
	for _, l := range all {
		if exp, err := time.Parse(time.RFC3339, l.Labels[expireLabel]); err == nil && exp.Before(now) {
			if !o.dryRun {
				if err := ls.Delete(ctx, l); err != nil && !errdefs.IsNotFound(err) {
					return nil, fmt.Errorf("removing expired lease %s: %w", l.ID, err)
				}
			}
			p.Items = append(p.Items, PrunedItem{Kind: PruneLease, Name: l.ID})
			continue
		}
		res, err := ls.ListResources(ctx, l)
		if err != nil {
			return nil, fmt.Errorf("reading lease %s: %w", l.ID, err)
		}
		for _, x := range res {
			held[x.Type+"/"+x.ID] = true
		}
	}
	return held, nil
}

// pruneSnapshots removes the active extract snapshots (unpacks that were
// interrupted) that no lease holds, in the snapshotters ssebench uses.
func (r *Runner) pruneSnapshots(ctx context.Context, p *Pruned, o pruneOptions, held map[string]bool) error {
	for _, name := range r.snapshotters(ctx) {
		sn := r.client.SnapshotService(name)
		var orphans []string
		err := sn.Walk(ctx, func(ctx context.Context, info snapshots.Info) error {
			if info.Kind == snapshots.KindActive && strings.HasPrefix(info.Name, "extract-") && !held["snapshots/"+name+"/"+info.Name] {
				orphans = append(orphans, info.Name)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("listing the %s snapshots: %w", name, err)
		}
		sort.Strings(orphans)
		for _, key := range orphans {
			it := PrunedItem{Kind: PruneSnapshot, Name: name + "/" + key}
			if o.dryRun {
				it.Bytes = r.snapshotSize(ctx, name, key)
			} else if err := sn.Remove(ctx, key); err != nil && !errdefs.IsNotFound(err) {
				return fmt.Errorf("removing snapshot %s: %w", key, err)
			}
			p.Items = append(p.Items, it)
		}
	}
	return nil
}

// snapshotters are the snapshotters that work here, the runner's first.
func (r *Runner) snapshotters(ctx context.Context) []string {
	out := []string{r.snapshotter}
	for _, s := range []string{SnapshotterOverlayFS, SnapshotterNative} {
		if s != r.snapshotter && snapshotterWorks(ctx, r.client, s) == nil {
			out = append(out, s)
		}
	}
	return out
}

// snapshotSize is what snapshot key of snapshotter sn takes itself; 0
// when unknown.
func (r *Runner) snapshotSize(ctx context.Context, sn, key string) int64 {
	if sn == "" || key == "" {
		return 0
	}
	u, err := r.client.SnapshotService(sn).Usage(ctx, key)
	if err != nil {
		return 0
	}
	return u.Size
}

// diskUse is what the namespace's content and snapshots take.
func (r *Runner) diskUse(ctx context.Context) (int64, error) {
	var total int64
	err := r.client.ContentStore().Walk(ctx, func(info content.Info) error {
		total += info.Size
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("measuring containerd's content: %w", err)
	}
	for _, name := range r.snapshotters(ctx) {
		sn := r.client.SnapshotService(name)
		err := sn.Walk(ctx, func(ctx context.Context, info snapshots.Info) error {
			if u, err := sn.Usage(ctx, info.Name); err == nil {
				total += u.Size
			}
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("measuring the %s snapshots: %w", name, err)
		}
	}
	return total, nil
}

// collectGarbage runs containerd's garbage collector now: deleting a
// lease synchronously does.
func (r *Runner) collectGarbage(ctx context.Context) error {
	ls := r.client.LeasesService()
	l, err := ls.Create(ctx, leases.WithRandomID(), leases.WithExpiration(time.Minute))
	if err != nil {
		return fmt.Errorf("running containerd's garbage collector: %w", err)
	}
	if err := ls.Delete(ctx, l, leases.SynchronousDelete); err != nil {
		return fmt.Errorf("running containerd's garbage collector: %w", err)
	}
	return nil
}

// String is what prune did (or would do) in a line: how many of what,
// and the bytes.
func (p *Pruned) String() string {
	var parts []string
	for _, k := range []struct{ kind, one, many string }{
		{PruneImage, "image", "images"},
		{PruneContainer, "container", "containers"},
		{PruneSnapshot, "snapshot", "snapshots"},
		{PruneLease, "expired lease", "expired leases"},
	} {
		if n := p.Count(k.kind); n > 0 {
			if n == 1 {
				parts = append(parts, "1 "+k.one)
			} else {
				parts = append(parts, fmt.Sprintf("%d %s", n, k.many))
			}
		}
	}
	what := "nothing"
	if len(parts) > 0 {
		what = strings.Join(parts, ", ")
	}
	if p.DryRun {
		return fmt.Sprintf("would remove %s from containerd namespace %s, about %s", what, p.Namespace, units.Bytes(p.Bytes))
	}
	return fmt.Sprintf("removed %s from containerd namespace %s, %s freed", what, p.Namespace, units.Bytes(p.Bytes))
}
