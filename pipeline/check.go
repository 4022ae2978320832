package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/42-b3yond-6ug/ssebench/gateway"
)

// Check refuses, before any image is built, what would fail req's run
// only after its images are made: the request itself (Validate, and the
// tool layer against e's), tool-sidecar-agent of a sidecar run that the
// store lacks with no OS image to make it from, a typo in the model's
// name, and a model set-up the run's gateway would refuse (CheckModel).
// It reads the store and the model files; it builds, pulls and starts
// nothing. Run makes the same checks where it needs them: Check says so
// once, first, for a run or every run of an evaluation (req is then the
// template of its runs, with one task and agent of the plan).
func (e *Env) Check(ctx context.Context, req RunRequest) error {
	if err := e.validate(&req); err != nil {
		return err
	}
	if err := e.checkSidecarAgent(ctx, &req); err != nil {
		return err
	}
	if req.ModelFile == "" {
		modelsDir := req.ModelsDir
		if modelsDir == "" {
			modelsDir = filepath.Join(e.Home, "models")
		}
		if err := gateway.CheckModel(req.Model, modelsDir, req.modelLookup); err != nil {
			return err
		}
	}
	return e.CheckModel(&req)
}

// checkSidecarAgent refuses a sidecar run that would make
// tool-sidecar-agent (the store lacks it) without an OS image to make it
// from: SidecarAgent would say so only after the task's images.
func (e *Env) checkSidecarAgent(_ context.Context, req *RunRequest) error {
	if req.Mode != ModeSidecar || req.Prebuilt {
		return nil
	}
	// The CLI fills OSImage from --os-image or SSEBENCH_OS_IMAGE (its
	// .env included): the pipeline reads no environment for it.
	if strings.TrimSpace(req.OSImage) != "" {
		return nil
	}
	out := e.Names.SidecarAgentRuntime()
	ref, err := name.ParseReference(out, name.WeakValidation)
	if err != nil {
		return err
	}
	if _, err := e.Store.Descriptor(ref); err != nil {
		return fmt.Errorf("--mode sidecar needs %s, which the store lacks, or the OS image to make it from: pass --os-image (the image the base images start from) or set SSEBENCH_OS_IMAGE", out)
	}
	return nil
}
