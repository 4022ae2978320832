package runner

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/errdefs"
	"github.com/opencontainers/image-spec/identity"
)

// DefaultImageBudget is what the images ssebench imported may take in its
// containerd namespace, by default, before the least recently used go: a
// whole dataset of a language's tasks (datasets/govuln's 32 tool images and
// their agent images unpack to about 6 GiB), with room for a second.
const DefaultImageBudget = 20 << 30

// evictRounds bounds Evict's rounds of removing, collecting and measuring
// again: one is the rule, a second when a concurrent import added to what
// the first measured.
const evictRounds = 3

// evictMu makes one run of the process at a time decide what to evict.
var evictMu sync.Mutex

// ImageUsage is what the images of a namespace take in containerd.
type ImageUsage struct {
	// Bytes is the content store's blobs and the runner's snapshotter's
	// committed snapshots (the unpacked layers). Containers' writable
	// layers and unpacks in progress are not counted.
	Bytes int64 `json:"bytes"`
	// Images is how many image records there are.
	Images int `json:"images"`
}

// Evicted is what Evict removed.
type Evicted struct {
	// Before and After are the namespace's ImageUsage around the eviction.
	Before, After ImageUsage
	// Images are the records removed, least recently used first.
	Images []string
}

// footprint is one image record and what it holds: its blobs ("c" and the
// digest) and its unpacked layers ("s" and the chain id).
type footprint struct {
	img  images.Image
	keys []string
}

// ImageUsage measures the namespace's content and committed snapshots.
func (r *Runner) ImageUsage(ctx context.Context) (ImageUsage, error) {
	ctx = r.withNamespace(ctx)
	sizes, err := r.sizes(ctx)
	if err != nil {
		return ImageUsage{}, err
	}
	imgs, err := r.client.ImageService().List(ctx)
	if err != nil {
		return ImageUsage{}, fmt.Errorf("listing containerd's images: %w", err)
	}
	var u ImageUsage
	for _, n := range sizes {
		u.Bytes += n
	}
	u.Images = len(imgs)
	return u, nil
}

// sizes maps every blob ("c"+digest) and committed snapshot ("s"+key) of
// the namespace to its size: one walk of each, and a usage request per
// committed snapshot, which containerd answers from what it recorded at
// commit time.
func (r *Runner) sizes(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	err := r.client.ContentStore().Walk(ctx, func(info content.Info) error {
		out["c"+info.Digest.String()] = info.Size
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("measuring containerd's content: %w", err)
	}
	sn := r.client.SnapshotService(r.snapshotter)
	var committed []string
	err = sn.Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if info.Kind == snapshots.KindCommitted {
			committed = append(committed, info.Name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("measuring the %s snapshots: %w", r.snapshotter, err)
	}
	for _, k := range committed {
		if u, err := sn.Usage(ctx, k); err == nil {
			out["s"+k] = u.Size
		}
	}
	return out, nil
}

// Evict keeps the images ssebench imported within budget bytes of the
// namespace's ImageUsage: while it is over, it removes the image records
// that ssebench imported (LabelImported), that are not kept (LabelKept),
// that no container and no run of this process uses, least recently
// used first (the record's update time, which every import of it sets),
// as many as free enough of what only they hold; then containerd's
// garbage collector frees their blobs and layers, and Evict measures
// again. What other images share stays. Images are all it removes: when
// what is left cannot be evicted it stays over the budget.
func (r *Runner) Evict(ctx context.Context, budget int64) (*Evicted, error) {
	evictMu.Lock()
	defer evictMu.Unlock()
	ctx = r.withNamespace(ctx)
	ev := &Evicted{}
	for round := 0; round < evictRounds; round++ {
		sizes, err := r.sizes(ctx)
		if err != nil {
			return nil, err
		}
		var total int64
		for _, n := range sizes {
			total += n
		}
		fps, err := r.footprints(ctx)
		if err != nil {
			return nil, err
		}
		u := ImageUsage{Bytes: total, Images: len(fps)}
		if round == 0 {
			ev.Before = u
		}
		ev.After = u
		if total <= budget {
			return ev, nil
		}
		gone := r.chooseEvictions(ctx, fps, sizes, total-budget)
		if len(gone) == 0 {
			return ev, nil
		}
		is := r.client.ImageService()
		for _, name := range gone {
			if err := is.Delete(ctx, name); err != nil && !errdefs.IsNotFound(err) {
				return nil, fmt.Errorf("evicting image %s from containerd: %w", name, err)
			}
			ev.Images = append(ev.Images, name)
		}
		if err := r.collectGarbage(ctx); err != nil {
			return nil, err
		}
	}
	u, err := r.ImageUsage(ctx)
	if err != nil {
		return nil, err
	}
	ev.After = u
	return ev, nil
}

// footprints are the namespace's image records and what each holds.
func (r *Runner) footprints(ctx context.Context) ([]footprint, error) {
	all, err := r.client.ImageService().List(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing containerd's images: %w", err)
	}
	cs := r.client.ContentStore()
	out := make([]footprint, 0, len(all))
	for _, img := range all {
		fp := footprint{img: img, keys: []string{"c" + img.Target.Digest.String()}}
		if m, err := images.Manifest(ctx, cs, img.Target, r.matcher()); err == nil {
			fp.keys = append(fp.keys, "c"+m.Config.Digest.String())
			for _, l := range m.Layers {
				fp.keys = append(fp.keys, "c"+l.Digest.String())
			}
			if img.Target.Digest != m.Config.Digest {
				// The platform's manifest, under an index.
				if d, err := platformManifest(ctx, cs, img, r); err == nil {
					fp.keys = append(fp.keys, "c"+d)
				}
			}
			if diffIDs, err := images.RootFS(ctx, cs, m.Config); err == nil {
				for i := range diffIDs {
					fp.keys = append(fp.keys, "s"+identity.ChainID(diffIDs[:i+1]).String())
				}
			}
		}
		out = append(out, fp)
	}
	return out, nil
}

// platformManifest is the digest of the runner's platform's manifest of
// img (its target when that is a manifest).
func platformManifest(ctx context.Context, cs content.Store, img images.Image, r *Runner) (string, error) {
	if !images.IsIndexType(img.Target.MediaType) {
		return img.Target.Digest.String(), nil
	}
	ms, err := images.Children(ctx, cs, img.Target)
	if err != nil {
		return "", err
	}
	for _, d := range ms {
		if d.Platform != nil && r.matcher().Match(*d.Platform) {
			return d.Digest.String(), nil
		}
	}
	return "", errdefs.ErrNotFound
}

// chooseEvictions picks, least recently used first, the evictable images
// whose removal frees at least need bytes of what no remaining image holds.
func (r *Runner) chooseEvictions(ctx context.Context, fps []footprint, sizes map[string]int64, need int64) []string {
	inUse := r.imagesInUse(ctx)
	refs := map[string]int{}
	for _, fp := range fps {
		for _, k := range dedupe(fp.keys) {
			refs[k]++
		}
	}
	var cands []footprint
	for _, fp := range fps {
		l := fp.img.Labels
		if _, ours := l[LabelImported]; !ours || l[LabelKept] != "" || inUse[fp.img.Name] {
			continue
		}
		cands = append(cands, fp)
	}
	slices.SortStableFunc(cands, func(a, b footprint) int { return a.img.UpdatedAt.Compare(b.img.UpdatedAt) })
	var freed int64
	var gone []string
	for _, fp := range cands {
		if freed >= need {
			break
		}
		for _, k := range dedupe(fp.keys) {
			if refs[k]--; refs[k] == 0 {
				freed += sizes[k]
			}
		}
		gone = append(gone, fp.img.Name)
	}
	return gone
}

// imagesInUse are the images a container of the namespace was created
// from, and those a run of this process is using.
func (r *Runner) imagesInUse(ctx context.Context) map[string]bool {
	in := map[string]bool{}
	if ctrs, err := r.client.Containers(ctx); err == nil {
		for _, c := range ctrs {
			if info, err := c.Info(ctx, client.WithoutRefreshedMetadata); err == nil {
				in[info.Image] = true
			}
		}
	}
	uses.Lock()
	for k, u := range uses.m {
		if k.address == r.opts.address && k.namespace == r.opts.namespace && u.runs > 0 {
			in[k.image] = true
		}
	}
	uses.Unlock()
	return in
}

func dedupe(keys []string) []string {
	out := slices.Clone(keys)
	slices.Sort(out)
	return slices.Compact(out)
}
