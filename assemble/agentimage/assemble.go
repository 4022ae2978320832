package agentimage

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/42-b3yond-6ug/ssebench/oci"
)

// AnnotationBaseDigest is the manifest annotation naming the image an
// agent image was built on: the tool image's manifest digest.
const AnnotationBaseDigest = "org.opencontainers.image.base.digest"

// Image is an agent image assembled natively. Its new layers live in spool
// files until Close; write the image (to the store or a registry) before
// that.
type Image struct {
	v1.Image
	spools []*oci.SpooledLayer
}

// Close removes the spool files of the new layers.
func (i *Image) Close() error {
	var errs []error
	for _, s := range i.spools {
		errs = append(errs, s.Remove())
	}
	return errors.Join(errs...)
}

// Assemble builds the agent image of a native plan on the tool image,
// without a daemon: the config changes of its instructions, one layer for
// each COPY, ADD and WORKDIR (written to spool files in WithTempDir), and
// a history entry for each instruction after FROM, as BuildKit writes them.
// contextDir is the agent folder (the build context); workspaceDir is the
// SSEBench home (the workspace context of COPY --from=workspace).
//
// The tool image's layers are read only when a COPY, ADD or WORKDIR needs
// its filesystem (see WithFacts and WithLowerView); a Dockerfile that only
// changes the config, like the dummy agent's, reads nothing but the tool
// image's config.
//
// A problem with the Dockerfile or its sources is an *Error naming the
// line; one only BuildKit can handle (an ADD of a tar archive, a variable
// that turns out to hold a symbolic --chmod) matches ErrNeedsBuildKit. A
// plan that is not native is refused. Nothing is left in the temporary
// directory on error.
func Assemble(ctx context.Context, tool v1.Image, plan *Plan, contextDir, workspaceDir string, opts ...Option) (_ *Image, retErr error) {
	if plan == nil {
		return nil, errors.New("assembling the agent image: no plan")
	}
	if !plan.Native {
		return nil, plan.lineError(0, fmt.Errorf("%s: %w", plan.Reason, ErrNeedsBuildKit))
	}
	o, err := makeOptions(opts...)
	if err != nil {
		return nil, err
	}
	cf, err := tool.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of the tool image: %w", err)
	}
	if len(cf.Config.OnBuild) > 0 {
		return nil, plan.lineError(0, fmt.Errorf("the tool image has ONBUILD triggers, which run commands: %w", ErrNeedsBuildKit))
	}
	if o.when.IsZero() {
		o.when = defaultTime(cf)
	}
	cfg, steps, err := plan.evaluate(cf, o.build, false)
	if err != nil {
		return nil, err
	}
	if err := CheckConfig(cf.Config, cfg); err != nil {
		return nil, plan.lineError(0, err)
	}

	img := &Image{}
	defer func() {
		if retErr != nil {
			img.Close()
		}
	}()
	layers, err := tool.Layers()
	if err != nil {
		return nil, fmt.Errorf("reading the layers of the tool image: %w", err)
	}
	fsys := &imageFS{ctx: ctx, o: o, layers: layers, view: o.view, overlay: layerSet{},
		contexts: map[bool]*contextFS{}, dirs: [2]string{contextDir, workspaceDir}}
	created := v1.Time{Time: o.when}
	var (
		adds    []mutate.Addendum
		history []v1.History
	)
	for _, s := range steps {
		h := v1.History{Created: created, CreatedBy: s.createdBy, Comment: historyComment, EmptyLayer: s.op == nil}
		history = append(history, h)
		if s.op == nil {
			continue
		}
		l, err := fsys.layer(s.op)
		if err != nil {
			return nil, plan.lineError(s.in.line, err)
		}
		img.spools = append(img.spools, l)
		adds = append(adds, mutate.Addendum{Layer: l, History: h})
	}

	out := tool
	if len(adds) > 0 {
		if out, err = mutate.Append(tool, adds...); err != nil {
			return nil, fmt.Errorf("appending layers: %w", err)
		}
	}
	ncf, err := out.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("computing the agent image's config: %w", err)
	}
	ncf = ncf.DeepCopy()
	ncf.Config = cfg
	ncf.Created = created
	ncf.History = append(cf.DeepCopy().History, history...)
	if out, err = mutate.ConfigFile(out, ncf); err != nil {
		return nil, fmt.Errorf("setting the agent image's config: %w", err)
	}
	dig, err := tool.Digest()
	if err != nil {
		return nil, fmt.Errorf("reading the digest of the tool image: %w", err)
	}
	img.Image = mutate.Annotations(out, map[string]string{AnnotationBaseDigest: dig.String()}).(v1.Image)
	return img, nil
}

// layer computes and writes the layer of one COPY, ADD or WORKDIR.
func (f *imageFS) layer(op *layerOp) (*oci.SpooledLayer, error) {
	if f.o.tempDir == "" {
		return nil, errors.New("no directory for layer spool files: see agentimage.WithTempDir")
	}
	cur := layerSet{}
	var err error
	if op.kind == "workdir" {
		err = f.workdir(op, cur)
	} else {
		err = f.copy(op, cur)
	}
	if err != nil {
		return nil, err
	}
	if err := f.withParents(cur); err != nil {
		return nil, err
	}
	l, err := oci.WriteLayer(f.ctx, f.o.tempDir, cur.entries(), oci.WithCompression(f.o.compression), oci.WithDefaultTime(f.o.when))
	if err != nil {
		return nil, err
	}
	for p, e := range cur {
		f.overlay[p] = e
	}
	return l.(*oci.SpooledLayer), nil
}

// DefaultTime is the build time of an agent image when none is given: the
// tool image's creation time, so that the same inputs give the same image.
// Pass it to BuildKit as BuildRequest.Time for the times to agree.
func DefaultTime(tool v1.Image) (time.Time, error) {
	cf, err := tool.ConfigFile()
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the config of the tool image: %w", err)
	}
	return defaultTime(cf), nil
}

func defaultTime(cf *v1.ConfigFile) time.Time {
	if cf.Created.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return cf.Created.UTC().Truncate(time.Second)
}
