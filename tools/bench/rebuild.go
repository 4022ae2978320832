package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/images/buildkit"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
	"github.com/42-b3yond-6ug/ssebench/registry/trust"
)

// targetRebuildRatio is how much faster than BuildKit with a registry cache
// the runtime-bump rebuild on an empty machine must be.
const targetRebuildRatio = 50.0

// benchTask is the task id of the benchmark's case image (gen.go's
// caseConfig) and benchVersion the VERSION its tool image is tagged with.
const (
	benchTask    = "bench-1-0000000"
	benchVersion = "1.0.0"
)

// RebuildSide is one side's figures of the rebuild benchmark.
type RebuildSide struct {
	FirstSeconds   float64 `json:"first_seconds"`
	RebuildSeconds float64 `json:"rebuild_seconds"`
	Digest         string  `json:"rebuild_digest"`
	// For ssebench only.
	MaxRSSMB      float64 `json:"max_rss_mb,omitempty"`
	LayersIndexed int     `json:"layers_indexed,omitempty"`
	Reused        bool    `json:"reused,omitempty"`
	Push          string  `json:"push,omitempty"`
	UploadedBytes int64   `json:"uploaded_bytes,omitempty"`
}

// RebuildResults is what rebuild -json writes.
type RebuildResults struct {
	Case     string      `json:"case"`
	Runtime  [2]string   `json:"runtime"`
	Platform string      `json:"platform"`
	CPUs     int         `json:"cpus"`
	BuildKit RebuildSide `json:"buildkit"`
	Ssebench RebuildSide `json:"ssebench"`
	Ratio    float64     `json:"ratio"`
	Target   float64     `json:"target_ratio"`
	Started  time.Time   `json:"started"`
}

// runRebuild times the runtime bump as CI sees it: the tool image was
// pushed with runtime 1, and a machine with nothing local rebuilds it with
// runtime 2 and pushes it. ssebench gets an empty store and facts cache
// (pipeline.Env.Tool with --push, reusing the pushed image's own
// layers); BuildKit gets a fresh daemon that imports the registry build
// cache the first build exported.
func runRebuild(ctx context.Context, args []string) error {
	var f toolFlags
	fs := flag.NewFlagSet("rebuild", flag.ContinueOnError)
	fs.StringVar(&f.registry, "registry", env("SSEBENCH_TEST_REGISTRY", "127.0.0.1:5000"), "host:port of the plain-HTTP registry")
	fs.StringVar(&f.osImage, "os-image", os.Getenv("SSEBENCH_TEST_OS_IMAGE"), "Debian OS image (default REGISTRY/ssebench/os/debian:bookworm)")
	fs.StringVar(&f.sharedAddr, "buildkit-host", env(buildkit.EnvHost, buildkit.DefaultAddress), "the shared buildkitd, used to build the inputs")
	fs.StringVar(&f.buildkitd, "buildkitd", "", "buildkitd binary for the throwaway daemons (default: scripts/install-deps.sh's, else PATH); buildctl is taken from its directory")
	fs.StringVar(&f.work, "work", filepath.Join(os.TempDir(), "ssebench-bench"), "working directory")
	fs.StringVar(&f.jsonOut, "json", "", "also write the results as JSON to this file")
	fs.IntVar(&f.files, "files", 10000, "files in the generated source tree")
	fs.IntVar(&f.mb, "mb", 150, "size of the generated source tree in MB")
	fs.Int64Var(&f.epoch, "time", 1750000000, "build time (SOURCE_DATE_EPOCH) for both sides")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.osImage == "" {
		f.osImage = f.registry + "/ssebench/os/debian:bookworm"
	}
	if f.buildkitd == "" {
		var err error
		if f.buildkitd, err = findBuildkitd(); err != nil {
			return err
		}
	}
	buildctl, err := findBuildctl(f.buildkitd)
	if err != nil {
		return err
	}
	refDockerfile, err := findReference()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.work, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(f.work, "rebuild-progress.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	say("progress of every build goes to %s", logPath)

	res := &RebuildResults{Platform: "linux/" + runtime.GOARCH, CPUs: runtime.NumCPU(), Target: targetRebuildRatio, Started: time.Now().UTC()}
	shared, err := buildkit.New(ctx, buildkit.WithAddress(f.sharedAddr), buildkit.WithProgress(logf),
		buildkit.WithProgressMode(buildkit.ProgressPlain), buildkit.WithTempDir(f.work))
	if err != nil {
		return err
	}
	defer shared.Close()
	var caseInfo Results
	caseRef, err := ensureCase(ctx, shared, &f, &caseInfo)
	if err != nil {
		return err
	}
	res.Case = caseRef
	for i := range res.Runtime {
		dir := filepath.Join(f.work, fmt.Sprintf("runtime-ctx-%d", i+1))
		if err := writeRuntimeContext(dir, uint64(i)); err != nil {
			return err
		}
		r, err := shared.Build(ctx, buildkit.Request{ContextDir: dir, Platform: res.Platform,
			Push: fmt.Sprintf("%s/%s/runtime:v%d", f.registry, benchRepo, i+1)})
		if err != nil {
			return err
		}
		res.Runtime[i] = fmt.Sprintf("%s/%s/runtime@%s", f.registry, benchRepo, r.Digest)
	}
	say("case image %s (%d layers, %.0f MB compressed)", caseRef, caseInfo.Case.Layers, caseInfo.Case.CompressedMB)
	say("runtime images %s, %s", res.Runtime[0], res.Runtime[1])

	// A prefix of this run's own: the tool repository starts empty, so the
	// first push is a real one.
	nonce := strconv.FormatInt(time.Now().UnixNano(), 36)
	prefix := fmt.Sprintf("%s/%s/rebuild-%s", f.registry, benchRepo, nonce)
	cacheRef := fmt.Sprintf("%s/%s/rebuild-%s/buildkit-cache:reference", f.registry, benchRepo, nonce)
	bkOut := fmt.Sprintf("%s/%s/rebuild-%s/buildkit-tool", f.registry, benchRepo, nonce)

	// ssebench, first: the tool image with runtime 1, pushed.
	child := func(runtimeRef string) (float64, float64, *pushChildResult, error) {
		dir, err := os.MkdirTemp(f.work, "ssebench-machine-")
		if err != nil {
			return 0, 0, nil, err
		}
		defer os.RemoveAll(dir)
		exe, err := os.Executable()
		if err != nil {
			return 0, 0, nil, err
		}
		cmd := exec.CommandContext(ctx, exe, "tool-push-child", "-store", filepath.Join(dir, "store"),
			"-facts", filepath.Join(dir, "facts"), "-registry", prefix, "-case", caseRef,
			"-runtime", runtimeRef, "-time", strconv.FormatInt(f.epoch, 10))
		var stdout bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, logf
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return 0, 0, nil, fmt.Errorf("ssebench tool --push: %w (see %s)", err, logPath)
		}
		secs := time.Since(start).Seconds()
		var cr pushChildResult
		if err := json.Unmarshal(stdout.Bytes(), &cr); err != nil {
			return 0, 0, nil, fmt.Errorf("reading the child's result %q: %w", stdout.String(), err)
		}
		var rss float64
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = float64(ru.Maxrss) / 1024 // kilobytes on Linux
		}
		return secs, rss, &cr, nil
	}
	say("ssebench: first tool image (runtime 1), empty machine, pushed")
	secs, _, cr, err := child(res.Runtime[0])
	if err != nil {
		return err
	}
	res.Ssebench.FirstSeconds = secs
	say("  %.2fs: %s", secs, cr.Push)

	// BuildKit, first: a fresh daemon builds and exports its cache.
	bkBuild := func(runtimeRef, tag string, cacheFlag ...string) (float64, string, error) {
		say("starting a throwaway buildkitd (empty local cache)")
		d, err := startDaemon(ctx, f.buildkitd, f.work, f.registry)
		if err != nil {
			return 0, "", err
		}
		defer func() {
			if err := d.stop(); err != nil {
				say("removing the throwaway buildkitd's state: %v", err)
			}
		}()
		meta := filepath.Join(d.dir, "metadata.json")
		ctxDir := filepath.Dir(refDockerfile)
		args := []string{"--addr", d.addr, "build", "--progress", "plain",
			"--frontend", "dockerfile.v0",
			"--local", "context=" + ctxDir, "--local", "dockerfile=" + ctxDir,
			"--opt", "platform=" + res.Platform,
			"--opt", "context:case=docker-image://" + caseRef,
			"--opt", "context:runtime=docker-image://" + runtimeRef,
			"--opt", "build-arg:SOURCE_DIR=/src/proj",
			"--opt", "build-arg:SOURCE_DATE_EPOCH=" + strconv.FormatInt(f.epoch, 10),
			"--output", "type=image,name=" + bkOut + ":" + tag + ",push=true,registry.insecure=true",
			"--metadata-file", meta,
		}
		args = append(args, cacheFlag...)
		cmd := exec.CommandContext(ctx, buildctl, args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return 0, "", fmt.Errorf("buildctl build: %w (see %s)", err, logPath)
		}
		secs := time.Since(start).Seconds()
		var md struct {
			Digest string `json:"containerimage.digest"`
		}
		if b, err := os.ReadFile(meta); err == nil {
			json.Unmarshal(b, &md)
		}
		return secs, md.Digest, nil
	}
	say("BuildKit: first tool image (runtime 1), fresh daemon, --export-cache type=registry")
	if res.BuildKit.FirstSeconds, _, err = bkBuild(res.Runtime[0], "runtime1",
		"--export-cache", "type=registry,ref="+cacheRef+",mode=max,registry.insecure=true"); err != nil {
		return err
	}
	say("  %.2fs", res.BuildKit.FirstSeconds)

	// The runtime bump, timed.
	say("BuildKit: rebuild with runtime 2, fresh daemon, --import-cache type=registry")
	if res.BuildKit.RebuildSeconds, res.BuildKit.Digest, err = bkBuild(res.Runtime[1], "runtime2",
		"--import-cache", "type=registry,ref="+cacheRef+",registry.insecure=true"); err != nil {
		return err
	}
	say("  %.2fs", res.BuildKit.RebuildSeconds)
	say("ssebench: rebuild with runtime 2, empty machine, --push")
	secs, rss, cr, err := child(res.Runtime[1])
	if err != nil {
		return err
	}
	res.Ssebench.RebuildSeconds, res.Ssebench.MaxRSSMB, res.Ssebench.Digest = secs, rss, cr.Digest
	res.Ssebench.LayersIndexed, res.Ssebench.Reused, res.Ssebench.Push, res.Ssebench.UploadedBytes = cr.Indexed, cr.Reused, cr.Push, cr.Uploaded
	say("  %.2fs: %s", secs, cr.Push)
	if secs > 0 {
		res.Ratio = res.BuildKit.RebuildSeconds / secs
	}

	reportRebuild(os.Stdout, res, caseInfo)
	if f.jsonOut != "" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(f.jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// findBuildctl returns the buildctl next to buildkitd, else the one on PATH.
func findBuildctl(buildkitd string) (string, error) {
	p := filepath.Join(filepath.Dir(buildkitd), "buildctl")
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	p, err := exec.LookPath("buildctl")
	if err != nil {
		return "", errors.New("no buildctl next to buildkitd or on PATH: source scripts/env.sh")
	}
	return p, nil
}

func reportRebuild(w io.Writer, res *RebuildResults, c Results) {
	fmt.Fprintf(w, "case image: %s\n  %d layers, %.0f MB compressed; source tree %d files, %d MB\n",
		res.Case, c.Case.Layers, c.Case.CompressedMB, c.Case.Files, c.Case.SourceMB)
	fmt.Fprintf(w, "platform %s, %d CPUs\n\n", res.Platform, res.CPUs)
	fmt.Fprintf(w, "first tool image (runtime 1):   BuildKit, fresh daemon, exporting a registry cache %8.2fs   ssebench, empty store %6.2fs\n",
		res.BuildKit.FirstSeconds, res.Ssebench.FirstSeconds)
	fmt.Fprintf(w, "runtime bump (runtime 2):       BuildKit, fresh daemon, importing the registry cache %6.2fs   ssebench, empty store %6.2fs\n",
		res.BuildKit.RebuildSeconds, res.Ssebench.RebuildSeconds)
	mark := "met"
	if res.Ratio < res.Target {
		mark = "MISSED"
	}
	fmt.Fprintf(w, "speed-up of the runtime bump: %.1fx (target >= %.0fx: %s)\n", res.Ratio, res.Target, mark)
	fmt.Fprintf(w, "ssebench rebuild: %d layers indexed, system/source layers reused: %v, max RSS %.0f MB\n  push: %s\n",
		res.Ssebench.LayersIndexed, res.Ssebench.Reused, res.Ssebench.MaxRSSMB, res.Ssebench.Push)
}

// pushChildResult is what tool-push-child prints, as JSON, on stdout.
type pushChildResult struct {
	Digest   string `json:"digest"`
	Reused   bool   `json:"reused"`
	Indexed  int    `json:"layers_indexed"`
	Push     string `json:"push"`
	Uploaded int64  `json:"uploaded_bytes"`
}

// runPushChild is `ssebench tool --push` on a machine whose
// store and facts cache are the given directories: pipeline.Env.Tool, the
// case, runtime and previous tool image coming from the registry.
func runPushChild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("tool-push-child", flag.ContinueOnError)
	storeDir := fs.String("store", "", "image store directory")
	facts := fs.String("facts", "", "layer facts cache directory")
	prefix := fs.String("registry", "", "REGISTRY")
	caseRef := fs.String("case", "", "case image reference")
	runtimeRef := fs.String("runtime", "", "runtime image reference")
	epoch := fs.Int64("time", 0, "SOURCE_DATE_EPOCH")
	if err := fs.Parse(args); err != nil {
		return err
	}
	os.Setenv("SOURCE_DATE_EPOCH", strconv.FormatInt(*epoch, 10))
	s, err := store.Open(*storeDir)
	if err != nil {
		return err
	}
	defer s.Close()
	fc, err := assemble.NewFacts(*facts)
	if err != nil {
		return err
	}
	names := naming.NewNames(*prefix, benchVersion)
	reg, _, _ := strings.Cut(names.Registry, "/")
	// CI trusts its own registry (--trust-registry): the fast path.
	e := &pipeline.Env{Names: names, Store: s, Facts: fc, Trust: &trust.Policy{Registries: []string{reg}},
		RuntimeRef: *runtimeRef, Log: os.Stderr}
	b, err := e.Tool(ctx, pipeline.ToolRequest{Case: *caseRef, Task: benchTask, SourceDir: "/src/proj", Push: true})
	if err != nil {
		return err
	}
	out := pushChildResult{Digest: b.Digest.String(), Reused: b.How != "assembled", Indexed: fc.Indexed()}
	if b.Push != nil {
		out.Push, out.Uploaded = b.Push.String(), b.Push.Uploaded
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}
