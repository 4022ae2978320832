package remote

// Plans: what Push, PushAll and Mirror would do, found with HEAD requests
// only, so that --dry-run writes nothing anywhere.

import (
	"context"
	"fmt"
	"net/http"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// PlannedImage is one image of a Plan.
type PlannedImage struct {
	// Source is where the image comes from (empty for a push from the
	// store); Target the reference it would be written to.
	Source string `json:"source,omitempty"`
	Target string `json:"target"`
	// Digest is the manifest's digest; Current what Target names now
	// ("" when it names nothing).
	Digest  string `json:"digest"`
	Current string `json:"current,omitempty"`
	// Blobs and Bytes count the image's blobs (layers and configs).
	Blobs int   `json:"blobs"`
	Bytes int64 `json:"bytes"`
	// Existing blobs are in the target repository already; Mountable ones
	// are in another repository of its registry (or come there earlier in
	// the plan); Upload ones would be sent.
	Existing       int   `json:"existing_blobs"`
	ExistingBytes  int64 `json:"existing_bytes"`
	Mountable      int   `json:"mountable_blobs"`
	MountableBytes int64 `json:"mountable_bytes"`
	Upload         int   `json:"upload_blobs"`
	UploadBytes    int64 `json:"upload_bytes"`
	// ExistingDigests lists the blobs the target has, sorted.
	ExistingDigests []string `json:"existing_digests"`
}

// Plan is what a push or mirror would do, written nowhere.
type Plan struct {
	Images []PlannedImage `json:"images"`
	// Missing lists source images that do not exist (Mirror).
	Missing     []string `json:"missing,omitempty"`
	UploadBlobs int      `json:"upload_blobs"`
	UploadBytes int64    `json:"upload_bytes"`
}

// PlanPush says what PushAll(targets) would upload, mount, skip and tag,
// asking the registries with HEAD requests only.
func PlanPush(ctx context.Context, targets []Target, opts ...Option) (*Plan, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	p := newPusher(o)
	defer p.close()
	plan := &Plan{Images: []PlannedImage{}}
	for _, t := range targets {
		dst, err := o.parseReference(t.Ref)
		if err != nil {
			return nil, err
		}
		im, err := p.plan(ctx, dst, t.Content, nil)
		if err != nil {
			return nil, err
		}
		plan.add(im)
	}
	return plan, nil
}

// PlanMirror says what Mirror would copy (see PlanPush).
func PlanMirror(ctx context.Context, refs []string, fromPrefix, toPrefix string, opts ...Option) (*Plan, error) {
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	p := newPusher(o)
	defer p.close()
	plan := &Plan{Images: []PlannedImage{}}
	err = o.eachMirrorJob(ctx, refs, fromPrefix, toPrefix, &plan.Missing, func(j mirrorJob) error {
		p.addScopes(j.dst.Context(), j.src.Context())
		origin := j.src.Context()
		im, err := p.plan(ctx, j.dst, j.content, &origin)
		if err != nil {
			return err
		}
		im.Source = j.src.Name()
		plan.add(im)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(plan.Missing)
	return plan, nil
}

func (pl *Plan) add(im PlannedImage) {
	pl.Images = append(pl.Images, im)
	pl.UploadBlobs += im.Upload
	pl.UploadBytes += im.UploadBytes
}

// plan looks at each blob of content as pushBlob would, with HEAD
// requests only; a blob the plan uploads or mounts counts as held by dst
// for the images after it, as it would be in the push.
func (p *pusher) plan(ctx context.Context, ref name.Reference, content remote.Taggable, origin *name.Repository) (PlannedImage, error) {
	dst := ref.Context()
	im := PlannedImage{Target: ref.Name(), ExistingDigests: []string{}}
	h, err := digestOfTaggable(content)
	if err != nil {
		return im, err
	}
	im.Digest = h.String()
	if d, err := remote.Head(ref, p.o.remoteOptions(ctx)...); err == nil {
		im.Current = d.Digest.String()
	} else if !isNotFound(err) {
		return im, fmt.Errorf("checking %s: %w", ref.Name(), err)
	}
	blobs, err := collectBlobs(ctx, content, origin)
	if err != nil {
		return im, fmt.Errorf("reading %s: %w", ref.Name(), err)
	}
	c, err := p.client(ctx, dst)
	if err != nil {
		return im, err
	}
	for _, b := range blobs {
		im.Blobs++
		im.Bytes += b.size
		if b.layer != nil {
			// Its digest is known only once read: it would be sent.
			im.Upload++
			continue
		}
		ok, err := p.exists(ctx, c, dst, b)
		if err != nil {
			return im, err
		}
		if ok {
			im.Existing++
			im.ExistingBytes += b.size
			im.ExistingDigests = append(im.ExistingDigests, b.digest.String())
			continue
		}
		if p.mountable(ctx, c, dst, b) {
			im.Mountable++
			im.MountableBytes += b.size
		} else {
			im.Upload++
			im.UploadBytes += b.size
		}
		p.addHolder(p.key(dst.RegistryStr(), b.digest), dst)
	}
	return im, nil
}

// mountable reports whether a repository of dst's registry that a mount
// would try holds b (a HEAD on each candidate; one the plan already
// carried b to counts without asking).
func (p *pusher) mountable(ctx context.Context, c *http.Client, dst name.Repository, b blob) bool {
	p.mu.Lock()
	planned := len(p.holders[p.key(dst.RegistryStr(), b.digest)]) > 0
	p.mu.Unlock()
	if planned {
		return true
	}
	for _, from := range p.mountCandidates(dst, b) {
		if ok, err := p.exists(ctx, c, from, b); err == nil && ok {
			return true
		}
	}
	return false
}
