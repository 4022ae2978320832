package pipeline

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/oci"
)

// The reference run: the agent whose agent.yaml is named ReferenceAgent
// gets the task's reference patch, copied out of the case image, mounted
// read-only at ReferencePatchPath, and its container carries
// ReferenceRunLabel. No other run has either.
const (
	ReferenceAgent     = "reference"
	ReferencePatchPath = "/reference/patch.diff"
	ReferenceRunLabel  = "ssebench.reference-run"
)

// maxReferencePatch bounds the reference patch copied out of a case image:
// a diff is kilobytes, and the case image is not trusted to be reasonable.
const maxReferencePatch = 64 << 20

// errPatchTooLarge stops the copy of a patch over maxReferencePatch.
var errPatchTooLarge = errors.New("larger than 64 MiB")

// referencePatch copies /ssebench/<patch> out of the case image caseRef
// (platform plat) into a new temporary file and returns its path and a
// function that removes it. Only the layer that holds the file is read
// whole; the others are indexed (from the facts cache when it has them).
func (e *Env) referencePatch(ctx context.Context, caseRef, patch string, plat *v1.Platform) (string, func(), error) {
	if patch == "" {
		return "", nil, errors.New("the reference agent applies the task's files.patch, and this task's config names none")
	}
	r, err := e.Resolver(plat)
	if err != nil {
		return "", nil, err
	}
	img, err := r.Image(ctx, caseRef)
	if err != nil {
		return "", nil, fmt.Errorf("finding the case image for the reference patch: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return "", nil, fmt.Errorf("reading the case image %s: %w", caseRef, err)
	}
	view, err := e.Facts.View(ctx, layers)
	if err != nil {
		return "", nil, fmt.Errorf("reading the case image %s: %w", caseRef, err)
	}
	// The path is the config's, checked relative; Resolve keeps symlinks
	// inside the image's root.
	p := path.Join(contract.TaskRoot, path.Clean("/"+patch))
	n, ok := view.Resolve(p)
	if !ok || n.Header.Typeflag != tar.TypeReg {
		return "", nil, fmt.Errorf("the case image %s has no file %s (the task's files.patch): rebuild it from the task folder", caseRef, p)
	}
	if n.Header.Size > maxReferencePatch {
		return "", nil, fmt.Errorf("the reference patch %s of %s is %s", p, caseRef, errPatchTooLarge)
	}
	dir, err := os.MkdirTemp("", "ssebench-reference-")
	if err != nil {
		return "", nil, fmt.Errorf("copying the reference patch: %w", err)
	}
	cleanup := func() { os.RemoveAll(dir) }
	// Readable by every uid: the container's model user reads it through
	// the read-only bind mount.
	if err := os.Chmod(dir, 0o755); err != nil {
		cleanup()
		return "", nil, err
	}
	dst := filepath.Join(dir, "patch.diff")
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("copying the reference patch: %w", err)
	}
	err = oci.ReadFiles(ctx, layers, []oci.Node{n}, func(_ oci.Node, rd io.Reader) error {
		_, err := io.Copy(f, io.LimitReader(rd, maxReferencePatch))
		return err
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("copying the reference patch %s out of %s: %w", p, caseRef, err)
	}
	return dst, cleanup, nil
}

// prepareReferencePatch copies the task's reference patch out of the case
// image for a reference run, and no other, into r.refPatch; the function
// it returns removes the copy.
func (e *Env) prepareReferencePatch(ctx context.Context, r *runState) (func(), error) {
	if !r.reference {
		return func() {}, nil
	}
	if r.ri == nil {
		return nil, errors.New("the reference agent needs the case image to copy the reference patch from: it cannot run with --prebuilt")
	}
	p, cleanup, err := e.referencePatch(ctx, r.ri.Case, r.ri.Patch, r.plat)
	if err != nil {
		return nil, err
	}
	r.refPatch = p
	return cleanup, nil
}
