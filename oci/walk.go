package oci

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The caps of every manifest graph walk. An image has a handful of nodes
// and an index of images a few levels; an archive or registry built to
// exhaust a walk (thousands of indexes that list each other) is refused
// with one line once it passes either cap, rather than run for minutes.
const (
	// MaxGraphNodes caps the nodes (manifests, configs, layers) one walk,
	// or the walks sharing a Budget, visit.
	MaxGraphNodes = 100_000
	// MaxGraphDepth caps how deep indexes nest: the root is at depth 0,
	// an image's layers one below its manifest.
	MaxGraphDepth = 16
)

// ErrGraphTooLarge is returned by a walk that passes MaxGraphNodes or
// MaxGraphDepth (or the caps of WithLimits).
var ErrGraphTooLarge = errors.New("the manifest graph is larger than any image needs")

// A WalkOption changes a walk: its caps, or state it shares with other
// walks of the same command.
type WalkOption func(*walkConfig)

type walkConfig struct {
	seen     map[string]bool
	budget   *Budget
	maxNodes int
	maxDepth int
}

// A Budget counts the nodes several walks visit together (one per entry of
// a store or archive), so that many entries naming one big graph cost no
// more than its cap in all; each walk keeps its own cap too.
type Budget struct{ nodes, max int }

// NewBudget returns a Budget of max nodes: MaxStoreNodes for the walks of
// a whole store.
func NewBudget(max int) *Budget { return &Budget{max: max} }

// MaxStoreNodes caps the nodes of the walks over every entry of a store or
// archive together: thousands of images of a few dozen blobs each.
const MaxStoreNodes = 10 * MaxGraphNodes

// WithBudget counts the walk's nodes in b against b's cap.
func WithBudget(b *Budget) WalkOption { return func(c *walkConfig) { c.budget = b } }

// WithSeen shares seen between walks: a node one walk visited is skipped by
// the next (a load checks each entry of an archive; entries share blobs).
func WithSeen(seen map[string]bool) WalkOption { return func(c *walkConfig) { c.seen = seen } }

// WithLimits sets the caps instead of MaxGraphNodes and MaxGraphDepth.
func WithLimits(nodes, depth int) WalkOption {
	return func(c *walkConfig) { c.maxNodes, c.maxDepth = nodes, depth }
}

// Walk is the one walk of a manifest graph in ssebench: it visits root and
// every node that children reaches from it, depth first, a node before its
// children and children in the order children returns them (the order of
// the index or manifest that lists them). The typed walks below
// (WalkManifests over descriptors, WalkContent over go-containerregistry
// images and indexes) are Walk with a children function.
//
// A node reached by several paths (a layer or config shared by the images
// of an index, an image listed twice) is visited once, with everything
// under it: key names a node, and a node whose key was seen is skipped, so
// the walk is linear in the distinct nodes however many paths reach them.
// key returns "" for a node with no name yet (the root of a push whose
// manifest names layers not yet read), which is always visited. Walk checks
// ctx before each node, so a cancelled command stops between nodes. Past
// the caps (MaxGraphNodes, MaxGraphDepth) it stops with ErrGraphTooLarge.
// An error of visit or children stops the walk and is returned as it is.
func Walk[N any](ctx context.Context, root N, key func(N) string, children func(N) ([]N, error), visit func(N) error, opts ...WalkOption) error {
	return walk(ctx, root, key, children, visit, nil, opts)
}

// WalkChildrenFirst is Walk visiting a node after everything under it: a
// push writes an index's manifests before the index that names them.
func WalkChildrenFirst[N any](ctx context.Context, root N, key func(N) string, children func(N) ([]N, error), visit func(N) error, opts ...WalkOption) error {
	return walk(ctx, root, key, children, nil, visit, opts)
}

func walk[N any](ctx context.Context, root N, key func(N) string, children func(N) ([]N, error), pre, post func(N) error, opts []WalkOption) error {
	c := walkConfig{maxNodes: MaxGraphNodes, maxDepth: MaxGraphDepth}
	for _, o := range opts {
		o(&c)
	}
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	nodes := 0
	var rec func(n N, depth int) error
	rec = func(n N, depth int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if k := key(n); k != "" {
			if c.seen[k] {
				return nil
			}
			c.seen[k] = true
		}
		if depth > c.maxDepth {
			return fmt.Errorf("%w: it nests more than %d deep; refusing it", ErrGraphTooLarge, c.maxDepth)
		}
		if nodes++; nodes > c.maxNodes {
			return fmt.Errorf("%w: it has more than %d manifests, configs and layers; refusing it", ErrGraphTooLarge, c.maxNodes)
		}
		if b := c.budget; b != nil {
			if b.nodes++; b.nodes > b.max {
				return fmt.Errorf("%w: its entries reach more than %d manifests, configs and layers in all; refusing them", ErrGraphTooLarge, b.max)
			}
		}
		if pre != nil {
			if err := pre(n); err != nil {
				return err
			}
		}
		cs, err := children(n)
		if err != nil {
			return err
		}
		for _, ch := range cs {
			if err := rec(ch, depth+1); err != nil {
				return err
			}
		}
		if post != nil {
			return post(n)
		}
		return nil
	}
	return rec(root, 0)
}

// WalkManifests walks the manifest graph of root through its descriptors:
// visit gets root, then for an index each child (and what it reaches), for
// an image manifest its config and then its distributable layers (foreign
// layers are never pushed or pulled, so no store or archive holds them).
// manifest is true for root and an index's children, which name manifests,
// and false for configs and layers. read returns the raw manifest of an
// index or image descriptor; it is called after visit, so a visit that
// finds the blob missing can stop the walk first. Only indexes and image
// manifests are read: a descriptor of another media type is a leaf. image
// names the graph in errors.
func WalkManifests(ctx context.Context, root v1.Descriptor, image string, read func(v1.Descriptor) ([]byte, error), visit func(d v1.Descriptor, manifest bool) error, opts ...WalkOption) error {
	type node struct {
		d        v1.Descriptor
		manifest bool
	}
	children := func(n node) ([]node, error) {
		if !n.manifest {
			return nil, nil
		}
		switch {
		case n.d.MediaType.IsIndex():
			raw, err := read(n.d)
			if err != nil {
				return nil, err
			}
			im, err := v1.ParseIndexManifest(bytes.NewReader(raw))
			if err != nil {
				return nil, fmt.Errorf("parsing index %s of %s: %w", n.d.Digest, image, err)
			}
			if im.MediaType != "" && !im.MediaType.IsIndex() {
				return nil, mislabelled(n.d, image, im.MediaType)
			}
			out := make([]node, 0, len(im.Manifests))
			for _, c := range im.Manifests {
				out = append(out, node{d: c, manifest: true})
			}
			return out, nil
		case n.d.MediaType.IsImage():
			raw, err := read(n.d)
			if err != nil {
				return nil, err
			}
			m, err := v1.ParseManifest(bytes.NewReader(raw))
			if err != nil {
				return nil, fmt.Errorf("parsing manifest %s of %s: %w", n.d.Digest, image, err)
			}
			if m.MediaType != "" && !m.MediaType.IsImage() {
				return nil, mislabelled(n.d, image, m.MediaType)
			}
			if m.Config.Digest.Hex == "" {
				// An index read as a manifest has no config: its
				// empty digest would make every later message
				// name a blob "".
				return nil, fmt.Errorf("manifest %s of %s names no config: it is listed as %q but is not an image manifest", n.d.Digest, image, n.d.MediaType)
			}
			out := []node{{d: m.Config}}
			for _, l := range m.Layers {
				if l.MediaType.IsDistributable() {
					out = append(out, node{d: l})
				}
			}
			return out, nil
		}
		return nil, nil
	}
	err := Walk(ctx, node{d: root, manifest: true},
		func(n node) string {
			if !n.manifest {
				return DescriptorKey(v1.Descriptor{Digest: n.d.Digest})
			}
			return DescriptorKey(n.d)
		},
		children,
		func(n node) error { return visit(n.d, n.manifest) }, opts...)
	return graphError(err, image, root.Digest.String())
}

// mislabelled is the error of a manifest listed under another media type
// than the one it says it has (an index listed as an image manifest).
func mislabelled(d v1.Descriptor, image string, actual types.MediaType) error {
	return fmt.Errorf("%s of %s is listed as %q but is %q: the listing is wrong", d.Digest, image, d.MediaType, actual)
}

// DescriptorKey is the key of a descriptor's node in a walk: its digest,
// and whether it is read as an index, an image manifest or neither. A
// digest listed both as a layer and as an index child is two nodes, so the
// index is read however the walk met it first; there are at most three
// nodes per digest, whatever media types a hostile manifest makes up.
func DescriptorKey(d v1.Descriptor) string {
	switch {
	case d.MediaType.IsIndex():
		return "index " + d.Digest.String()
	case d.MediaType.IsImage():
		return "image " + d.Digest.String()
	}
	return d.Digest.String()
}

// graphError names the graph in a cap's error.
func graphError(err error, image, root string) error {
	if !errors.Is(err, ErrGraphTooLarge) {
		return err
	}
	if image == "" {
		image = root
	}
	return fmt.Errorf("%s: %w", image, err)
}

// Content is an image (v1.Image) or an image index (v1.ImageIndex), as
// go-containerregistry's remote.Taggable is.
type Content interface {
	RawManifest() ([]byte, error)
}

// WalkContent walks an image or index and every image and index it
// reaches, for a caller that needs go-containerregistry's values rather
// than descriptors (the layers of a push, which may be stream layers whose
// digest is not known yet). root must be a v1.Image or a v1.ImageIndex;
// an index's children are opened with ImageIndex or Image by their media
// type, and a child of any other media type is an error. Configs and
// layers are not nodes: visit takes them from the image.
func WalkContent(ctx context.Context, root Content, visit func(Content) error, opts ...WalkOption) error {
	return walkContent(ctx, root, func(c Content, _ *v1.Descriptor) error { return visit(c) }, false, opts)
}

// WalkContentChildrenFirst is WalkContent visiting an index after the
// images and indexes it lists (a push or a store write puts a manifest
// only once what it names is there). visit also gets the descriptor the
// parent index lists the node under, nil for the root.
func WalkContentChildrenFirst(ctx context.Context, root Content, visit func(c Content, listed *v1.Descriptor) error, opts ...WalkOption) error {
	return walkContent(ctx, root, visit, true, opts)
}

func walkContent(ctx context.Context, root Content, visit func(Content, *v1.Descriptor) error, childrenFirst bool, opts []WalkOption) error {
	switch root.(type) {
	case v1.ImageIndex, v1.Image:
	default:
		return fmt.Errorf("%T is neither an image nor an image index", root)
	}
	// A child is opened only when the walk reaches it: after its elder
	// siblings, and never when it was visited already.
	type node struct {
		c      Content
		parent v1.ImageIndex
		d      v1.Descriptor
	}
	open := func(n *node) error {
		if n.c != nil {
			return nil
		}
		var err error
		switch {
		case n.d.MediaType.IsIndex():
			n.c, err = n.parent.ImageIndex(n.d.Digest)
		case n.d.MediaType.IsImage():
			n.c, err = n.parent.Image(n.d.Digest)
		default:
			err = fmt.Errorf("index child %s has media type %q, which is neither an image nor an index", n.d.Digest, n.d.MediaType)
		}
		return err
	}
	children := func(n *node) ([]*node, error) {
		if err := open(n); err != nil {
			return nil, err
		}
		idx, ok := n.c.(v1.ImageIndex)
		if !ok {
			return nil, nil
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, err
		}
		out := make([]*node, 0, len(im.Manifests))
		for _, d := range im.Manifests {
			out = append(out, &node{parent: idx, d: d})
		}
		return out, nil
	}
	// The root's digest is not known (computing it would read a stream
	// layer before its time): it has no key.
	key := func(n *node) string {
		if n.parent == nil {
			return ""
		}
		return DescriptorKey(n.d)
	}
	v := func(n *node) error {
		if err := open(n); err != nil {
			return err
		}
		if n.parent == nil {
			return visit(n.c, nil)
		}
		return visit(n.c, &n.d)
	}
	if childrenFirst {
		return WalkChildrenFirst(ctx, &node{c: root}, key, children, v, opts...)
	}
	return Walk(ctx, &node{c: root}, key, children, v, opts...)
}
