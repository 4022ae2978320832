package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/agent"
	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/runtimebin"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// targetMirrorRatio is bytes moved over unique blob bytes when mirroring to
// an empty registry: every unique blob crosses once.
const targetMirrorRatio = 1.00

// mirrorAgent is the agent whose images the mirror set includes.
const mirrorAgent = "dummy"

// runMirror gathers the example dataset's images under one prefix of the
// registry (bases, cases and runtime mirrored within the registry from
// -from, tool and agent images made with the pipeline, each only when
// missing), then mirrors them to a throwaway docker-registry and, for
// comparison, to another prefix of the same registry.
func runMirror(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("mirror", flag.ContinueOnError)
	reg := fs.String("registry", env("SSEBENCH_TEST_REGISTRY", "127.0.0.1:5000"), "host:port of the plain-HTTP registry")
	from := fs.String("from", "", "REGISTRY that has the base, case and runtime images (default REGISTRY/ssebench, as scripts/setup.sh builds them)")
	version := fs.String("version", "0.1.0-dev", "VERSION of those images")
	work := fs.String("work", filepath.Join(os.TempDir(), "ssebench-bench"), "working directory")
	regBin := fs.String("docker-registry", "docker-registry", "docker-registry (distribution) binary for the target registry")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *from == "" {
		*from = *reg + "/ssebench"
	}
	home, err := moduleRoot()
	if err != nil {
		return err
	}
	ds, err := task.LoadDataset(filepath.Join(home, "datasets", "examples"))
	if err != nil {
		return err
	}
	a, err := agent.Load(home, mirrorAgent)
	if err != nil {
		return err
	}
	prefix := *reg + "/" + benchRepo + "/mirror"
	names := naming.NewNames(prefix, *version)

	// Inputs: within the registry, mounted, when the prefix lacks them.
	var inputs []string
	seen := map[string]bool{}
	for _, t := range ds.Tasks {
		for _, ref := range []string{names.Prefixed(t.Base), names.Case(ds.Name, t.ID)} {
			if !seen[ref] {
				seen[ref] = true
				inputs = append(inputs, ref)
			}
		}
	}
	inputs = append(inputs, names.Runtime())
	var missing []string
	for _, ref := range inputs {
		if !exists(ctx, ref) {
			src, err := remote.Retarget(ref, prefix, *from)
			if err != nil {
				return err
			}
			missing = append(missing, src)
		}
	}
	if len(missing) > 0 {
		say("copying %d images from %s to %s", len(missing), *from, prefix)
		rep, err := remote.Mirror(ctx, missing, *from, prefix)
		var me *remote.MissingError
		switch {
		case errors.As(err, &me):
			for _, m := range rep.Missing {
				if m != naming.NewNames(*from, *version).Runtime() {
					return fmt.Errorf("%s is missing: build the example dataset's base and case images first (scripts/setup.sh): %w", m, err)
				}
			}
		case err != nil:
			return err
		}
		if !exists(ctx, names.Runtime()) {
			say("building the runtime from this checkout")
			if err := os.MkdirAll(*work, 0o755); err != nil {
				return err
			}
			idx, err := runtimebin.Build(ctx, runtimebin.WithModuleDir(home), runtimebin.WithTempDir(*work))
			if err != nil {
				return err
			}
			if _, err := remote.Push(ctx, names.Runtime(), idx); err != nil {
				return err
			}
		}
	}

	// Tool and agent images, made by the pipeline when missing.
	storeDir := filepath.Join(*work, "mirror-store")
	st, err := store.Open(filepath.Join(storeDir, "store"))
	if err != nil {
		return err
	}
	// What the pipeline needs locally is in the registry once pushed.
	defer os.RemoveAll(storeDir)
	facts, err := assemble.NewFacts(filepath.Join(storeDir, "facts"))
	if err != nil {
		return err
	}
	e := &pipeline.Env{Home: home, Names: names, Store: st, Facts: facts, Log: os.Stderr}
	refs := append([]string(nil), inputs...)
	for _, t := range ds.Tasks {
		toolName := names.Tool(t.ID)
		if !exists(ctx, toolName) {
			if _, err := e.Tool(ctx, pipeline.ToolRequest{Case: names.Case(ds.Name, t.ID), Task: t.ID, SourceDir: t.Config.Source, Push: true}); err != nil {
				return err
			}
		}
		agentName := names.Agent(a.Name, t.ID, a.Version)
		if !exists(ctx, agentName) {
			if _, err := e.Agent(ctx, pipeline.AgentRequest{Tool: toolName, Folder: mirrorAgent, Task: t.ID, Push: true}); err != nil {
				return err
			}
		}
		refs = append(refs, toolName, agentName)
	}

	say("starting a throwaway docker-registry")
	dst, stop, err := startRegistry(ctx, *regBin, *work)
	if err != nil {
		return err
	}
	defer stop()
	say("mirroring %d images to %s", len(refs), dst)
	start := time.Now()
	rep, err := remote.Mirror(ctx, refs, prefix, dst+"/ssebench")
	if err != nil {
		return err
	}
	took := time.Since(start)
	mark := "met"
	if rep.Ratio() > targetMirrorRatio {
		mark = "MISSED"
	}
	fmt.Printf("mirror of the example dataset (%d tasks: bases, cases, runtime, tool and %s-agent images) to an empty registry in %.1fs:\n  %s\n",
		len(ds.Tasks), mirrorAgent, took.Seconds(), rep)
	fmt.Printf("  bytes moved %d / unique blob bytes %d = %.2f (target %.2f: %s)\n", rep.Push.Uploaded, rep.UniqueBytes, rep.Ratio(), targetMirrorRatio, mark)

	start = time.Now()
	same, err := remote.Mirror(ctx, refs, prefix, fmt.Sprintf("%s/%s/mirror-copy-%s", *reg, benchRepo, strconv.FormatInt(time.Now().UnixNano(), 36)))
	if err != nil {
		return err
	}
	fmt.Printf("mirror to another prefix of the same registry in %.1fs:\n  %s\n", time.Since(start).Seconds(), same)
	return nil
}

// exists reports whether ref's manifest is in its registry.
func exists(ctx context.Context, ref string) bool {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return false
	}
	_, err = ggremote.Head(r, ggremote.WithContext(ctx))
	return err == nil
}

// moduleRoot finds the ssebench module's root from the working directory.
func moduleRoot() (string, error) {
	p, err := findReference()
	if err != nil {
		return "", err
	}
	return filepath.Clean(filepath.Join(filepath.Dir(p), "..", "..", "..", "..")), nil
}

// startRegistry starts docker-registry on a free loopback port, its storage
// under parent, and returns its host:port and a function that stops it and
// removes the storage.
func startRegistry(ctx context.Context, bin, parent string) (string, func(), error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return "", nil, fmt.Errorf("no %s (apt-get install docker-registry, or pass -docker-registry): %w", bin, err)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp(parent, "registry-")
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	host := l.Addr().String()
	l.Close()
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n",
		filepath.Join(dir, "data"), host)
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return "", nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(path, "serve", cfgPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return "", nil, err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	stop := func() {
		cmd.Process.Kill()
		<-done
		logf.Close()
		os.RemoveAll(dir)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case <-done:
			out, _ := os.ReadFile(logf.Name())
			stop()
			return "", nil, fmt.Errorf("%s exited during start-up: %s", path, out)
		case <-ctx.Done():
			stop()
			return "", nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := http.Get("http://" + host + "/v2/"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return host, stop, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("%s did not answer on %s within 20s", path, host)
		}
	}
}
