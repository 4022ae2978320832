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
	"text/tabwriter"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/images/buildkit"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// Targets the benchmark reports against.
const (
	targetColdRatio    = 6.0
	targetRuntimeRatio = 3.0
	targetMaxRSSMB     = 200.0
)

// benchRepo is where the benchmark's images live in the registry.
const benchRepo = "ssebench-bench"

type toolFlags struct {
	registry   string
	osImage    string
	sharedAddr string
	buildkitd  string
	work       string
	jsonOut    string
	files, mb  int
	epoch      int64
	keep       bool
}

// Phase is one side-by-side measurement.
type Phase struct {
	Name            string  `json:"name"`
	BuildKitSeconds float64 `json:"buildkit_seconds"`
	SsebenchSeconds float64 `json:"ssebench_seconds"`
	Ratio           float64 `json:"ratio"`
	Target          float64 `json:"target_ratio,omitempty"`
	SsebenchMaxRSS  float64 `json:"ssebench_max_rss_mb"`
	SsebenchReused  bool    `json:"ssebench_reused_layers"`
	LayersIndexed   int     `json:"ssebench_layers_indexed"`
	SsebenchDigest  string  `json:"ssebench_digest"`
	BuildKitDigest  string  `json:"buildkit_digest,omitempty"`
}

// Results is what -json writes.
type Results struct {
	Case struct {
		Ref          string  `json:"ref"`
		Files        int     `json:"files"`
		SourceMB     int     `json:"source_mb"`
		Layers       int     `json:"layers"`
		CompressedMB float64 `json:"compressed_mb"`
	} `json:"case"`
	Runtime  [2]string `json:"runtime"`
	Platform string    `json:"platform"`
	CPUs     int       `json:"cpus"`
	Phases   []Phase   `json:"phases"`
	Started  time.Time `json:"started"`
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func runTool(ctx context.Context, args []string) error {
	var f toolFlags
	fs := flag.NewFlagSet("tool", flag.ContinueOnError)
	fs.StringVar(&f.registry, "registry", env("SSEBENCH_TEST_REGISTRY", "127.0.0.1:5000"), "host:port of the plain-HTTP registry")
	fs.StringVar(&f.osImage, "os-image", os.Getenv("SSEBENCH_TEST_OS_IMAGE"), "Debian OS image (default REGISTRY/ssebench/os/debian:bookworm)")
	fs.StringVar(&f.sharedAddr, "buildkit-host", env(buildkit.EnvHost, buildkit.DefaultAddress), "the shared buildkitd, used to build the inputs")
	fs.StringVar(&f.buildkitd, "buildkitd", "", "buildkitd binary for the throwaway daemon (default: scripts/install-deps.sh's, else PATH)")
	fs.StringVar(&f.work, "work", filepath.Join(os.TempDir(), "ssebench-bench"), "working directory")
	fs.StringVar(&f.jsonOut, "json", "", "also write the results as JSON to this file")
	fs.IntVar(&f.files, "files", 10000, "files in the generated source tree")
	fs.IntVar(&f.mb, "mb", 150, "size of the generated source tree in MB")
	fs.Int64Var(&f.epoch, "time", 1750000000, "build time (SOURCE_DATE_EPOCH) for both sides")
	fs.BoolVar(&f.keep, "keep", false, "keep the ssebench store and facts cache")
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
	refDockerfile, err := findReference()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.work, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(f.work, "buildkit-progress.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	say("progress of every build goes to %s", logPath)

	res := &Results{Platform: "linux/" + runtime.GOARCH, CPUs: runtime.NumCPU(), Started: time.Now().UTC()}
	shared, err := buildkit.New(ctx, buildkit.WithAddress(f.sharedAddr), buildkit.WithProgress(logf),
		buildkit.WithProgressMode(buildkit.ProgressPlain), buildkit.WithTempDir(f.work))
	if err != nil {
		return err
	}
	defer shared.Close()

	caseRef, err := ensureCase(ctx, shared, &f, res)
	if err != nil {
		return err
	}
	var runtimes [2]string
	for i := range runtimes {
		dir := filepath.Join(f.work, fmt.Sprintf("runtime-ctx-%d", i+1))
		if err := writeRuntimeContext(dir, uint64(i)); err != nil {
			return err
		}
		r, err := shared.Build(ctx, buildkit.Request{ContextDir: dir, Platform: res.Platform,
			Push: fmt.Sprintf("%s/%s/runtime:v%d", f.registry, benchRepo, i+1)})
		if err != nil {
			return err
		}
		runtimes[i] = fmt.Sprintf("%s/%s/runtime@%s", f.registry, benchRepo, r.Digest)
	}
	res.Runtime = runtimes
	say("case image %s (%d layers, %.0f MB compressed)", caseRef, res.Case.Layers, res.Case.CompressedMB)
	say("runtime images %s, %s", runtimes[0], runtimes[1])

	say("starting a throwaway buildkitd (empty cache)")
	d, err := startDaemon(ctx, f.buildkitd, f.work, f.registry)
	if err != nil {
		return err
	}
	defer func() {
		if err := d.stop(); err != nil {
			say("removing the throwaway buildkitd's state: %v", err)
		}
	}()
	fresh, err := buildkit.New(ctx, buildkit.WithAddress(d.addr), buildkit.WithProgress(logf),
		buildkit.WithProgressMode(buildkit.ProgressPlain), buildkit.WithTempDir(f.work))
	if err != nil {
		return err
	}
	defer fresh.Close()

	runDir, err := os.MkdirTemp(f.work, "ssebench-")
	if err != nil {
		return err
	}
	if !f.keep {
		defer os.RemoveAll(runDir)
	}
	store, facts := filepath.Join(runDir, "store"), filepath.Join(runDir, "facts")
	toolRef := fmt.Sprintf("%s/tool/bench:1.0.0", f.registry)

	bkBuild := func(runtimeRef, tag string) (float64, string, error) {
		req := buildkit.Request{
			ContextDir:    filepath.Dir(refDockerfile),
			Platform:      res.Platform,
			ImageContexts: map[string]string{"case": caseRef, "runtime": runtimeRef},
			BuildArgs:     map[string]string{"SOURCE_DIR": "/src/proj", "SOURCE_DATE_EPOCH": strconv.FormatInt(f.epoch, 10)},
			// Into the case image's repository, where its layers already are:
			// BuildKit uploads only what it made, as ssebench stores only
			// what it made.
			Push: fmt.Sprintf("%s/%s/case:%s", f.registry, benchRepo, tag),
		}
		start := time.Now()
		r, err := fresh.Build(ctx, req)
		if err != nil {
			return 0, "", err
		}
		return time.Since(start).Seconds(), r.Digest.String(), nil
	}
	// The facts the cold run learns are published here, as a CI machine
	// that pushes would; a later fresh machine fetches them.
	factsRepo := fmt.Sprintf("%s/%s/layer-facts-%d", f.registry, benchRepo, time.Now().UnixNano())
	child := func(runtimeRef, out string, previous bool, extra ...string) (float64, float64, *childResult, error) {
		exe, err := os.Executable()
		if err != nil {
			return 0, 0, nil, err
		}
		args := []string{"assemble-child", "-store", store, "-facts", facts, "-case", caseRef,
			"-runtime", runtimeRef, "-time", strconv.FormatInt(f.epoch, 10), "-out", out}
		if previous {
			args = append(args, "-previous")
		}
		args = append(args, extra...)
		cmd := exec.CommandContext(ctx, exe, args...)
		var stdout bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return 0, 0, nil, fmt.Errorf("ssebench assembly: %w", err)
		}
		secs := time.Since(start).Seconds()
		var cr childResult
		if err := json.Unmarshal(stdout.Bytes(), &cr); err != nil {
			return 0, 0, nil, fmt.Errorf("reading the child's result %q: %w", stdout.String(), err)
		}
		ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		var rss float64
		if ru != nil {
			rss = float64(ru.Maxrss) / 1024 // kilobytes on Linux
		}
		return secs, rss, &cr, nil
	}
	phase := func(name string, target float64, runtimeRef, tag string, bk bool, previous bool) error {
		p := Phase{Name: name, Target: target}
		if bk {
			say("%s: BuildKit", name)
			secs, dig, err := bkBuild(runtimeRef, tag)
			if err != nil {
				return err
			}
			p.BuildKitSeconds, p.BuildKitDigest = secs, dig
		}
		say("%s: ssebench", name)
		var extra []string
		if name == "cold" {
			extra = []string{"-facts-repo", factsRepo, "-publish-facts"}
		}
		secs, rss, cr, err := child(runtimeRef, toolRef, previous, extra...)
		if err != nil {
			return err
		}
		p.SsebenchSeconds, p.SsebenchMaxRSS, p.SsebenchReused, p.LayersIndexed, p.SsebenchDigest = secs, rss, cr.Reused, cr.Indexed, cr.Digest
		if bk && secs > 0 {
			p.Ratio = p.BuildKitSeconds / secs
		}
		res.Phases = append(res.Phases, p)
		return nil
	}
	if err := phase("cold", targetColdRatio, runtimes[0], "reference-cold", true, false); err != nil {
		return err
	}
	// A second fresh machine (empty store, empty facts cache) whose
	// registry holds the facts the cold run published: no base layer is
	// decompressed to index it. Compared with BuildKit's cold time.
	{
		say("cold, facts in the registry: ssebench")
		fresh := filepath.Join(runDir, "fresh")
		args := []string{"-facts-repo", factsRepo, "-store", filepath.Join(fresh, "store"), "-facts", filepath.Join(fresh, "facts")}
		secs, rss, cr, err := child(runtimes[0], toolRef, false, args...)
		if err != nil {
			return err
		}
		p := Phase{Name: "cold, facts in the registry", Target: targetColdRatio, BuildKitSeconds: res.Phases[0].BuildKitSeconds,
			SsebenchSeconds: secs, SsebenchMaxRSS: rss, LayersIndexed: cr.Indexed, SsebenchDigest: cr.Digest}
		if secs > 0 {
			p.Ratio = p.BuildKitSeconds / secs
		}
		res.Phases = append(res.Phases, p)
	}
	if err := phase("runtime change", targetRuntimeRatio, runtimes[1], "reference-runtime2", true, true); err != nil {
		return err
	}
	// For information: what a warm facts cache alone gives, when no earlier
	// tool image is offered (the source tree's bytes are read again).
	if err := phase("again, facts cache only", 0, runtimes[0], "", false, false); err != nil {
		return err
	}

	report(os.Stdout, res)
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

// ensureCase returns the case image's digest reference, building and
// pushing it only when the registry lacks its tag.
func ensureCase(ctx context.Context, c *buildkit.Client, f *toolFlags, res *Results) (string, error) {
	reg, err := remote.NewResolver(remote.WithInsecureRegistries(f.registry))
	if err != nil {
		return "", err
	}
	osr, err := reg.Resolve(ctx, f.osImage)
	if err != nil {
		return "", fmt.Errorf("reading the OS image (scripts/os-image.sh pushes it): %w", err)
	}
	key := genKey(f.files, f.mb, osr.Descriptor.Digest.String())
	tag := fmt.Sprintf("%s/%s/case:%s", f.registry, benchRepo, key)
	ref, err := name.ParseReference(tag, name.Insecure)
	if err != nil {
		return "", err
	}
	desc, err := ggremote.Head(ref, ggremote.WithContext(ctx))
	if err != nil {
		dir := filepath.Join(f.work, "case-ctx-"+key)
		say("generating the case context (%d files, %d MB) in %s", f.files, f.mb, dir)
		os.RemoveAll(dir)
		if err := writeCaseContext(dir, f.files, f.mb); err != nil {
			return "", err
		}
		defer os.RemoveAll(dir)
		say("building the case image %s (apt-get install %s)", tag, toolchainPackages)
		r, err := c.Build(ctx, buildkit.Request{ContextDir: dir, Platform: res.Platform,
			BuildArgs: map[string]string{"OS_IMAGE": f.osImage}, Push: tag})
		if err != nil {
			return "", err
		}
		if desc, err = ggremote.Head(ref, ggremote.WithContext(ctx)); err != nil {
			return "", err
		}
		if desc.Digest != r.Digest {
			return "", fmt.Errorf("pushed case image %s but the registry has %s", r.Digest, desc.Digest)
		}
	}
	digestRef := fmt.Sprintf("%s/%s/case@%s", f.registry, benchRepo, desc.Digest)
	img, err := reg.Image(ctx, digestRef)
	if err != nil {
		return "", err
	}
	m, err := img.Manifest()
	if err != nil {
		return "", err
	}
	var size int64
	for _, l := range m.Layers {
		size += l.Size
	}
	res.Case.Ref, res.Case.Files, res.Case.SourceMB = digestRef, f.files, f.mb
	res.Case.Layers, res.Case.CompressedMB = len(m.Layers), float64(size)/(1<<20)
	return digestRef, nil
}

// findReference finds the reference Dockerfile of the oracle test, from
// the module root or any directory below it.
func findReference() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "assemble", "testdata", "oracle", "reference", "Dockerfile")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("assemble/testdata/oracle/reference/Dockerfile not found: run from the ssebench module")
		}
		dir = parent
	}
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func report(w io.Writer, res *Results) {
	fmt.Fprintf(w, "case image: %s\n  %d layers, %.0f MB compressed; source tree %d files, %d MB\n",
		res.Case.Ref, res.Case.Layers, res.Case.CompressedMB, res.Case.Files, res.Case.SourceMB)
	fmt.Fprintf(w, "platform %s, %d CPUs\n\n", res.Platform, res.CPUs)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tBuildKit (s)\tssebench (s)\tspeed-up\ttarget\tssebench max RSS (MB)\tlayers indexed\treused\t")
	for _, p := range res.Phases {
		bk, ratio, target := "-", "-", "-"
		if p.BuildKitSeconds > 0 {
			bk = fmt.Sprintf("%.2f", p.BuildKitSeconds)
			ratio = fmt.Sprintf("%.1fx", p.Ratio)
		}
		if p.Target > 0 {
			mark := "met"
			if p.Ratio < p.Target {
				mark = "MISSED"
			}
			target = fmt.Sprintf(">= %.0fx %s", p.Target, mark)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%s\t%s\t%.0f\t%d\t%v\t\n", p.Name, bk, p.SsebenchSeconds, ratio, target, p.SsebenchMaxRSS, p.LayersIndexed, p.SsebenchReused)
	}
	tw.Flush()
	var peak float64
	for _, p := range res.Phases {
		peak = max(peak, p.SsebenchMaxRSS)
	}
	mark := "met"
	if peak >= targetMaxRSSMB {
		mark = "MISSED"
	}
	fmt.Fprintf(w, "\nssebench peak memory %.0f MB (target < %.0f MB: %s)\n", peak, targetMaxRSSMB, mark)
	fmt.Fprintln(w, strings.Repeat("-", 20))
}
