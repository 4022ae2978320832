package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/gateway"
	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/42-b3yond-6ug/ssebench/oci"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/runner"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
)

// The model gateway of a restricted run (SPEC.md section 14).
const (
	// GatewayMountPath is where the run's gateway directory, holding its
	// socket, is mounted in the container: under /run, root's, and the
	// directory itself is 0700, so only the entrypoint's forwarder (root)
	// reaches the socket.
	GatewayMountPath = "/run/ssebench-gateway"
	// gatewaySocketName is the socket's name in that directory.
	gatewaySocketName = "model.sock"
	// GatewayBaseURL is SSE_BASE_URL in a restricted run with a gateway.
	GatewayBaseURL = "http://" + contract.GatewayAddr
	// ModelLog is the gateway's record of every request, in the run folder.
	ModelLog = "model.jsonl"
	// maxSocketPath is what a Unix socket path may hold (sun_path, less
	// the terminating NUL, with margin for other systems).
	maxSocketPath = 100
)

// runGateway is a started gateway and what the run gives the container.
type runGateway struct {
	gw      *gateway.Gateway
	record  *os.File
	dir     string // the socket's directory
	tempDir bool   // dir is a temporary directory to remove
	// remote is the gateway a cluster runs next to the run's pod (its
	// image is set by the caller); nil when it runs here.
	remote *runner.Gateway
}

// modelLookup reads the host's environment for the run's model set-up:
// the request's own key and base URL first.
func (req *RunRequest) modelLookup(k string) string {
	switch k {
	case gateway.DefaultKeyEnv:
		if req.APIKey != "" {
			return req.APIKey
		}
	case gateway.DefaultBaseURLEnv:
		if req.BaseURL != "" {
			return req.BaseURL
		}
	}
	if req.Lookup != nil {
		return req.Lookup(k)
	}
	return os.Getenv(k)
}

// resolveModel is the run's model set-up: nil when no upstream is
// configured and the run asks for nothing only a gateway gives.
func (e *Env) resolveModel(req *RunRequest) (*gateway.Config, error) {
	modelsDir := req.ModelsDir
	if modelsDir == "" {
		modelsDir = filepath.Join(e.Home, "models")
	}
	cfg, err := gateway.Resolve(req.Model, req.ModelFile, modelsDir, req.modelLookup)
	if errors.Is(err, gateway.ErrNoUpstream) {
		if req.ModelFile != "" || req.Limits != (gateway.Limits{}) {
			return nil, err
		}
		return nil, nil
	}
	return cfg, err
}

// errOpenGateway refuses what only a restricted run's gateway can keep.
var errOpenGateway = errors.New("--max-requests, --max-tokens, --max-cost, --budget and --model-file work through the model gateway of a restricted run: drop --egress open")

// CheckModel refuses, before any image is built, a model set-up the run's
// gateway would refuse once the images are made: a model file that does
// not read, names a key variable this machine lacks or has no prices for
// --max-cost, and gateway limits on an open run. A typo in the model's
// name is gateway.CheckModel's.
func (e *Env) CheckModel(req *RunRequest) error {
	if req.Network == runner.NetworkOpen {
		if req.Limits != (gateway.Limits{}) || req.ModelFile != "" || req.Ledger != nil {
			return errOpenGateway
		}
		return e.checkOpenNetwork(req)
	}
	cfg, err := e.resolveModel(req)
	if err != nil || cfg == nil {
		return err
	}
	if req.Limits.MaxCost > 0 {
		return cfg.CheckPrices("--max-cost", "")
	}
	return nil
}

// startGateway starts the run's model gateway when the run is restricted
// and an upstream is configured; it returns nil when there is none.
func (e *Env) startGateway(req *RunRequest, runDir string) (_ *runGateway, retErr error) {
	cfg, err := e.resolveModel(req)
	if err != nil || cfg == nil {
		return nil, err
	}
	rg := &runGateway{}
	defer func() {
		if retErr != nil {
			rg.close()
		}
	}()
	rg.record, err = os.OpenFile(filepath.Join(runDir, ModelLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", ModelLog, err)
	}
	if req.Ledger != nil && req.Cluster != nil {
		// A cluster's gateway is a pod of its own per run, which shares no
		// ledger with the other runs' pods.
		return nil, errors.New("an evaluation's --budget is kept by the gateways on this machine: it cannot hold on the Kubernetes backend, whose gateways are pods of their own")
	}
	gopts := []gateway.Option{gateway.WithRecorder(rg.record), gateway.WithLimits(req.Limits), gateway.WithLog(e.Log)}
	if req.Ledger != nil {
		gopts = append(gopts, gateway.WithLedger(req.Ledger))
	}
	rg.gw, err = gateway.New(cfg, gopts...)
	if err != nil {
		return nil, err
	}
	req.Model = cfg.Model
	if req.Cluster != nil {
		// A pod cannot reach a socket of this machine: the cluster runs
		// the gateway, from this set-up, and reports back its records.
		conf, err := gateway.MarshalRemote(cfg, rg.gw.Token(), req.Limits)
		if err != nil {
			return nil, err
		}
		rg.remote = &runner.Gateway{Config: conf, Records: rg.record}
		e.logf("model gateway (a pod of the cluster): %s (%s) for model %s", cfg.Upstream.BaseURL.Redacted(), cfg.Upstream.Flavour, modelName(cfg.Model))
		return rg, nil
	}
	// The socket lives in the run folder when its path fits in a socket
	// address, else in a short temporary directory.
	rg.dir = filepath.Join(runDir, "gateway")
	if len(filepath.Join(rg.dir, gatewaySocketName)) > maxSocketPath {
		if rg.dir, err = os.MkdirTemp("", "ssebench-gw-"); err != nil {
			return nil, fmt.Errorf("creating the gateway's directory: %w", err)
		}
		rg.tempDir = true
	} else if err := os.Mkdir(rg.dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating the gateway's directory: %w", err)
	}
	if err := os.Chmod(rg.dir, 0o700); err != nil {
		return nil, err
	}
	if err := rg.gw.Listen(filepath.Join(rg.dir, gatewaySocketName)); err != nil {
		return nil, err
	}
	e.logf("model gateway: %s (%s) for model %s", cfg.Upstream.BaseURL.Redacted(), cfg.Upstream.Flavour, modelName(cfg.Model))
	return rg, nil
}

// apply gives the container the gateway: the socket's directory mounted,
// SSE_BASE_URL at the forwarder, the per-run token as SSE_API_KEY.
func (rg *runGateway) apply(spec *runner.RunSpec, req *RunRequest) {
	req.BaseURL, req.APIKey = GatewayBaseURL, rg.gw.Token()
	if rg.remote != nil {
		// The entrypoint forwards the same address to the gateway's
		// Service, which the cluster backend adds.
		spec.Env, spec.Gateway = req.env(), rg.remote
		return
	}
	spec.Env = append(req.env(), contract.EnvGatewaySocket+"="+GatewayMountPath+"/"+gatewaySocketName)
	spec.Mounts = append(spec.Mounts, runner.Mount{Source: rg.dir, Target: GatewayMountPath})
}

// finish stops the gateway and returns its totals; the record is closed.
func (rg *runGateway) finish() *gateway.Totals {
	if rg == nil {
		return nil
	}
	rg.close()
	t := rg.gw.Totals()
	if rg.remote != nil && rg.remote.Report.Totals != nil {
		t = *rg.remote.Report.Totals
	}
	return &t
}

func (rg *runGateway) close() {
	if rg.gw != nil {
		_ = rg.gw.Close()
	}
	if rg.record != nil {
		_ = rg.record.Close()
	}
	if rg.tempDir {
		_ = os.RemoveAll(rg.dir)
	} else if rg.dir != "" {
		_ = os.Remove(rg.dir)
	}
}

// mergeModelUsage adds the gateway's totals to result.json as
// model_usage, keeping everything else the entrypoint wrote.
func mergeModelUsage(runDir string, t *gateway.Totals) error {
	path := filepath.Join(runDir, contract.ResultFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // no result: the container did not get that far
	}
	if err != nil {
		return fmt.Errorf("adding the model usage to result.json: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("adding the model usage to %s: %w", path, err)
	}
	if _, ok := m["model_usage"]; ok {
		return nil
	}
	b, err := json.MarshalIndent(t, "  ", "  ")
	if err != nil {
		return err
	}
	// Appended as text: the entrypoint's order and formatting stay.
	data = bytes.TrimRight(data, " \n")
	if len(data) == 0 || data[len(data)-1] != '}' {
		return fmt.Errorf("adding the model usage to %s: not a JSON object", path)
	}
	sep := ",\n"
	if len(m) == 0 {
		sep = "\n"
	}
	out := append(append(bytes.TrimRight(data[:len(data)-1], " \n"), sep+`  "model_usage": `...), b...)
	out = append(out, "\n}\n"...)
	if err := safefile.WriteBytes(path, out, 0o644); err != nil {
		return fmt.Errorf("adding the model usage to result.json: %w", err)
	}
	return nil
}

// gatewayImage is the image of a cluster run's gateway pod for platform
// p, in the registry and pinned by digest: REGISTRY/gateway:VERSION,
// compiled from this checkout (cmd/ssebench-gateway) the first time it is
// needed, kept in the store, and pushed with the run's images. Once per
// Env and platform.
func (e *Env) gatewayImage(ctx context.Context, p v1.Platform) (string, error) {
	e.gwMu.Lock()
	defer e.gwMu.Unlock()
	if ref := e.gwImages[p.String()]; ref != "" {
		return ref, nil
	}
	gname := e.Names.Gateway()
	ref, err := name.ParseReference(gname, name.WeakValidation)
	if err != nil {
		return "", fmt.Errorf("gateway image name %q: %w", gname, err)
	}
	img, err := e.Store.Image(ref)
	if err == nil {
		if cf, cerr := img.ConfigFile(); cerr != nil || cf.OS != p.OS || cf.Architecture != p.Architecture {
			img = nil // another platform's: built again below
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	if img == nil {
		src := firstNonEmpty(e.ModuleDir, e.Home)
		if _, err := os.Stat(filepath.Join(src, runtimebin.GatewayPackage, "main.go")); err != nil {
			return "", fmt.Errorf("the model gateway's image %s is built from the ssebench source, which %s is not: run from a checkout (or pass --home)", gname, src)
		}
		e.logf("model gateway: building %s for %s", gname, p.String())
		opts := []runtimebin.BuildOption{runtimebin.WithModuleDir(src), runtimebin.WithTempDir(e.Store.TempDir()), runtimebin.WithPlatforms(p)}
		if img, err = runtimebin.BuildGateway(ctx, opts...); err != nil {
			return "", err
		}
		werr := e.Store.Write(ctx, ref, img)
		if ls, _ := img.Layers(); len(ls) > 0 {
			if s, ok := ls[0].(*oci.SpooledLayer); ok {
				_ = s.Remove()
			}
		}
		if werr != nil {
			return "", werr
		}
		if img, err = e.Store.Image(ref); err != nil {
			return "", err
		}
	}
	if _, err := remote.Push(ctx, gname, img, e.RegistryOptions...); err != nil {
		return "", fmt.Errorf("pushing the model gateway's image %s: %w", gname, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	if e.gwImages == nil {
		e.gwImages = map[string]string{}
	}
	e.gwImages[p.String()] = gname + "@" + d.String()
	return e.gwImages[p.String()], nil
}

// checkOpenNetwork refuses an open run on this machine when its image
// registry listens on loopback (runner.CheckOpenNetwork); a cluster's
// pods do not share this machine's network.
func (e *Env) checkOpenNetwork(req *RunRequest) error {
	if req.Network != runner.NetworkOpen || req.Cluster != nil {
		return nil
	}
	return runner.CheckOpenNetwork(context.Background(), e.Names.Registry)
}
