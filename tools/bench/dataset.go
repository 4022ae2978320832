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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/42-b3yond-6ug/ssebench/images/buildkit"
	"github.com/42-b3yond-6ug/ssebench/internal/units"
	"github.com/42-b3yond-6ug/ssebench/results"
)

// DatasetResults is what dataset -json writes: the figures of a whole
// dataset, ssebench beside BuildKit on the same inputs.
type DatasetResults struct {
	Dataset  string    `json:"dataset"`
	Tasks    int       `json:"tasks"`
	Platform string    `json:"platform"`
	CPUs     int       `json:"cpus"`
	Started  time.Time `json:"started"`

	// CaseSeconds is build-case of every task (BuildKit on the shared
	// daemon, --force: its cache of the base and module downloads warm).
	CaseSeconds float64 `json:"case_seconds"`
	// Tool and agent (dummy) images of every task, cold and after a
	// runtime bump.
	SsebenchCold float64 `json:"ssebench_cold_seconds"`
	SsebenchBump float64 `json:"ssebench_bump_seconds"`
	BuildKitCold float64 `json:"buildkit_cold_seconds"`
	BuildKitBump float64 `json:"buildkit_bump_seconds"`
	// BuildKitTasks is how many tasks BuildKit built (the first ones):
	// with fewer than Tasks, compare the times per task.
	BuildKitTasks int `json:"buildkit_tasks"`
	// StoreBytes is the store's blob pool after the builds, ImageBytes the
	// sum of every image's own size (what the images weigh one by one).
	StoreBytes   int64 `json:"store_bytes"`
	ImageBytes   int64 `json:"image_bytes"`
	Images       int   `json:"images"`
	ArchiveBytes int64 `json:"archive_bytes"`
	// One tool-image assembly on the largest case, cold (its own empty
	// store and facts cache) and pushed: ssebench's peak resident memory,
	// which must not follow the case's size (layers are streamed).
	AssemblyTask   string  `json:"assembly_task,omitempty"`
	AssemblyCase   int64   `json:"assembly_case_bytes,omitempty"`
	AssemblyMaxRSS float64 `json:"assembly_max_rss_mb,omitempty"`
	// Eval of dummy and reference over the dataset.
	EvalRuns        int     `json:"eval_runs,omitempty"`
	EvalSeconds     float64 `json:"eval_seconds,omitempty"`
	EvalJobs        int     `json:"eval_jobs,omitempty"`
	ContainerPerRun float64 `json:"container_seconds_per_run,omitempty"`
	OwnPerRun       float64 `json:"own_seconds_per_run,omitempty"`
	ReferencePassed int     `json:"reference_passed,omitempty"`
	DummyPassed     int     `json:"dummy_passed,omitempty"`
}

// runDataset measures a whole dataset (default datasets/govuln):
//
//   - its case images, built and pushed with build-case --force;
//   - the tool and dummy-agent images of every task: ssebench (eval
//     --build-only, an empty store and facts cache, the cases read from the
//     registry) against BuildKit building the same tool layers (the
//     oracle's reference Dockerfile) and the agent's Dockerfile on a fresh
//     daemon, task after task; then both again after a runtime bump (the
//     runtime with one more file), ssebench on its store, BuildKit on its
//     now warm daemon;
//   - the store's bytes against the sum of the images' sizes, and the
//     weight of one save archive of every image;
//   - eval of dummy and reference over the dataset: wall time, the
//     containers' time per run and ssebench's own.
func runDataset(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dataset", flag.ContinueOnError)
	reg := fs.String("registry", env("SSEBENCH_TEST_REGISTRY", "127.0.0.1:5000"), "host:port of the plain-HTTP registry")
	osImage := fs.String("os-image", env("SSEBENCH_TEST_OS_IMAGE", ""), "the Debian OS image the base images start from")
	bkd := fs.String("buildkitd", "", "buildkitd binary for the throwaway daemon (default: scripts/install-deps.sh's, else PATH)")
	work := fs.String("work", filepath.Join(os.TempDir(), "ssebench-bench-dataset"), "working directory")
	dsFlag := fs.String("dataset", "datasets/govuln", "dataset folder, relative to the module root")
	limit := fs.Int("tasks", 0, "only the first N tasks (0: all)")
	jobs := fs.Int("jobs", 2, "runs at once in the evaluation")
	skipEval := fs.Bool("skip-eval", false, "measure the images only")
	bkTasks := fs.Int("buildkit-tasks", 0, "BuildKit builds only the first N tasks (0: all): its throwaway daemon keeps every layer, about 0.5 GiB a task")
	jsonOut := fs.String("json", "", "also write the figures as JSON to this file")
	repo := fs.String("repo", benchRepo, "repository prefix under the registry (one's own, when others use the registry too)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *osImage == "" {
		return errors.New("no OS image: pass -os-image or source scripts/env.sh")
	}
	if *bkd == "" {
		var err error
		if *bkd, err = findBuildkitd(); err != nil {
			return err
		}
	}
	refDockerfile, err := findReference()
	if err != nil {
		return err
	}
	home, bin, err := buildSSEBench(ctx, *work)
	if err != nil {
		return err
	}
	dsDir := filepath.Join(home, *dsFlag)
	ids, err := datasetTasks(dsDir, *limit)
	if err != nil {
		return err
	}
	res := &DatasetResults{Dataset: *dsFlag, Tasks: len(ids), Platform: "linux/" + runtime.GOARCH, CPUs: runtime.NumCPU(), Started: time.Now().UTC()}
	prefix := fmt.Sprintf("%s/%s/dataset-%d", *reg, *repo, time.Now().Unix())
	storeDir, cacheDir := filepath.Join(*work, "store"), filepath.Join(*work, "cache")
	for _, d := range []string{storeDir, cacheDir, filepath.Join(*work, "runs")} {
		os.RemoveAll(d)
	}
	// run runs ssebench on a store and facts cache; it returns the wall
	// time and the child's peak resident memory in MB.
	run := func(store, cache string, stdout io.Writer, args ...string) (time.Duration, float64, error) {
		global := []string{"--home", home, "--store", store, "--registry", prefix, "--quiet"}
		cmd := exec.CommandContext(ctx, bin, append(global, args...)...)
		cmd.Env = append(os.Environ(), "SSEBENCH_CACHE="+cache, "SOURCE_DATE_EPOCH=1750000000")
		cmd.Stdout, cmd.Stderr = stdout, os.Stderr
		start := time.Now()
		err := cmd.Run()
		took := time.Since(start)
		if err != nil {
			err = fmt.Errorf("ssebench %s: %w", strings.Join(args, " "), err)
		}
		var rss float64
		if cmd.ProcessState != nil {
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				rss = float64(ru.Maxrss) / 1024 // kilobytes on Linux
			}
		}
		return took, rss, err
	}
	cli := func(stdout io.Writer, args ...string) (time.Duration, error) {
		took, _, err := run(storeDir, cacheDir, stdout, args...)
		return took, err
	}
	taskList := strings.Join(ids, ",")

	say("inputs: runtime and base images in %s (not timed)", prefix)
	if _, err := cli(os.Stderr, "runtime", "build", "--platform", res.Platform, "--push"); err != nil {
		return err
	}
	if _, err := cli(os.Stderr, "base-images", "--os-image", *osImage, "--push"); err != nil {
		return err
	}
	say("case images of %d tasks: build-case --force --push", len(ids))
	var caseOut bytes.Buffer
	took, err := cli(&caseOut, "build-case", "--benchmarks", dsDir, "--tasks", taskList, "--force", "--push", "--json")
	if err != nil {
		return err
	}
	res.CaseSeconds = took.Seconds()
	var cases []struct {
		Task, Image, Digest string
	}
	if err := json.Unmarshal(caseOut.Bytes(), &cases); err != nil {
		return fmt.Errorf("reading build-case --json: %w", err)
	}
	caseRef := map[string]string{}
	for _, c := range cases {
		if c.Digest == "" {
			return fmt.Errorf("build-case gave no digest for %s", c.Task)
		}
		repo := c.Image
		if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
			repo = repo[:i]
		}
		caseRef[c.Task] = repo + "@" + c.Digest
	}

	// The runtime both sides build on, and the bumped one: the same image
	// with one more file, as a release that changes one thing is.
	rt0 := prefix + "/runtime:0.1.0-dev"
	shared, err := buildkit.New(ctx, buildkit.WithAddress(env(buildkit.EnvHost, buildkit.DefaultAddress)),
		buildkit.WithProgress(io.Discard), buildkit.WithProgressMode(buildkit.ProgressQuiet), buildkit.WithTempDir(*work))
	if err != nil {
		return err
	}
	defer shared.Close()
	bumpDir := filepath.Join(*work, "runtime-bump")
	os.RemoveAll(bumpDir)
	if err := os.MkdirAll(bumpDir, 0o755); err != nil {
		return err
	}
	df := "FROM " + rt0 + "\nCOPY bump /ssebench/bump\n"
	if err := os.WriteFile(filepath.Join(bumpDir, "Dockerfile"), []byte(df), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(bumpDir, "bump"), []byte(res.Started.String()+"\n"), 0o644); err != nil {
		return err
	}
	r1, err := shared.Build(ctx, buildkit.Request{ContextDir: bumpDir, Platform: res.Platform, Push: prefix + "/runtime:bump"})
	if err != nil {
		return fmt.Errorf("the bumped runtime: %w", err)
	}
	rt1 := prefix + "/runtime@" + r1.Digest.String()

	say("ssebench: tool and dummy-agent images of %d tasks, empty store and facts cache", len(ids))
	build := []string{"eval", "--agents", "dummy", "--local", dsDir, "--tasks", taskList, "--build-only", "--runs-dir", filepath.Join(*work, "runs", "build")}
	if took, err = cli(os.Stderr, append(build, "--runtime", rt0)...); err != nil {
		return err
	}
	res.SsebenchCold = took.Seconds()
	say("ssebench: the same after a runtime bump")
	if took, err = cli(os.Stderr, append(build, "--runtime", rt1)...); err != nil {
		return err
	}
	res.SsebenchBump = took.Seconds()

	var du bytes.Buffer
	if _, err := cli(&du, "store", "du", "--json"); err != nil {
		return err
	}
	var usage struct {
		Bytes  int64 `json:"bytes"`
		Images []struct {
			Name   string `json:"name"`
			Local  int64  `json:"local_bytes"`
			Remote int64  `json:"remote_bytes"`
		} `json:"images"`
	}
	if err := json.Unmarshal(du.Bytes(), &usage); err != nil {
		return fmt.Errorf("reading store du --json: %w", err)
	}
	res.StoreBytes = usage.Bytes
	var names []string
	for _, im := range usage.Images {
		res.ImageBytes += im.Local + im.Remote
		names = append(names, im.Name)
	}
	res.Images = len(names)
	// The largest case image (its layers' compressed sizes), for the
	// assembly's peak memory.
	caseBytes := map[string]int64{}
	for _, id := range ids {
		var out bytes.Buffer
		if _, err := cli(&out, "inspect", "--json", caseRef[id]); err != nil {
			return err
		}
		var in struct {
			Layers []struct {
				Size int64 `json:"size"`
			} `json:"layers"`
		}
		if err := json.Unmarshal(out.Bytes(), &in); err != nil {
			return fmt.Errorf("reading inspect --json: %w", err)
		}
		for _, l := range in.Layers {
			caseBytes[id] += l.Size
		}
	}
	for _, id := range ids {
		if res.AssemblyTask == "" || caseBytes[id] > res.AssemblyCase {
			res.AssemblyTask, res.AssemblyCase = id, caseBytes[id]
		}
	}
	archive := filepath.Join(*work, "dataset.tar")
	os.Remove(archive)
	if _, err := cli(os.Stderr, append([]string{"save", "-o", archive}, names...)...); err != nil {
		return err
	}
	if fi, err := os.Stat(archive); err == nil {
		res.ArchiveBytes = fi.Size()
	}
	os.Remove(archive)

	say("ssebench: one tool assembly on the largest case (%s, %s), its own empty store, pushed", res.AssemblyTask, units.Bytes(res.AssemblyCase))
	memStore, memCache := filepath.Join(*work, "store-mem"), filepath.Join(*work, "cache-mem")
	os.RemoveAll(memStore)
	os.RemoveAll(memCache)
	src, err := taskSource(dsDir, res.AssemblyTask)
	if err != nil {
		return err
	}
	if _, res.AssemblyMaxRSS, err = run(memStore, memCache, io.Discard, "assemble", "tool", "--case", caseRef[res.AssemblyTask],
		"--task", res.AssemblyTask, "--source", src, "--runtime", rt0, "--push"); err != nil {
		return err
	}
	os.RemoveAll(memStore)
	os.RemoveAll(memCache)

	say("BuildKit: the tool layers (reference Dockerfile) and the dummy agent of each task, on a fresh buildkitd")
	d, err := startDaemon(ctx, *bkd, *work, *reg)
	if err != nil {
		return err
	}
	defer d.stop()
	fresh, err := buildkit.New(ctx, buildkit.WithAddress(d.addr), buildkit.WithProgress(io.Discard),
		buildkit.WithProgressMode(buildkit.ProgressQuiet), buildkit.WithTempDir(*work))
	if err != nil {
		return err
	}
	defer fresh.Close()
	bkIDs := ids
	if *bkTasks > 0 && *bkTasks < len(ids) {
		bkIDs = ids[:*bkTasks]
	}
	res.BuildKitTasks = len(bkIDs)
	bkAll := func(rt, tag string) (float64, error) {
		start := time.Now()
		for i, id := range bkIDs {
			src, err := taskSource(dsDir, id)
			if err != nil {
				return 0, err
			}
			tool := fmt.Sprintf("%s/bk/tool-%d:%s", prefix, i, tag)
			r, err := fresh.Build(ctx, buildkit.Request{
				ContextDir: filepath.Dir(refDockerfile), Platform: res.Platform,
				ImageContexts: map[string]string{"case": caseRef[id], "runtime": rt},
				BuildArgs:     map[string]string{"SOURCE_DIR": src, "SOURCE_DATE_EPOCH": "1750000000"},
				Push:          tool,
			})
			if err != nil {
				return 0, fmt.Errorf("BuildKit, the tool image of %s: %w", id, err)
			}
			toolRef := strings.TrimSuffix(tool, ":"+tag) + "@" + r.Digest.String()
			if _, err := fresh.Build(ctx, buildkit.Request{
				ContextDir: filepath.Join(home, "agents", "dummy"), Platform: res.Platform,
				ImageContexts: map[string]string{"ssebench-agent": toolRef},
				Push:          fmt.Sprintf("%s/bk/agent-%d:%s", prefix, i, tag),
			}); err != nil {
				return 0, fmt.Errorf("BuildKit, the dummy agent of %s: %w", id, err)
			}
		}
		return time.Since(start).Seconds(), nil
	}
	if res.BuildKitCold, err = bkAll(rt0, "cold"); err != nil {
		return err
	}
	say("BuildKit: the same after the runtime bump, warm daemon")
	if res.BuildKitBump, err = bkAll(rt1, "bump"); err != nil {
		return err
	}

	if !*skipEval {
		say("eval: dummy and reference on %d tasks, --jobs %d", len(ids), *jobs)
		evalDir := filepath.Join(*work, "runs", "eval")
		took, err := cli(io.Discard, "eval", "--agents", "dummy,reference", "--local", dsDir, "--tasks", taskList,
			"--jobs", strconv.Itoa(*jobs), "--timeout", "1200", "--runs-dir", evalDir)
		if err != nil {
			return err
		}
		res.EvalSeconds, res.EvalJobs = took.Seconds(), *jobs
		runs, err := results.List(evalDir)
		if err != nil {
			return err
		}
		var container time.Duration
		for _, r := range runs {
			container += r.ContainerTime()
			if r.Passed() {
				switch r.Summary.Agent {
				case "reference":
					res.ReferencePassed++
				case "dummy":
					res.DummyPassed++
				}
			}
		}
		if res.EvalRuns = len(runs); res.EvalRuns > 0 {
			n := float64(res.EvalRuns)
			res.ContainerPerRun = container.Seconds() / n
			// The runs overlap --jobs at a time: ssebench's own share of
			// the wall time is what the containers do not fill.
			res.OwnPerRun = (took.Seconds()*float64(*jobs) - container.Seconds()) / n
		}
	}
	reportDataset(os.Stdout, res)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		return os.WriteFile(*jsonOut, append(b, '\n'), 0o644)
	}
	return nil
}

// datasetTasks lists the task folders of dir (those with sse/config.yaml),
// sorted, at most limit of them (0: all).
func datasetTasks(dir string, limit int) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the dataset: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "sse", "config.yaml")); e.IsDir() && err == nil {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	if limit > 0 && len(ids) > limit {
		ids = ids[:limit]
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%s has no task folder", dir)
	}
	return ids, nil
}

// taskSource is the task's SOURCE_DIR (config.yaml's source).
func taskSource(dir, id string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, id, "sse", "config.yaml"))
	if err != nil {
		return "", err
	}
	var c struct {
		Source string `yaml:"source"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil || c.Source == "" {
		return "", fmt.Errorf("%s: no source in sse/config.yaml (%v)", id, err)
	}
	return c.Source, nil
}

func reportDataset(w io.Writer, r *DatasetResults) {
	n := float64(r.Tasks)
	fmt.Fprintf(w, "dataset %s: %d tasks, %s, %d CPUs, %s\n", r.Dataset, r.Tasks, r.Platform, r.CPUs, r.Started.Format("2006-01-02"))
	fmt.Fprintf(w, "case images (BuildKit, build-case --force, warm daemon cache): %.1fs, %.1fs per task\n", r.CaseSeconds, r.CaseSeconds/n)
	bn := float64(max(r.BuildKitTasks, 1))
	if r.BuildKitTasks == r.Tasks {
		fmt.Fprintf(w, "%-40s %12s %12s %8s\n", "tool + dummy agent images, all tasks", "ssebench", "BuildKit", "ratio")
		fmt.Fprintf(w, "%-40s %11.1fs %11.1fs %7.1fx\n", "cold (empty store / fresh daemon)", r.SsebenchCold, r.BuildKitCold, r.BuildKitCold/r.SsebenchCold)
		fmt.Fprintf(w, "%-40s %11.1fs %11.1fs %7.1fx\n", "after a runtime bump", r.SsebenchBump, r.BuildKitBump, r.BuildKitBump/r.SsebenchBump)
	} else {
		fmt.Fprintf(w, "tool + dummy agent images: ssebench on all %d tasks, BuildKit on the first %d\n", r.Tasks, r.BuildKitTasks)
		fmt.Fprintf(w, "%-40s %12s %12s\n", "", "ssebench", "BuildKit")
		fmt.Fprintf(w, "%-40s %11.1fs %11.1fs\n", "cold (empty store / fresh daemon)", r.SsebenchCold, r.BuildKitCold)
		fmt.Fprintf(w, "%-40s %11.1fs %11.1fs\n", "after a runtime bump", r.SsebenchBump, r.BuildKitBump)
	}
	fmt.Fprintf(w, "%-40s %11.2fs %11.2fs %7.1fx\n", "per task, cold", r.SsebenchCold/n, r.BuildKitCold/bn, (r.BuildKitCold/bn)/(r.SsebenchCold/n))
	fmt.Fprintf(w, "%-40s %11.2fs %11.2fs %7.1fx\n", "per task, after a runtime bump", r.SsebenchBump/n, r.BuildKitBump/bn, (r.BuildKitBump/bn)/(r.SsebenchBump/n))
	fmt.Fprintf(w, "store: %s for %d images whose sizes sum to %s (sharing saves %.0f%%); one save archive of them: %s\n",
		units.Bytes(r.StoreBytes), r.Images, units.Bytes(r.ImageBytes), 100*(1-float64(r.StoreBytes)/float64(max(r.ImageBytes, 1))), units.Bytes(r.ArchiveBytes))
	if r.AssemblyMaxRSS > 0 {
		fmt.Fprintf(w, "peak memory of one tool assembly (largest case, %s, %s; cold, pushed): %.0f MB\n", r.AssemblyTask, units.Bytes(r.AssemblyCase), r.AssemblyMaxRSS)
	}
	if r.EvalRuns > 0 {
		fmt.Fprintf(w, "eval dummy+reference: %d runs in %.1fs (--jobs %d); per run: containers %.1fs, ssebench's own %.1fs; reference passed %d/%d, dummy passed %d/%d\n",
			r.EvalRuns, r.EvalSeconds, r.EvalJobs, r.ContainerPerRun, r.OwnPerRun, r.ReferencePassed, r.Tasks, r.DummyPassed, r.Tasks)
	}
}
