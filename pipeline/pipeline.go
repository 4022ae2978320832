// Package pipeline provides the steps that chain the four images of a run:
// finding the case image, assembling the tool image on it, and the agent
// image on that, with the store, the registry and BuildKit wired together.
// The CLI's commands are thin layers over it.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/agent"
	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/assemble/agentimage"
	"github.com/42-b3yond-6ug/ssebench/images/buildkit"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/registry/trust"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
	"github.com/42-b3yond-6ug/ssebench/task/catalog"
)

// Env is what every step needs: where images live and how to reach the
// daemons. Fill it in once per command.
type Env struct {
	// Home is the SSEBench home (datasets/, agents/).
	Home string
	// Names gives REGISTRY and VERSION.
	Names naming.Names
	// Store is the local image store.
	Store *store.Store
	// RegistryOptions are the pull policy, plain-HTTP hosts and the like;
	// the platform is added per step.
	RegistryOptions []remote.Option
	// ModuleDir is the ssebench source that images compiled on demand
	// (the model gateway of a cluster run) are built from; empty means
	// Home, which is a checkout when ssebench runs from one.
	ModuleDir string
	// RuntimeRef is the runtime image: --runtime, else
	// SSEBENCH_RUNTIME_IMAGE, else "" for REGISTRY/runtime:VERSION.
	RuntimeRef string
	// Facts caches what layers teach; nil caches nothing.
	Facts *assemble.Facts
	// Trust says what a registry's word is worth: layer facts and tool
	// images offered for reuse are believed only when it trusts them, and
	// what this machine publishes is signed with its signer. nil trusts
	// no registry.
	Trust *trust.Policy
	// BuildKit connects to buildkitd when a step needs it.
	BuildKit func(ctx context.Context) (*buildkit.Client, error)
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// Phase, when set, hears each long step of assembling a tool image
	// as it starts (see assemble.WithPhases), and storing and pushing it;
	// an empty phase says the tool image is done, however it ended.
	Phase func(phase string)
	// CatalogOptions are options of the catalogs runs open (the images
	// lock of SSEBENCH_IMAGES_LOCK); the registry options are added.
	CatalogOptions []catalog.Option

	// goBuilt remembers the agent folders whose go_build programs this
	// Env compiled, per platform: an evaluation builds an agent's image
	// for every task, and its program once.
	goMu    sync.Mutex
	goBuilt map[string]bool
	// gwImages are the gateway images pushed for cluster runs, by
	// platform (gatewayImage).
	gwMu     sync.Mutex
	gwImages map[string]string

	catMu sync.Mutex
	cats  map[string]*catalog.Catalog
	// Layers are the tool layers runs select from; nil means
	// DefaultToolLayers.
	Layers *ToolLayers
}

func (e *Env) phasef(format string, args ...any) {
	if e.Phase != nil {
		e.Phase(fmt.Sprintf(format, args...))
	}
}

func (e *Env) logf(format string, args ...any) {
	if e.Log != nil {
		fmt.Fprintf(e.Log, format+"\n", args...)
	}
}

// Resolver returns a resolver for platform p (nil: the host's).
func (e *Env) Resolver(p *v1.Platform) (*remote.Resolver, error) {
	opts := append([]remote.Option{remote.WithStore(e.Store)}, e.RegistryOptions...)
	if p != nil {
		opts = append(opts, remote.WithPlatform(p))
	}
	return remote.NewResolver(opts...)
}

// Built is an image a step made.
type Built struct {
	// Name is its reference, Digest its manifest digest.
	Name   string
	Digest v1.Hash
	// How says how it came to be, for the user: "assembled", "reused",
	// "built with BuildKit".
	How string
	// Reused says a tool image took its own layers from the previous one.
	Reused bool
	// Took is how long the step took.
	Took time.Duration
	// Push says what pushing the image moved; nil when it was not pushed.
	Push *remote.PushReport
	// OpenCode is the OpenCode version a tool image carries from its
	// runtime image ("" = none).
	OpenCode string
}

// FactsRepository is the repository under REGISTRY that holds the layer
// facts artifacts (see assemble.Facts.WithRemote).
const FactsRepository = "layer-facts"

// ToolRequest asks for a tool image.
type ToolRequest struct {
	// Case is the case image reference. Required.
	Case string
	// Task is the task id; SourceDir its SOURCE_DIR. Required.
	Task, SourceDir string
	// Platform is the platform to assemble for; nil means the case
	// image's.
	Platform *v1.Platform
	// Push also pushes the result to its registry; NoStore keeps it out
	// of the store (then Push is required).
	Push, NoStore bool
	// Sidecar makes the task image of sidecar mode instead,
	// REGISTRY/tool-sidecar/<task>:VERSION (SPEC.md section 7).
	Sidecar bool
}

// baseAndRuntime resolves the image a tool image is assembled on (the case
// image, or the OS image of tool-sidecar-agent: what) and the runtime image
// for its platform, p when set, else the base's; a runtime of another
// platform is refused.
func (e *Env) baseAndRuntime(ctx context.Context, ref, what string, p *v1.Platform) (base, rt *remote.Resolved, rref string, plat v1.Platform, err error) {
	r, err := e.Resolver(p)
	if err != nil {
		return nil, nil, "", plat, err
	}
	if base, err = r.Resolve(ctx, ref); err != nil {
		return nil, nil, "", plat, fmt.Errorf("finding the %s: %w", what, err)
	}
	cf, err := base.Image.ConfigFile()
	if err != nil {
		return nil, nil, "", plat, fmt.Errorf("reading the %s %s: %w", what, ref, err)
	}
	plat = v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
	if p != nil {
		plat = *p
	}
	rr, err := e.Resolver(&plat)
	if err != nil {
		return nil, nil, "", plat, err
	}
	rref = runtimebin.Ref(e.RuntimeRef, "", e.Names.Runtime())
	if rt, err = rr.Resolve(ctx, rref); err != nil {
		return nil, nil, "", plat, fmt.Errorf("finding the runtime image (build it with `ssebench runtime build`, or pass --runtime): %w", err)
	}
	if rt.Index == nil {
		if err := runtimebin.CheckPlatform(rref, rt.Image, plat); err != nil {
			return nil, nil, "", plat, err
		}
	}
	return base, rt, rref, plat, nil
}

// Tool assembles the tool image of a task (SPEC.md section 4) and records
// it in the store under REGISTRY/tool/<task>:VERSION, pushing it too when
// asked. When the tool image made before has the same inputs its own layers
// are reused and no case layer is read.
func (e *Env) Tool(ctx context.Context, req ToolRequest) (*Built, error) {
	if req.NoStore && !req.Push {
		return nil, errors.New("--no-store needs --push: the image must go somewhere")
	}
	caseRes, rtRes, rref, plat, err := e.baseAndRuntime(ctx, req.Case, "case image", req.Platform)
	if err != nil {
		return nil, err
	}
	rr, err := e.Resolver(&plat)
	if err != nil {
		return nil, err
	}
	toolName := e.Names.Tool(req.Task)
	assembleTool := assemble.Tool
	if req.Sidecar {
		toolName, assembleTool = e.Names.SidecarTask(req.Task), assemble.SidecarTask
	}
	ref, err := name.ParseReference(toolName, name.WeakValidation)
	if err != nil {
		return nil, fmt.Errorf("tool image name %q is not a valid reference: check REGISTRY (--registry or %s): %w", toolName, naming.RegistryEnv, err)
	}
	// Layer facts travel through the registry the images come from or go
	// to: a machine that pushes publishes what it learns, and one that
	// pulls the case image fetches facts instead of reading base layers.
	acc, err := remote.New(e.RegistryOptions...)
	if err != nil {
		return nil, err
	}
	if e.Facts != nil && (req.Push || caseRes.FromRegistry) {
		repo, ropts, err := acc.Repository(ctx, e.Names.Registry+"/"+FactsRepository)
		if err == nil {
			err = e.Facts.WithRemote(repo, req.Push, e.Trust, ropts...)
		}
		if err != nil {
			e.logf("warning: layer facts will not be shared through the registry: %v", err)
		}
	}
	opts := []assemble.ToolOption{
		assemble.WithSourceDir(req.SourceDir), assemble.WithTempDir(e.Store.TempDir()),
		assemble.WithFacts(e.Facts), assemble.WithRefs(req.Case, rref), assemble.WithPhases(func(p string) { e.phasef("%s: %s", req.Task, p) }),
	}
	if t, ok, err := SourceDateEpoch(); err != nil {
		return nil, err
	} else if ok {
		opts = append(opts, assemble.WithTime(t))
	}
	if prev, err := rr.Resolve(ctx, toolName); err == nil {
		// A tool image made here is reused as it is; one from a registry
		// only when trusted: its layers would go into the new image
		// unread, and its reuse key is a hash of public inputs that
		// anyone who can push the tag can match.
		if why := e.untrusted(ctx, acc, prev); why != nil {
			e.logf("warning: not reusing the layers of %s from %s: %v; assembling from the case image", toolName, prev.PulledFrom, why)
		} else {
			opts = append(opts, assemble.WithPrevious(prev.Image))
		}
	}
	start := time.Now()
	defer e.phasef("")
	ti, err := assembleTool(ctx, caseRes.Image, rtRes.Image, opts...)
	if err != nil {
		return nil, err
	}
	defer ti.Close()
	if !req.NoStore {
		e.phasef("%s: writing %s to the local store", req.Task, toolName)
		if err := e.Store.Write(ctx, ref, ti); err != nil {
			return nil, err
		}
	}
	var pushed *remote.PushReport
	if req.Push {
		// The case layers are in the case image's repository: on the same
		// registry they are mounted from there, not uploaded again.
		popts := append([]remote.Option{remote.WithStore(e.Store),
			remote.WithMountFrom(caseRes.Ref.Context().Name())}, e.RegistryOptions...)
		e.phasef("%s: pushing %s", req.Task, toolName)
		if pushed, err = remote.Push(ctx, toolName, ti, popts...); err != nil {
			return nil, err
		}
	}
	d, err := ti.Digest()
	if err != nil {
		return nil, err
	}
	if req.Push && e.Trust != nil && e.Trust.Signer != nil {
		repo, ropts, err := acc.Repository(ctx, ref.Context().Name())
		if err == nil {
			err = e.Trust.Sign(ctx, repo, d, ropts...)
		}
		if err != nil {
			return nil, fmt.Errorf("signing the tool image %s: %w", toolName, err)
		}
	}
	how := "assembled"
	if ti.Reused {
		how = "reassembled (system and source layers reused)"
	}
	b := &Built{Name: toolName, Digest: d, How: how, Reused: ti.Reused, Took: time.Since(start), Push: pushed, OpenCode: openCodeOf(rtRes.Image)}
	e.logf("%s %s in %s (tree %s)", how, toolName, b.Took.Round(time.Millisecond), ti.TreeID)
	if pushed != nil {
		e.logf("pushed %s: %s", toolName, pushed)
	}
	return b, nil
}

// AgentRequest asks for an agent image.
type AgentRequest struct {
	// Tool is the tool image reference; Folder the agent folder; Task the
	// task id. Required.
	Tool, Folder, Task string
	// BuildArgs are --build-arg values.
	BuildArgs map[string]string
	// Platform is the platform; nil means the tool image's.
	Platform *v1.Platform
	// Push also pushes the result to its registry.
	Push bool
	// Explain, when not nil, receives which path was taken and why.
	Explain io.Writer
	// Sidecar names the image agent-<name>/sidecar:<version>, the agent
	// image of sidecar mode, on Tool = tool-sidecar-agent (Task is then
	// not used).
	Sidecar bool
}

// Agent builds the agent image on a tool image (SPEC.md section 6):
// natively when its Dockerfile needs no container, else with BuildKit. It
// is recorded in the store under lowercase(REGISTRY/agent-<name>/<task>:
// <version>).
func (e *Env) Agent(ctx context.Context, req AgentRequest) (*Built, error) {
	a, err := agent.Load(e.Home, req.Folder)
	if err != nil {
		return nil, err
	}
	agentName := e.Names.Agent(a.Name, req.Task, a.Version)
	if req.Sidecar {
		agentName = e.Names.SidecarAgent(a.Name, a.Version)
	}
	ref, err := name.ParseReference(agentName, name.WeakValidation)
	if err != nil {
		return nil, fmt.Errorf("agent image name %q is not a valid reference: %w", agentName, err)
	}
	plan, err := agentimage.LoadPlan(a.Dir, req.BuildArgs)
	if err != nil {
		return nil, err
	}
	if req.Explain != nil {
		io.WriteString(req.Explain, plan.Explain())
	}
	r, err := e.Resolver(req.Platform)
	if err != nil {
		return nil, err
	}
	toolRes, err := r.Resolve(ctx, req.Tool)
	if err != nil {
		return nil, fmt.Errorf("finding the tool image: %w", err)
	}
	if len(a.GoBuild) > 0 {
		cf, err := toolRes.Image.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("reading the tool image's config: %w", err)
		}
		if err := e.goBuild(ctx, a, v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}); err != nil {
			return nil, err
		}
	}
	// One build time for both ways: SOURCE_DATE_EPOCH, else the tool
	// image's creation time.
	when, ok, err := SourceDateEpoch()
	if err != nil {
		return nil, err
	}
	if !ok {
		if when, err = agentimage.DefaultTime(toolRes.Image); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	// The agent's build runs blind (the tool image without the task's
	// answers, a workspace of its own folder only) and what it adds is
	// grafted onto the tool image through the agent policy.
	g, err := e.agentGraft(ctx, toolRes.Image, plan)
	if err != nil {
		return nil, err
	}
	// The sidecar agent runtime holds no answer: the agent's layers go
	// onto it as it is (its MCP server stays).
	g.OntoTool = req.Sidecar
	ws, err := agentimage.Workspace(e.Home, a.Dir, e.Store.TempDir())
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(ws)
	var d v1.Hash
	how := "assembled natively"
	if plan.Native {
		opts := []agentimage.Option{agentimage.WithTempDir(e.Store.TempDir()), agentimage.WithFacts(e.Facts), agentimage.WithTime(when)}
		if g.View != nil {
			opts = append(opts, agentimage.WithLowerView(g.View))
		}
		img, err := agentimage.Assemble(ctx, g.Blind, plan, a.Dir, ws, opts...)
		switch {
		case errors.Is(err, agentimage.ErrNeedsBuildKit):
			plan.Native = false
		case err != nil:
			return nil, err
		default:
			defer img.Close()
			out, err := g.Graft(ctx, img)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", filepath.Join(a.Dir, "Dockerfile"), err)
			}
			if err := e.Store.Write(ctx, ref, out); err != nil {
				return nil, err
			}
			if d, err = out.Digest(); err != nil {
				return nil, err
			}
		}
	}
	var memo, plat string
	if !plan.Native {
		how = "built with BuildKit"
		// The same inputs made this image before and the store still
		// names it: take it (BuildKit would take every step from its
		// cache, then export and graft the same layers again).
		cf, err := toolRes.Image.ConfigFile()
		if err != nil {
			return nil, err
		}
		plat = (&v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}).String()
		if memo, err = (agentimage.Inputs{Builder: agentimage.BuilderID(), Tool: toolRes.Descriptor.Digest, Dirs: []string{ws, a.Dir},
			BuildArgs: req.BuildArgs, Platform: plat, Time: when}).Key(); err != nil {
			return nil, err
		}
		if prev, ok := e.Store.Memo(memo); ok {
			if desc, err := e.Store.Descriptor(ref); err == nil && desc.Digest == prev {
				if img, err := e.Store.Image(ref); err == nil && img != nil {
					d, plan.Native, how = prev, true, "taken from an earlier build with the same inputs"
				}
			}
		}
	}
	if !plan.Native {
		if e.BuildKit == nil {
			return nil, fmt.Errorf("agent %s needs BuildKit (%s) and none is configured", req.Folder, plan.Reason)
		}
		bk, err := e.BuildKit(ctx)
		if err != nil {
			return nil, err
		}
		defer bk.Close()
		// The blind image must be whole in the store for buildkitd to
		// read it as an OCI layout.
		blindRef, err := blindRef(toolRes.Ref, g.Blind)
		if err != nil {
			return nil, err
		}
		if err := e.Store.Write(ctx, blindRef, g.Blind); err != nil {
			return nil, err
		}
		src, err := agentimage.ToolFromStore(e.Store, blindRef)
		if err != nil {
			return nil, err
		}
		if d, err = agentimage.BuildKit(ctx, bk, agentimage.BuildRequest{
			AgentDir: a.Dir, Home: ws, Tool: src, BuildArgs: req.BuildArgs,
			Platform: plat, Store: e.Store, Ref: ref, Time: when, Graft: g,
		}); err != nil {
			return nil, err
		}
		if err := e.Store.SetMemo(memo, d); err != nil {
			e.logf("warning: %v", err)
		}
	}
	var pushed *remote.PushReport
	if req.Push {
		img, err := e.Store.Image(ref)
		if err != nil {
			return nil, err
		}
		// With the store, the push knows which repositories hold the
		// tool's layers (the case and tool repositories it pushed or
		// pulled) and mounts them instead of uploading them again.
		popts := append([]remote.Option{remote.WithStore(e.Store), remote.WithMountFrom(toolRes.Ref.Context().Name())}, e.RegistryOptions...)
		if pushed, err = remote.Push(ctx, agentName, img, popts...); err != nil {
			return nil, err
		}
	}
	b := &Built{Name: agentName, Digest: d, How: how, Took: time.Since(start), Push: pushed}
	e.logf("%s %s in %s", how, agentName, b.Took.Round(time.Millisecond))
	return b, nil
}

// agentGraft returns what an agent image is grafted onto: tool, its blind
// image and the agent policy. A native plan that adds layers reads the
// blind image's filesystem anyway: its view is indexed once, for the
// assembly and the policy.
func (e *Env) agentGraft(ctx context.Context, tool v1.Image, plan *agentimage.Plan) (*agentimage.GraftTarget, error) {
	blind, err := agentimage.Blind(tool)
	if err != nil {
		return nil, err
	}
	g := &agentimage.GraftTarget{Tool: tool, Blind: blind}
	popts := []agentimage.PolicyOption{agentimage.WithPolicyFacts(e.Facts)}
	if plan.Native && plan.AddsLayers() {
		layers, err := blind.Layers()
		if err != nil {
			return nil, err
		}
		if g.View, err = e.Facts.View(ctx, layers); err != nil {
			return nil, fmt.Errorf("reading the tool image: %w", err)
		}
		popts = append(popts, agentimage.WithPolicyView(g.View))
	}
	if g.Policy, err = agentimage.NewPolicy(tool, popts...); err != nil {
		return nil, err
	}
	return g, nil
}

// blindRef names the blind image of a tool image in the store, where
// buildkitd reads it: the tool's repository, tagged by the blind image's
// digest.
func blindRef(tool name.Reference, blind v1.Image) (name.Reference, error) {
	d, err := blind.Digest()
	if err != nil {
		return nil, fmt.Errorf("computing the blind image's digest: %w", err)
	}
	return tool.Context().Tag("blind-" + d.Hex[:16]), nil
}

// SourceDateEpoch reads SOURCE_DATE_EPOCH, the reproducible-builds way to
// fix a build's time.
func SourceDateEpoch() (time.Time, bool, error) {
	v := strings.TrimSpace(os.Getenv("SOURCE_DATE_EPOCH"))
	if v == "" {
		return time.Time{}, false, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds: unset it or set it to a Unix time", v)
	}
	return time.Unix(n, 0).UTC(), true, nil
}

// untrusted says why a resolved image may not be believed, or nil: made on
// this machine (not pulled), or trusted by e.Trust.
func (e *Env) untrusted(ctx context.Context, acc *remote.Access, res *remote.Resolved) error {
	if res.PulledFrom == "" {
		return nil
	}
	d, err := res.Image.Digest()
	if err != nil {
		return err
	}
	repo, ropts, err := acc.Repository(ctx, res.PulledFrom)
	if err != nil {
		return err
	}
	return e.Trust.Check(ctx, repo, d, ropts...)
}

// goBuild compiles a's go_build programs for p once per Env: one lock for
// all, so that parallel runs neither compile twice nor replace the output
// while another's assembly reads it.
func (e *Env) goBuild(ctx context.Context, a *agent.Agent, p v1.Platform) error {
	key := a.Dir + "\x00" + p.String()
	e.goMu.Lock()
	defer e.goMu.Unlock()
	if e.goBuilt[key] {
		return nil
	}
	if err := a.Build(ctx, p); err != nil {
		return err
	}
	if e.goBuilt == nil {
		e.goBuilt = map[string]bool{}
	}
	e.goBuilt[key] = true
	return nil
}

// openCodeOf is the OpenCode version a runtime image carries (its label),
// "" when none.
func openCodeOf(img v1.Image) string {
	if img == nil {
		return ""
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return ""
	}
	return cf.Config.Labels[runtimebin.LabelOpenCodeVersion]
}
