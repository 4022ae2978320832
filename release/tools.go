package release

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/registry/trust"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// What became of a tool image, as ToolImage.Result says.
const (
	// ToolAssembled is an image assembled into the store, not pushed.
	ToolAssembled = "assembled"
	// ToolPushed is an image pushed (and signed, when the Env signs).
	ToolPushed = "pushed"
	// ToolUnchanged is an image the registry already held, signed when
	// the Env signs: nothing was moved.
	ToolUnchanged = "unchanged"
)

// ToolImage is one tool image Tools made.
type ToolImage struct {
	Task   string
	Name   string
	Digest v1.Hash
	// Result is ToolAssembled, ToolPushed or ToolUnchanged.
	Result string
	// Signed says the image was pushed by an Env that signs; Push what
	// pushing moved (nil when not pushed).
	Signed bool
	Push   *remote.PushReport
}

// ToolsReport is what Tools did: each image, in the order of the tasks,
// then the figures.
type ToolsReport struct {
	Images             []ToolImage
	Rebuilt, Unchanged int
	// Push is the sum of the images' reports; nil when nothing was pushed.
	Push *remote.PushReport
}

// ToolsOption is an option of Tools.
type ToolsOption func(*toolsOptions) error

type toolsOptions struct {
	tasks    []string
	caseTag  string
	platform *v1.Platform
	access   *remote.Access
	progress func(ToolImage)
}

// WithTasks limits Tools to these task ids; an id that is not a task of
// the dataset is refused before anything is built. The default is every
// task of the dataset.
func WithTasks(ids []string) ToolsOption {
	return func(o *toolsOptions) error {
		o.tasks = ids
		return nil
	}
}

// WithCaseTag is the tag of the case images the tool images are
// assembled on. The default is the dataset's version.
func WithCaseTag(tag string) ToolsOption {
	return func(o *toolsOptions) error {
		o.caseTag = tag
		return nil
	}
}

// WithPlatform is the platform to assemble for. The default (nil) is each
// case image's.
func WithPlatform(p *v1.Platform) ToolsOption {
	return func(o *toolsOptions) error {
		o.platform = p
		return nil
	}
}

// WithPush pushes the tool images the registry does not already hold
// through acc, and signs them when the Env signs. The default is not to
// push.
func WithPush(acc *remote.Access) ToolsOption {
	return func(o *toolsOptions) error {
		if acc == nil {
			return errors.New("release.WithPush: no registry access")
		}
		o.access = acc
		return nil
	}
}

// WithToolProgress calls f with each tool image as soon as it is made (or
// found unchanged). The default is no call.
func WithToolProgress(f func(ToolImage)) ToolsOption {
	return func(o *toolsOptions) error {
		o.progress = f
		return nil
	}
}

func makeToolsOptions(ds *task.Dataset, opts []ToolsOption) (*toolsOptions, error) {
	o := &toolsOptions{caseTag: ds.Version, progress: func(ToolImage) {}}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if o.caseTag == "" {
		o.caseTag = ds.Version
	}
	return o, nil
}

// Tools assembles the tool image of each task of ds on its published case
// image, with e's runtime: the CI job of a runtime bump. Every case image
// is found before anything is assembled or pushed. With WithPush, a tool
// image the registry lacks is pushed and signed as `assemble tool --push`
// does (which also publishes the facts of the case layers it read); one
// it holds is compared first, and pushed and signed only when it changed.
func Tools(ctx context.Context, e *pipeline.Env, ds *task.Dataset, opts ...ToolsOption) (*ToolsReport, error) {
	o, err := makeToolsOptions(ds, opts)
	if err != nil {
		return nil, err
	}
	tasks, err := pickTasks(ds, o.tasks)
	if err != nil {
		return nil, err
	}
	// A dataset that is not published fails at once, saying so.
	r, err := e.Resolver(o.platform)
	if err != nil {
		return nil, err
	}
	for _, t := range tasks {
		caseRef := e.Names.CaseTagged(ds.Name, t.ID, o.caseTag)
		if _, err := r.Resolve(ctx, caseRef); err != nil {
			return nil, fmt.Errorf("the case image of %s, %s, cannot be had: publish the dataset first (`ssebench dataset publish %s`) or name its tag with --case-tag (%w)", t.ID, caseRef, ds.Dir, err)
		}
	}
	// The runtime's layers are in its repository (`runtime build --push`
	// just put them there): every push mounts them from there rather than
	// upload them into each tool repository. The Env is the caller's, so
	// its options are as they were once Tools returns.
	if ref, err := name.ParseReference(runtimebin.Ref(e.RuntimeRef, "", e.Names.Runtime()), name.WeakValidation); err == nil {
		saved := e.RegistryOptions
		e.RegistryOptions = append(slices.Clip(saved), remote.WithMountFrom(ref.Context().Name()))
		defer func() { e.RegistryOptions = saved }()
	}
	out := &ToolsReport{Images: []ToolImage{}}
	total := &remote.PushReport{}
	for _, t := range tasks {
		img, err := tool(ctx, e, o, ds, t)
		if err != nil {
			return nil, err
		}
		total.Merge(img.Push)
		switch img.Result {
		case ToolPushed:
			out.Rebuilt++
		case ToolUnchanged:
			out.Unchanged++
		}
		out.Images = append(out.Images, img)
		o.progress(img)
	}
	if o.access != nil {
		out.Push = total
	}
	return out, nil
}

// tool makes the tool image of t, pushing it when o says so.
func tool(ctx context.Context, e *pipeline.Env, o *toolsOptions, ds *task.Dataset, t *task.Task) (ToolImage, error) {
	caseRef := e.Names.CaseTagged(ds.Name, t.ID, o.caseTag)
	req := pipeline.ToolRequest{Case: caseRef, Task: t.ID, SourceDir: t.Config.Source, Platform: o.platform}
	push := o.access != nil
	// A tool image the registry does not have yet is pushed by e.Tool;
	// the others are compared first.
	known := false
	if push {
		_, known = registryDigest(ctx, o.access, e.Names.Tool(t.ID))
		req.Push = !known
	}
	b, err := e.Tool(ctx, req)
	if err != nil {
		return ToolImage{}, fmt.Errorf("the tool image of %s: %w", t.ID, err)
	}
	img := ToolImage{Task: t.ID, Name: b.Name, Digest: b.Digest, Result: ToolAssembled}
	if !push {
		return img, nil
	}
	rep, pushed := b.Push, true
	if known {
		if rep, pushed, err = pushChangedTool(ctx, e, o.access, b, caseRef); err != nil {
			return ToolImage{}, err
		}
	}
	img.Signed = e.Trust != nil && e.Trust.Signer != nil
	img.Push = rep
	img.Result = ToolUnchanged
	if pushed {
		img.Result = ToolPushed
	}
	return img, nil
}

// pickTasks returns the dataset's tasks named in ids (all when empty); an
// unknown id is refused before anything is built.
func pickTasks(ds *task.Dataset, ids []string) ([]*task.Task, error) {
	if len(ids) == 0 {
		return ds.Tasks, nil
	}
	byID := map[string]*task.Task{}
	for _, t := range ds.Tasks {
		byID[t.ID] = t
	}
	var out []*task.Task
	for _, id := range ids {
		t, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("--tasks: %q is not a task of %s: see `ssebench tasks list --catalog %s`", id, ds.Dir, ds.Dir)
		}
		out = append(out, t)
	}
	return out, nil
}

// registryDigest returns the digest the registry holds under ref, and
// whether it holds one.
func registryDigest(ctx context.Context, acc *remote.Access, ref string) (v1.Hash, bool) {
	r, err := name.ParseReference(ref, name.WeakValidation)
	if err != nil {
		return v1.Hash{}, false
	}
	repo, ropts, err := acc.Repository(ctx, r.Context().Name())
	if err != nil {
		return v1.Hash{}, false
	}
	desc, err := ggremote.Head(repo.Tag(r.Identifier()), ropts...)
	if err != nil {
		return v1.Hash{}, false
	}
	return desc.Digest, true
}

// pushChangedTool pushes the tool image b from the store and signs it,
// unless the registry already holds it under its tag (and, when this
// machine signs, with a signature its key verifies): then it moves nothing
// and reports every blob of the image as skipped. A CI job that runs after
// every runtime change thus pushes and signs only the tool images the
// change reached.
func pushChangedTool(ctx context.Context, e *pipeline.Env, acc *remote.Access, b *pipeline.Built, caseRef string) (rep *remote.PushReport, pushed bool, err error) {
	ref, err := name.ParseReference(b.Name, name.WeakValidation)
	if err != nil {
		return nil, false, err
	}
	img, err := e.Store.Image(ref)
	if err != nil {
		return nil, false, err
	}
	repo, ropts, err := acc.Repository(ctx, ref.Context().Name())
	if err != nil {
		return nil, false, err
	}
	signer := e.Trust != nil && e.Trust.Signer != nil
	if d, ok := registryDigest(ctx, acc, b.Name); ok && d == b.Digest {
		// Our own key, not the policy's trusted registries: an image
		// there unsigned still needs our signature.
		if !signer || (&trust.Policy{Key: &e.Trust.Signer.PublicKey}).Check(ctx, repo, b.Digest, ropts...) == nil {
			rep, err := alreadyThere(img)
			return rep, false, err
		}
	}
	// The case layers are in the case image's repository (and the
	// runtime's in its own, see Tools): on the same registry they are
	// mounted from there, not uploaded again.
	popts := []remote.Option{remote.WithStore(e.Store)}
	if cref, err := name.ParseReference(caseRef, name.WeakValidation); err == nil {
		popts = append(popts, remote.WithMountFrom(cref.Context().Name()))
	}
	popts = append(popts, e.RegistryOptions...)
	if rep, err = remote.Push(ctx, b.Name, img, popts...); err != nil {
		return nil, false, err
	}
	if signer {
		if err := e.Trust.Sign(ctx, repo, b.Digest, ropts...); err != nil {
			return nil, false, fmt.Errorf("signing the tool image %s: %w", b.Name, err)
		}
	}
	return rep, true, nil
}

// alreadyThere is the report of an image the registry holds: its config
// and layers all skipped.
func alreadyThere(img v1.Image) (*remote.PushReport, error) {
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	rep := &remote.PushReport{Skipped: m.Config.Size, SkippedBlobs: 1}
	for _, l := range m.Layers {
		rep.Skipped += l.Size
		rep.SkippedBlobs++
	}
	return rep, nil
}
