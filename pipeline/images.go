package pipeline

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/images/casebuild"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// resolveImages finds the run's images: req.Images when an evaluation
// built them, none for a prebuilt run (the agent image is pulled as it
// is), else the case, tool and agent images built now. Sidecar mode also
// needs the task's SOURCE_DIR, which a prebuilt run reads from the task.
func (e *Env) resolveImages(ctx context.Context, r *runState) error {
	r.ri = r.req.Images
	if r.ri != nil {
		r.srcDir = r.ri.SourceDir
	}
	if r.ri == nil && !r.req.Prebuilt {
		t := time.Now()
		ti, err := e.taskImages(ctx, r.req, r.datasetDir, r.plat)
		if err != nil {
			return err
		}
		r.lap("case", t.Add(ti.ToolTook))
		r.timings["tool"] = ti.ToolTook.Seconds()
		t = time.Now()
		if r.ri, err = e.agentImage(ctx, r.req, ti, r.plat); err != nil {
			return err
		}
		r.lap("agent", t)
		r.srcDir = r.ri.SourceDir
	}
	if r.req.Prebuilt && r.req.Images == nil {
		if err := e.checkPrebuilt(ctx, r); err != nil {
			return err
		}
	}
	if !r.sidecar && r.ri != nil {
		// The task container runs the tool image the agent image was
		// grafted on, pinned.
		r.toolName = r.ri.Tool
	}
	if r.srcDir == "" {
		var err error
		if r.srcDir, err = e.taskSource(r.req, r.datasetDir); err != nil {
			return err
		}
	}
	if ri := r.ri; ri != nil {
		r.images["case"] = ri.Case
		r.images["tool"] = ri.Tool
		r.images["agent"] = ri.Agent
		if ri.AgentRuntime != "" {
			r.images["agent_runtime"] = ri.AgentRuntime
		}
	}
	return nil
}

// runPlatform finds the dataset folder of the run's task (when not a
// catalog's) and the platform it runs as: the task's arches against the
// host's.
func (e *Env) runPlatform(ctx context.Context, req RunRequest) (datasetDir, platform string, plat *v1.Platform, err error) {
	datasetDir = req.Dataset
	if datasetDir == "" && req.Catalog == "" {
		if datasetDir = task.FindDataset(e.Home, req.Task); datasetDir == "" {
			return "", "", nil, fmt.Errorf("task %q is in no dataset under %s: pass --local DIR or --catalog PATH", req.Task, filepath.Join(e.Home, "datasets"))
		}
	}
	arches := task.DefaultArches()
	switch {
	case datasetDir != "":
		if arches, err = task.TaskArches(datasetDir, req.Task); err != nil {
			return "", "", nil, err
		}
	case req.Catalog != "":
		c, err := e.Catalog(ctx, req.Catalog)
		if err != nil {
			return "", "", nil, err
		}
		arches = c.Manifest.Arches(req.Task)
	}
	arch, emulated := task.RunArch(arches, runtime.GOARCH)
	platform = task.Platform(arch)
	if emulated {
		e.logf("warning: %s runs as %s, which this %s machine emulates", req.Task, platform, runtime.GOARCH)
	}
	plat, _ = v1.ParsePlatform(platform)
	return datasetDir, platform, plat, nil
}

// BuildTask builds the case image (or finds it in the catalog) and the tool
// image of req's task: what every agent's image of the task starts from.
func (e *Env) BuildTask(ctx context.Context, req RunRequest) (*TaskImages, error) {
	datasetDir, _, plat, err := e.runPlatform(ctx, req)
	if err != nil {
		return nil, err
	}
	return e.taskImages(ctx, req, datasetDir, plat)
}

// BuildAgent builds the agent image of req on the task's images ti, and
// returns the images of the run for RunRequest.Images.
func (e *Env) BuildAgent(ctx context.Context, req RunRequest, ti *TaskImages) (*RunImages, error) {
	_, _, plat, err := e.runPlatform(ctx, req)
	if err != nil {
		return nil, err
	}
	return e.agentImage(ctx, req, ti, plat)
}

func (e *Env) taskImages(ctx context.Context, req RunRequest, datasetDir string, plat *v1.Platform) (*TaskImages, error) {
	caseRef, cfg, err := e.caseImage(ctx, req, datasetDir, plat)
	if err != nil {
		return nil, err
	}
	srcDir := cfg.Source
	ti := &TaskImages{Case: caseRef}
	if cfg.Files.Patch != nil {
		ti.Patch = *cfg.Files.Patch
	}
	// The case image's digest goes into result.json: which bug ran.
	if r, err := e.Resolver(plat); err == nil {
		if res, err := r.Resolve(ctx, caseRef); err == nil {
			if d, err := res.Image.Digest(); err == nil {
				ti.CaseDigest = d.String()
			}
		}
	}
	ti.SourceDir = srcDir
	t := time.Now()
	if req.Mode == ModeSidecar {
		// The task image of sidecar mode; --tool-layer does not apply.
		ti.Tool, err = e.Tool(ctx, ToolRequest{Case: caseRef, Task: req.Task, SourceDir: srcDir, Platform: plat, Sidecar: true, Push: req.ViaRegistry})
		if err != nil {
			return nil, err
		}
		ti.ToolTook = time.Since(t)
		return ti, nil
	}
	layer, err := e.toolLayers().Lookup(req.ToolLayer)
	if err != nil {
		return nil, err
	}
	// The task container runs the tool image: a run through a registry
	// pulls it from there too.
	if ti.Tool, err = layer.Tool(ctx, e.toolEnv(), ToolInput{Case: caseRef, Task: req.Task, SourceDir: srcDir, Home: e.Home, Plugins: req.Plugins, Platform: plat, Push: req.ViaRegistry}); err != nil {
		return nil, err
	}
	ti.ToolTook = time.Since(t)
	return ti, nil
}

func (e *Env) agentImage(ctx context.Context, req RunRequest, ti *TaskImages, plat *v1.Platform) (*RunImages, error) {
	ri := &RunImages{Case: ti.Case, CaseDigest: ti.CaseDigest, Tool: ti.Tool.Name + "@" + ti.Tool.Digest.String(), SourceDir: ti.SourceDir, Patch: ti.Patch, OpenCode: ti.Tool.OpenCode}
	areq := AgentRequest{Tool: ti.Tool.Name, Folder: req.Agent, Task: req.Task, Platform: plat, Push: req.ViaRegistry}
	if req.Mode == ModeSidecar {
		// The agent's side is the same for every task: tool-sidecar-agent,
		// and agent-<name>/sidecar on it.
		rt, err := e.SidecarAgent(ctx, SidecarAgentRequest{OSImage: req.OSImage, Platform: plat, Push: req.ViaRegistry})
		if err != nil {
			return nil, err
		}
		ri.AgentRuntime = rt.Name + "@" + rt.Digest.String()
		ri.OpenCode = rt.OpenCode
		areq.Tool, areq.Sidecar = rt.Name, true
	}
	ag, err := e.Agent(ctx, areq)
	if err != nil {
		return nil, err
	}
	ri.Agent = ag.Name + "@" + ag.Digest.String()
	return ri, nil
}

// caseImage returns the case image reference of the run, building it or
// pulling it as the request says, and the task's config.
func (e *Env) caseImage(ctx context.Context, req RunRequest, datasetDir string, plat *v1.Platform) (string, *task.Config, error) {
	var entry *task.ManifestTask
	if req.Catalog != "" {
		c, err := e.Catalog(ctx, req.Catalog)
		if err != nil {
			return "", nil, err
		}
		if entry = c.Manifest.Task(req.Task); entry == nil {
			return "", nil, fmt.Errorf("task %q is not in catalog %s", req.Task, req.Catalog)
		}
		if !req.Build {
			ref, err := e.catalogCase(ctx, c, req.Task, plat)
			if err == nil {
				return ref, &entry.Metadata, nil
			}
			var refused *LockRefusal
			if errors.As(err, &refused) {
				return "", nil, err
			}
			if datasetDir == "" {
				if datasetDir = task.FindDataset(e.Home, req.Task); datasetDir == "" {
					return "", nil, fmt.Errorf("%w, and no task folder can build it", err)
				}
			}
			e.logf("warning: %v; building it from %s", err, datasetDir)
		}
	}
	if datasetDir == "" {
		if datasetDir = task.FindDataset(e.Home, req.Task); datasetDir == "" {
			return "", nil, fmt.Errorf("no task folder for %q to build its case image from: pass --local DIR", req.Task)
		}
	}
	t, err := task.Load(filepath.Join(datasetDir, req.Task))
	if err != nil {
		return "", nil, err
	}
	if entry != nil {
		// Only the catalog's own task may stand in for its case image.
		files, err := t.FilesDigest()
		if err != nil {
			return "", nil, err
		}
		if want := task.DigestFiles(entry.Files); files != want {
			return "", nil, fmt.Errorf("the task folder %s is not the catalog's %s (files digest %.12s, the catalog lists %.12s): it cannot build the catalog's case image", t.Dir, req.Task, files, want)
		}
	}
	if e.BuildKit == nil {
		return "", nil, errors.New("building the case image needs BuildKit, and none is configured")
	}
	bk, err := e.BuildKit(ctx)
	if err != nil {
		return "", nil, err
	}
	defer bk.Close()
	r, err := e.Resolver(plat)
	if err != nil {
		return "", nil, err
	}
	b := &casebuild.Builder{BuildKit: bk, Store: e.Store, Resolver: r, Names: e.Names, Log: e.Log}
	out, err := b.BuildCases(ctx, datasetDir, casebuild.CaseOptions{Tasks: []string{req.Task}, Force: req.Build && req.Catalog == "", HostArch: runtime.GOARCH})
	if err != nil {
		return "", nil, err
	}
	return out[0].Image, t.Config, nil
}
