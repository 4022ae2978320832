package agentimage

import (
	"context"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// Added is what an agent's build added to the image it was built on: its
// layers, with the history entries of the instructions after FROM, and its
// config. Each layer and the config have passed the policy.
type Added struct {
	Layers  []v1.Layer
	History []v1.History // every entry after the base's, empty layers too
	Config  *v1.ConfigFile
}

// CheckAdded checks the layers and the config that built adds to base: the
// base's layers must be built's first layers (same digests, or it is
// refused), and every added layer, entry by entry in one streaming pass,
// and the config must pass pol. It is what ssebench verify --tool runs on
// a prebuilt agent image (base is then the tool image itself).
func CheckAdded(ctx context.Context, base, built v1.Image, pol *Policy) (*Added, error) {
	bl, err := base.Layers()
	if err != nil {
		return nil, fmt.Errorf("reading the layers of the base image: %w", err)
	}
	al, err := built.Layers()
	if err != nil {
		return nil, fmt.Errorf("reading the layers of the agent image: %w", err)
	}
	if len(al) < len(bl) {
		return nil, fmt.Errorf("%w: it has %d layers, the base %d: build it FROM %s", ErrNotOnBase, len(al), len(bl), BaseContext)
	}
	for i, l := range bl {
		want, err := l.Digest()
		if err != nil {
			return nil, err
		}
		got, err := al[i].Digest()
		if err != nil {
			return nil, err
		}
		if got != want {
			return nil, fmt.Errorf("%w: layer %d is %s, the base's is %s: build it FROM %s", ErrNotOnBase, i+1, got, want, BaseContext)
		}
	}
	bcf, err := base.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of the base image: %w", err)
	}
	cf, err := built.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of the agent image: %w", err)
	}
	if err := pol.CheckConfig(cf.Config); err != nil {
		return nil, err
	}
	add := &Added{Layers: al[len(bl):], Config: cf}
	// The history after the base's; an image without history (a hand-made
	// one) gets an entry per layer.
	if len(cf.History) >= len(bcf.History) && len(bcf.History) > 0 {
		add.History = cf.History[len(bcf.History):]
	}
	if nonEmpty(add.History) != len(add.Layers) {
		add.History = make([]v1.History, len(add.Layers))
		for i := range add.History {
			add.History[i] = v1.History{Created: cf.Created, Comment: "agent layer"}
		}
	}
	pol.links = map[string]bool{} // a new image: no agent symlink yet
	for i, l := range add.Layers {
		d, err := l.Digest()
		if err != nil {
			return nil, err
		}
		what := fmt.Sprintf("agent layer %d (%.19s)", i+1, d)
		if err := pol.CheckLayer(ctx, what, l); err != nil {
			return nil, err
		}
	}
	return add, nil
}

func nonEmpty(h []v1.History) int {
	n := 0
	for _, e := range h {
		if !e.EmptyLayer {
			n++
		}
	}
	return n
}

// Graft makes the agent image: the layers built (an image built on blind,
// see Blind) added to blind, checked by pol (see CheckAdded), appended to
// blind with their history, and built's config. The agent image keeps the
// blind layer: the agent container runs it (SPEC.md section 17.1) and
// holds no byte of the task's answers, in any layer, while the task
// container runs tool. Nothing of the agent's build saw the answers;
// nothing the policy refuses reaches the image. The manifest names tool
// (AnnotationBaseDigest): the image a run's task container runs beside
// it. The result is the same for the same inputs.
func Graft(ctx context.Context, tool, blind, built v1.Image, pol *Policy) (v1.Image, error) {
	return graft(ctx, blind, tool, blind, built, pol)
}

// Graft grafts built onto g: onto g.Blind (see the package function
// Graft), or onto g.Tool itself when g.OntoTool says so.
func (g *GraftTarget) Graft(ctx context.Context, built v1.Image) (v1.Image, error) {
	onto := g.Blind
	if g.OntoTool {
		onto = g.Tool
	}
	return graft(ctx, onto, g.Tool, g.Blind, built, g.Policy)
}

// graft appends what built adds to blind onto onto (blind, or tool).
func graft(ctx context.Context, onto, tool, blind, built v1.Image, pol *Policy) (v1.Image, error) {
	add, err := CheckAdded(ctx, blind, built, pol)
	if err != nil {
		return nil, err
	}
	tcf, err := onto.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config of the tool image: %w", err)
	}
	out := onto
	if len(add.Layers) > 0 {
		adds := make([]mutate.Addendum, 0, len(add.Layers))
		j := 0
		for _, h := range add.History {
			if h.EmptyLayer {
				continue
			}
			adds = append(adds, mutate.Addendum{Layer: add.Layers[j], History: h})
			j++
		}
		if out, err = mutate.Append(onto, adds...); err != nil {
			return nil, fmt.Errorf("grafting the agent's layers: %w", err)
		}
	}
	ncf, err := out.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("computing the agent image's config: %w", err)
	}
	ncf = ncf.DeepCopy()
	ncf.Config = add.Config.Config
	ncf.Created = add.Config.Created
	ncf.History = append(tcf.DeepCopy().History, add.History...)
	if out, err = mutate.ConfigFile(out, ncf); err != nil {
		return nil, fmt.Errorf("setting the agent image's config: %w", err)
	}
	dig, err := tool.Digest()
	if err != nil {
		return nil, fmt.Errorf("reading the digest of the tool image: %w", err)
	}
	return mutate.Annotations(out, map[string]string{AnnotationBaseDigest: dig.String()}).(v1.Image), nil
}
