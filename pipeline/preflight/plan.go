package preflight

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/agent"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// Kinds of Image.
const (
	KindBase    = "base"
	KindCase    = "case"
	KindTool    = "tool"
	KindAgent   = "agent"
	KindRuntime = "runtime"
)

// Where an image is, as Image.Where says.
const (
	WhereStore    = "store"
	WhereRegistry = "registry"
	WhereMissing  = "missing"
)

// Image is one image of a preflight: where it is and for which
// platforms.
type Image struct {
	Task      string   `json:"task"`
	Agent     string   `json:"agent,omitempty"`
	Kind      string   `json:"kind"`
	Ref       string   `json:"ref"`
	Where     string   `json:"where"`
	Digest    string   `json:"digest,omitempty"`
	Platforms []string `json:"platforms"`
	Build     bool     `json:"build"`
	// Fix is the command that makes a missing image a run does not make
	// itself (a base image, the runtime); "" for the others.
	Fix string `json:"fix,omitempty"`
}

// Action is the image's ACTION: ok, build (a run builds it), make (a run
// needs it and does not make it: Fix does), or - (missing and not needed:
// its case or tool images exist).
func (c Image) Action() string {
	switch {
	case c.Fix != "":
		return "make"
	case c.Build:
		return "build"
	case c.Where == WhereMissing:
		return "-"
	}
	return "ok"
}

// Request is what Plan checks and where it looks.
type Request struct {
	// Home is the SSEBench home, whose datasets/ and agents/ are read.
	Home  string
	Names naming.Names
	// Args are datasets (names under the home, or folders) and task ids;
	// none means every dataset of the home. Only, when not empty, keeps
	// the tasks it names.
	Args, Only []string
	// Agents are the agent folders whose agent images are checked.
	Agents []string
	// Runtime is the runtime image tool images are assembled on.
	Runtime string
	// Platform is the platform the images must have ("" any).
	Platform string
	// Store is the local store, looked in first; Remote the options of
	// the registry, asked only when AskRegistry.
	Store       *store.Store
	Remote      []remote.Option
	AskRegistry bool
	// Registry is --registry as given ("" when REGISTRY came from the
	// environment, which the fix commands then inherit); OSImage the
	// image the base images start from ("" unknown).
	Registry, OSImage string
}

// Plan locates the images a run of req's tasks with req's agents needs,
// and settles what must be made first: a base image is needed only where
// its case image is missing, the runtime only where a tool image is.
// Nothing is pulled or written.
func Plan(ctx context.Context, req Request) ([]Image, error) {
	all, err := images(req.Home, req.Names, req.Args, req.Agents)
	if err != nil {
		return nil, err
	}
	var checks []Image
	for _, c := range all {
		if len(req.Only) == 0 || slices.Contains(req.Only, c.Task) {
			checks = append(checks, c)
		}
	}
	checks = append(checks, Image{Kind: KindRuntime, Ref: req.Runtime})
	for i := range checks {
		if err := locate(ctx, req.Store, req.Remote, req.AskRegistry, &checks[i]); err != nil {
			return nil, err
		}
	}
	settle(checks, req.Platform, fixer{registry: req.Registry, osImage: req.OSImage, store: req.Store, prefix: req.Names.Registry})
	return checks, nil
}

// images lists the images of the tasks args names (datasets or task ids;
// none means every dataset) and of agents.
func images(home string, names naming.Names, args, agentNames []string) ([]Image, error) {
	all, err := filepath.Glob(filepath.Join(home, "datasets", "*", task.DatasetFile))
	if err != nil {
		return nil, err
	}
	var datasets []*task.Dataset
	for _, a := range all {
		d, err := task.LoadDataset(filepath.Dir(a))
		if err != nil {
			return nil, fmt.Errorf("reading dataset %s: %w", filepath.Dir(a), err)
		}
		datasets = append(datasets, d)
	}
	var agents []*agent.Agent
	for _, f := range agentNames {
		a, err := agent.Load(home, f)
		if err != nil {
			return nil, err
		}
		agents = append(agents, a)
	}
	type pick struct {
		d *task.Dataset
		t *task.Task
	}
	var picks []pick
	seen := map[string]bool{}
	add := func(d *task.Dataset, t *task.Task) {
		if !seen[d.Name+"/"+t.ID] {
			seen[d.Name+"/"+t.ID] = true
			picks = append(picks, pick{d, t})
		}
	}
	for _, a := range args {
		found := false
		if st, err := os.Stat(filepath.Join(a, task.DatasetFile)); err == nil && !st.IsDir() {
			// A dataset folder outside the home (eval --local DIR).
			d, err := task.LoadDataset(a)
			if err != nil {
				return nil, fmt.Errorf("reading dataset %s: %w", a, err)
			}
			for _, t := range d.Tasks {
				add(d, t)
			}
			continue
		}
		for _, d := range datasets {
			if d.Name == a || filepath.Base(filepath.Clean(a)) == d.Name {
				found = true
				for _, t := range d.Tasks {
					add(d, t)
				}
				continue
			}
			for _, t := range d.Tasks {
				if t.ID == a {
					found = true
					add(d, t)
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("%q is neither a dataset nor a task under %s: run `ssebench tasks list` for the names", a, filepath.Join(home, "datasets"))
		}
	}
	if len(args) == 0 {
		for _, d := range datasets {
			for _, t := range d.Tasks {
				add(d, t)
			}
		}
	}
	var out []Image
	for _, p := range picks {
		t := p.t
		if t.Base != "" {
			out = append(out, Image{Task: t.ID, Kind: KindBase, Ref: names.Prefixed(t.Base)})
		}
		out = append(out,
			Image{Task: t.ID, Kind: KindCase, Ref: names.Case(p.d.Name, t.ID)},
			Image{Task: t.ID, Kind: KindTool, Ref: names.Tool(t.ID)})
		for _, a := range agents {
			out = append(out, Image{Task: t.ID, Kind: KindAgent, Agent: a.Name, Ref: names.Agent(a.Name, t.ID, a.Version)})
		}
	}
	return out, nil
}

// locate finds c's image in the store, else (when askRegistry) in its
// registry, reading manifests and configs only.
func locate(ctx context.Context, s *store.Store, ropts []remote.Option, askRegistry bool, c *Image) error {
	c.Where, c.Platforms = WhereMissing, []string{}
	ref, err := name.ParseReference(c.Ref)
	if err != nil {
		return fmt.Errorf("image name %q of task %s: %w", c.Ref, c.Task, err)
	}
	if desc, err := s.Descriptor(ref); err == nil {
		var content any
		if desc.MediaType.IsIndex() {
			content, err = s.Index(ref)
		} else {
			content, err = s.Image(ref)
		}
		if err != nil {
			return err
		}
		c.Where, c.Digest = WhereStore, desc.Digest.String()
		c.Platforms, err = platformsOf(content)
		return err
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if !askRegistry {
		return nil
	}
	content, desc, err := remote.Fetch(ctx, c.Ref, ropts...)
	if remote.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	c.Where, c.Digest = WhereRegistry, desc.Digest.String()
	c.Platforms, err = platformsOf(content)
	return err
}

// platformsOf lists the platforms of an image (its config's) or an index
// (its manifests').
func platformsOf(content any) ([]string, error) {
	switch c := content.(type) {
	case v1.ImageIndex:
		im, err := c.IndexManifest()
		if err != nil {
			return nil, err
		}
		var out []string
		for _, m := range im.Manifests {
			if m.Platform != nil && m.Platform.OS != "unknown" {
				out = append(out, m.Platform.OS+"/"+m.Platform.Architecture)
			}
		}
		sort.Strings(out)
		return out, nil
	case v1.Image:
		cf, err := c.ConfigFile()
		if err != nil {
			return nil, err
		}
		return []string{cf.OS + "/" + cf.Architecture}, nil
	}
	return []string{}, nil
}
