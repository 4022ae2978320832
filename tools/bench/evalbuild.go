package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/42-b3yond-6ug/ssebench/assemble"
	"github.com/42-b3yond-6ug/ssebench/evaluate"
	"github.com/42-b3yond-6ug/ssebench/images/buildkit"
	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/pipeline"
	"github.com/42-b3yond-6ug/ssebench/registry/naming"
)

// evalBaseDockerfile is the one base of the generated dataset: the OS image
// with a toolchain, as a language base image is.
const evalBaseDockerfile = `ARG OS_IMAGE
FROM ${OS_IMAGE}
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends ` + toolchainPackages + ` \
 && rm -rf /var/lib/apt/lists/*
RUN useradd -u 1000 -m -s /bin/bash ubuntu
`

// runEvalBuild compares the build phase of an evaluation of -tasks
// generated tasks on one base (the tool image and the dummy agent's image of
// each, assembled by the evaluation engine with a cold store and an empty
// facts cache) with BuildKit building the same tool layers (the oracle's
// reference Dockerfile) task after task on a fresh daemon. It prints the
// ratio and the seconds per task after the first, and how many layers
// ssebench read to index them: the base's once.
func runEvalBuild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("eval-build", flag.ContinueOnError)
	reg := fs.String("registry", env("SSEBENCH_TEST_REGISTRY", "127.0.0.1:5000"), "host:port of the plain-HTTP registry")
	osImage := fs.String("os-image", os.Getenv("SSEBENCH_TEST_OS_IMAGE"), "Debian OS image")
	sharedAddr := fs.String("buildkit-host", env(buildkit.EnvHost, buildkit.DefaultAddress), "the shared buildkitd, used to build the inputs")
	bkd := fs.String("buildkitd", "", "buildkitd binary for the throwaway daemon (default: scripts/install-deps.sh's, else PATH)")
	work := fs.String("work", filepath.Join(os.TempDir(), "ssebench-bench-evalbuild"), "working directory")
	ntasks := fs.Int("tasks", 8, "generated tasks")
	files := fs.Int("files", 2000, "files in each task's source tree")
	mb := fs.Int("mb", 20, "MB of each task's source tree")
	epoch := fs.Int64("time", 1750000000, "build time (SOURCE_DATE_EPOCH) for both sides")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *osImage == "" {
		*osImage = *reg + "/ssebench/os/debian:bookworm"
	}
	if *ntasks < 2 {
		return errors.New("-tasks: want at least 2")
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
	home, err := moduleRoot()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*work, 0o755); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(*work, "buildkit-progress.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	plat := "linux/" + runtime.GOARCH
	repo := fmt.Sprintf("%s/%s/evalbuild", *reg, benchRepo)
	shared, err := buildkit.New(ctx, buildkit.WithAddress(*sharedAddr), buildkit.WithProgress(logf),
		buildkit.WithProgressMode(buildkit.ProgressPlain), buildkit.WithTempDir(*work))
	if err != nil {
		return err
	}
	defer shared.Close()
	build := func(dir, df string, bargs map[string]string, push string) (string, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		if df != "" {
			if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
				return "", err
			}
		}
		r, err := shared.Build(ctx, buildkit.Request{ContextDir: dir, Platform: plat, BuildArgs: bargs, Push: push})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s@%s", push[:len(push)-len(":x")], r.Digest), nil
	}

	say("inputs (BuildKit on the shared daemon, cached): one base, %d case images of %d files / %d MB, a runtime", *ntasks, *files, *mb)
	base, err := build(filepath.Join(*work, "base-ctx"), evalBaseDockerfile, map[string]string{"OS_IMAGE": *osImage}, repo+"/base:x")
	if err != nil {
		return err
	}
	ids := make([]string, *ntasks)
	cases := map[string]string{}
	for i := range ids {
		ids[i] = fmt.Sprintf("bench-%d-%07d", i+1, i+1)
		dir := filepath.Join(*work, "case-ctx-"+ids[i])
		os.RemoveAll(dir)
		if err := writeEvalCase(dir, ids[i], base, uint64(i), *files, *mb); err != nil {
			return err
		}
		if cases[ids[i]], err = build(dir, "", nil, fmt.Sprintf("%s/case-%d:x", repo, i+1)); err != nil {
			return err
		}
	}
	rtDir := filepath.Join(*work, "runtime-ctx")
	if err := writeRuntimeContext(rtDir, 0); err != nil {
		return err
	}
	rt, err := build(rtDir, "", nil, repo+"/runtime:x")
	if err != nil {
		return err
	}

	say("BuildKit: the tool layers of each task, one after another, on a fresh buildkitd")
	d, err := startDaemon(ctx, *bkd, *work, *reg)
	if err != nil {
		return err
	}
	defer d.stop()
	fresh, err := buildkit.New(ctx, buildkit.WithAddress(d.addr), buildkit.WithProgress(logf),
		buildkit.WithProgressMode(buildkit.ProgressPlain), buildkit.WithTempDir(*work))
	if err != nil {
		return err
	}
	defer fresh.Close()
	var bkTimes []float64
	for i, id := range ids {
		start := time.Now()
		if _, err := fresh.Build(ctx, buildkit.Request{
			ContextDir: filepath.Dir(refDockerfile), Platform: plat,
			ImageContexts: map[string]string{"case": cases[id], "runtime": rt},
			BuildArgs:     map[string]string{"SOURCE_DIR": "/src/proj", "SOURCE_DATE_EPOCH": strconv.FormatInt(*epoch, 10)},
			Push:          fmt.Sprintf("%s/case-%d:tool", repo, i+1),
		}); err != nil {
			return fmt.Errorf("BuildKit, task %s: %w", id, err)
		}
		bkTimes = append(bkTimes, time.Since(start).Seconds())
		say("  %s: %.1fs", id, bkTimes[i])
	}

	say("ssebench: eval --build-only of the dummy agent on the %d tasks, cold store and facts cache, one task at a time", *ntasks)
	cold, err := os.MkdirTemp(*work, "cold-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cold)
	st, err := store.Open(filepath.Join(cold, "store"))
	if err != nil {
		return err
	}
	defer st.Close()
	facts, err := assemble.NewFacts(filepath.Join(cold, "facts"))
	if err != nil {
		return err
	}
	os.Setenv("SOURCE_DATE_EPOCH", strconv.FormatInt(*epoch, 10))
	e := &pipeline.Env{Home: home, Names: naming.NewNames(fmt.Sprintf("%s-%d", repo, time.Now().UnixNano()), "0.1.0-dev"),
		Store: st, Facts: facts, RuntimeRef: rt}
	b := &buildBackend{env: e, cases: cases, facts: facts}
	plan, err := evaluate.NewPlan([]string{"dummy"}, ids, 1)
	if err != nil {
		return err
	}
	edir := filepath.Join(cold, "eval")
	if err := evaluate.WritePlan(edir, plan); err != nil {
		return err
	}
	start := time.Now()
	if _, err := evaluate.Evaluate(ctx, b, edir, plan, evaluate.WithJobs(1), evaluate.WithBuildOnly()); err != nil {
		return err
	}
	total := time.Since(start).Seconds()
	for _, t := range b.times {
		say("  %s: %.2fs (layers indexed so far %d)", t.task, t.secs, t.indexed)
	}

	var bkTotal float64
	for _, s := range bkTimes {
		bkTotal += s
	}
	n := float64(*ntasks - 1)
	ssFirst := b.times[0].secs
	fmt.Printf("tool and agent images of %d tasks on one base: ssebench %.1fs (cold store), BuildKit %.1fs (tool layers only, fresh daemon): %.1fx\n",
		*ntasks, total, bkTotal, bkTotal/total)
	fmt.Printf("seconds per task after the first: ssebench %.2fs, BuildKit %.2fs (%.1fx); first task: ssebench %.2fs, BuildKit %.2fs\n",
		(total-ssFirst)/n, (bkTotal-bkTimes[0])/n, ((bkTotal-bkTimes[0])/n)/((total-ssFirst)/n), ssFirst, bkTimes[0])
	fmt.Printf("layers ssebench read to index them: %d after the first task, %d after all %d (the base's once, then each case's own)\n",
		b.times[0].indexed, facts.Indexed(), *ntasks)
	return nil
}

// writeEvalCase writes a case context: the base, a generated source tree
// of its own (seed), the task's config.
func writeEvalCase(dir, id, base string, seed uint64, files, mb int) error {
	df := "FROM " + base + "\nCOPY src/ /src/proj/\nCOPY config.yaml /ssebench/config.yaml\n"
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		return err
	}
	cfg := "id: " + id + caseConfig[len("id: bench-1-0000000"):]
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1000+seed, 3))
	per := int64(mb) << 20 / int64(files)
	for i := 0; i < files; i++ {
		if err := writeText(filepath.Join(dir, "src", fmt.Sprintf("pkg%02d/file%05d.c", i%50, i)), per/2+rng.Int64N(per), rng); err != nil {
			return err
		}
	}
	return nil
}

// buildBackend is the evaluation engine's build phase over the pipeline,
// with the case images taken from the registry; it times each task.
type buildBackend struct {
	env   *pipeline.Env
	cases map[string]string
	facts *assemble.Facts
	mu    sync.Mutex
	times []taskTime
}

type taskTime struct {
	task    string
	secs    float64
	indexed int
}

func (b *buildBackend) BuildTask(ctx context.Context, task string) (*pipeline.TaskImages, error) {
	start := time.Now()
	tool, err := b.env.Tool(ctx, pipeline.ToolRequest{Case: b.cases[task], Task: task, SourceDir: "/src/proj"})
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.times = append(b.times, taskTime{task: task, secs: time.Since(start).Seconds()})
	b.mu.Unlock()
	return &pipeline.TaskImages{Case: b.cases[task], Tool: tool}, nil
}

func (b *buildBackend) BuildAgent(ctx context.Context, task, agent string, ti *pipeline.TaskImages) (*pipeline.RunImages, error) {
	start := time.Now()
	ag, err := b.env.Agent(ctx, pipeline.AgentRequest{Tool: ti.Tool.Name, Folder: agent, Task: task})
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	for i := range b.times {
		if b.times[i].task == task {
			b.times[i].secs += time.Since(start).Seconds()
			b.times[i].indexed = b.facts.Indexed()
		}
	}
	b.mu.Unlock()
	return &pipeline.RunImages{Case: ti.Case, Tool: ti.Tool.Name, Agent: ag.Name}, nil
}

func (b *buildBackend) Run(context.Context, evaluate.Job, *pipeline.RunImages, string) (string, error) {
	return "", errors.New("the build bench runs nothing")
}

func (b *buildBackend) Cleanup(context.Context, string) error { return nil }
