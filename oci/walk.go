package oci

import (
	"bytes"
	"context"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Walk is the one walk of a manifest graph in ssebench: it visits root and
// every node that children reaches from it, depth first, a node before its
// children and children in the order children returns them (the order of
// the index or manifest that lists them). The typed walks below
// (WalkManifests over descriptors, WalkContent over go-containerregistry
// images and indexes) are Walk with a children function.
//
// A node reached by several paths (a layer or config shared by the images
// of an index, an image listed twice) is visited once, with everything
// under it: key names a node, and a node whose key was seen is skipped.
// key returns "" for a node with no name yet (the root of a push whose
// manifest names layers not yet read), which is always visited. Walk checks
// ctx before each node, so a cancelled command stops between nodes. An
// error of visit or children stops the walk and is returned as it is.
func Walk[N any](ctx context.Context, root N, key func(N) string, children func(N) ([]N, error), visit func(N) error) error {
	seen := map[string]bool{}
	var walk func(n N) error
	walk = func(n N) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if k := key(n); k != "" {
			if seen[k] {
				return nil
			}
			seen[k] = true
		}
		if err := visit(n); err != nil {
			return err
		}
		cs, err := children(n)
		if err != nil {
			return err
		}
		for _, c := range cs {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(root)
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
func WalkManifests(ctx context.Context, root v1.Descriptor, image string, read func(v1.Descriptor) ([]byte, error), visit func(d v1.Descriptor, manifest bool) error) error {
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
	return Walk(ctx, node{d: root, manifest: true},
		func(n node) string { return n.d.Digest.String() },
		children,
		func(n node) error { return visit(n.d, n.manifest) })
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
func WalkContent(ctx context.Context, root Content, visit func(Content) error) error {
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
		return n.d.Digest.String()
	}
	return Walk(ctx, &node{c: root}, key, children, func(n *node) error {
		if err := open(n); err != nil {
			return err
		}
		return visit(n.c)
	})
}
