package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/pkg/archive"
	"github.com/containerd/containerd/v2/pkg/archive/compression"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/moby/sys/userns"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
)

// errNotWritableHere means an extract snapshot's mounts are not one
// directory this process can write (several mounts, an unknown type, a
// path outside its mount namespace, a user namespace): containerd applies
// the layer instead.
var errNotWritableHere = errors.New("the snapshot is not writable from this process")

// unpackFromStore writes layer, read from its file in the store st, into
// the extract snapshot whose mounts are mounts, and checks that its
// uncompressed content is diffID.
//
// This is what containerd's own applier does (core/diff/apply: an
// overlay's upper directory written directly, whiteouts converted to
// overlay's, or a bind-mounted directory), in this process: the
// compressed bytes go from the store's file through the decompressor into
// the snapshot once, where an import that hands containerd the layer first
// writes the blob into its content store (a second copy on disk, synced),
// and containerd reads it back to unpack it. The store's reader checks the
// blob's digest at its end; the tar stream's digest is checked against the
// config's diff id before the snapshot is committed.
func unpackFromStore(ctx context.Context, st *store.Store, layer ocispec.Descriptor, diffID digest.Digest, mounts []mount.Mount) error {
	dir, opts, ok := applyTarget(mounts)
	if !ok {
		return errNotWritableHere
	}
	h, err := v1.NewHash(layer.Digest.String())
	if err != nil {
		return fmt.Errorf("blob %s: %w", layer.Digest, err)
	}
	rc, err := st.Blob(h, layer.Size)
	if err != nil {
		return err
	}
	defer rc.Close()
	ds, err := compression.DecompressStream(rc)
	if err != nil {
		return fmt.Errorf("reading layer %s from the store: %w", layer.Digest, err)
	}
	defer ds.Close()
	dg := digest.Canonical.Digester()
	tr := io.TeeReader(ds, dg.Hash())
	if _, err := archive.Apply(ctx, dir, tr, opts...); err != nil {
		return err
	}
	// The tar's end-of-archive blocks, and the compressed stream's own end,
	// which the store's reader verifies when it reaches it.
	if _, err := io.Copy(io.Discard, tr); err != nil {
		return fmt.Errorf("reading layer %s from the store: %w", layer.Digest, err)
	}
	if _, err := io.Copy(io.Discard, rc); err != nil {
		return fmt.Errorf("reading layer %s from the store: %w", layer.Digest, err)
	}
	if got := dg.Digest(); got != diffID {
		return fmt.Errorf("its content has diff id %s, the config says %s", got, diffID)
	}
	return nil
}

// applyTarget is the directory a layer is written into for an extract
// snapshot's mounts, and how: an overlay's upper directory with its lower
// directories as parents and overlay whiteouts, or the source of a bind
// mount (the first layer of overlayfs, any layer of native). ok is false
// for anything else.
func applyTarget(mounts []mount.Mount) (dir string, opts []archive.ApplyOpt, ok bool) {
	if len(mounts) != 1 || userns.RunningInUserNS() {
		return "", nil, false
	}
	m := mounts[0]
	switch m.Type {
	case "overlay":
		var lowers []string
		for _, o := range m.Options {
			if v, ok := strings.CutPrefix(o, "upperdir="); ok {
				dir = v
			} else if v, ok := strings.CutPrefix(o, "lowerdir="); ok {
				lowers = strings.Split(v, ":")
			}
		}
		opts = append(opts, archive.WithConvertWhiteout(archive.OverlayConvertWhiteout))
		if len(lowers) > 0 {
			opts = append(opts, archive.WithParents(lowers))
		}
	case "bind":
		for _, o := range m.Options {
			if o == "ro" {
				return "", nil, false
			}
		}
		dir = m.Source
	}
	if dir == "" {
		return "", nil, false
	}
	// containerd on this machine, seen from this mount namespace.
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", nil, false
	}
	return dir, opts, true
}
