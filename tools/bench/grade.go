package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/42-b3yond-6ug/ssebench/oci/store"
	"github.com/42-b3yond-6ug/ssebench/runner"
)

// runGrade compares the grade of the example Go task inside a run (the
// daemon runs build and test as sse-runner in a fresh scratch home) with
// the same two scripts run as root in the case image, each from a new
// container. It prints both and their ratio (goal: at most 2): the run
// must not pay for compiling the standard library again, which the base
// image's seeded build cache saves it.
func runGrade(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("grade", flag.ContinueOnError)
	osImage := fs.String("os-image", env("SSEBENCH_TEST_OS_IMAGE", ""), "the Debian OS image the base images start from")
	work := fs.String("work", filepath.Join(os.TempDir(), "ssebench-bench-grade"), "working directory (its store is kept between runs of the bench)")
	taskID := fs.String("task", "kvconf-12-afb9ee1", "the example Go task")
	srcDir := fs.String("source", "/src/kvconf", "the task's SOURCE_DIR")
	repeat := fs.Int("repeat", 3, "runs of each")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *osImage == "" {
		return fmt.Errorf("no OS image: pass -os-image or source scripts/env.sh")
	}
	home, bin, err := buildSSEBench(ctx, *work)
	if err != nil {
		return err
	}
	storeDir := filepath.Join(*work, "store")
	runsDir := filepath.Join(*work, "runs")
	cli := func(args ...string) ([]byte, error) {
		global := []string{"--home", home, "--store", storeDir}
		cmd := exec.CommandContext(ctx, bin, append(global, args...)...)
		cmd.Env = append(os.Environ(), "SSEBENCH_CACHE="+filepath.Join(*work, "cache"))
		cmd.Stderr = os.Stderr
		return cmd.Output()
	}
	say("images: runtime, the Go base image, the case image of %s", *taskID)
	for _, a := range [][]string{{"runtime", "build"}, {"base-images", "go", "--os-image", *osImage}, {"build-case", "--benchmarks", "datasets/examples", "--tasks", *taskID}} {
		if _, err := cli(a...); err != nil {
			return fmt.Errorf("ssebench %v: %w", a, err)
		}
	}
	out, err := cli("names", "--task", *taskID, "--json")
	if err != nil {
		return err
	}
	var names struct {
		Case string `json:"case"`
	}
	if err := json.Unmarshal(out, &names); err != nil {
		return fmt.Errorf("reading `ssebench names --json`: %w", err)
	}

	s, err := store.Open(storeDir)
	if err != nil {
		return err
	}
	defer s.Close()
	r, err := runner.New(ctx, runner.WithStore(s), runner.WithNamespace("ssebench-bench"))
	if err != nil {
		return err
	}
	defer r.Close()
	// Each script timed inside the container, as the daemon times it.
	script := fmt.Sprintf(`set -e; cd %s
t() { s=$(date +%%s%%N); sh "/ssebench/scripts/$1.sh" >/dev/null 2>&1; echo "$1 $(( ($(date +%%s%%N) - s) / 1000000 ))"; }
t build; t test`, *srcDir)
	var rootMS, runMS []int64
	for i := range *repeat {
		var buf bytes.Buffer
		res, err := r.Run(ctx, runner.RunSpec{
			Image: names.Case, ID: fmt.Sprintf("bench-grade-%d-%d", os.Getpid(), i),
			Entrypoint: []string{"sh", "-c", script}, User: "0", Output: &buf,
		})
		if err != nil {
			return fmt.Errorf("grading as root in the case image: %w", err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("grading as root in the case image exited %d:\n%s", res.ExitCode, buf.String())
		}
		rootMS = append(rootMS, sumMS(buf.String()))
		say("as root in the case image: %s", strings.ReplaceAll(strings.TrimSpace(buf.String()), "\n", ", "))

		os.RemoveAll(runsDir)
		if _, err := cli("run", "--task", *taskID, "--agent", "dummy", "--local", "datasets/examples", "--timeout", "600", "--runs-dir", runsDir); err != nil {
			// The dummy agent fixes nothing: exit 2 (FAILED) is expected.
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
				return fmt.Errorf("ssebench run: %w", err)
			}
		}
		ms, err := runGradeMS(runsDir)
		if err != nil {
			return err
		}
		runMS = append(runMS, ms)
		say("in a run (sse-runner, fresh home): build+test %d ms", ms)
	}
	root, inRun := int64(median(floats(rootMS))), int64(median(floats(runMS)))
	fmt.Printf("grade of %s (build + test, median of %d):\n", *taskID, *repeat)
	fmt.Printf("  as root in the case image  %8s\n", time.Duration(root)*time.Millisecond)
	fmt.Printf("  in a run                   %8s\n", time.Duration(inRun)*time.Millisecond)
	fmt.Printf("  ratio                      %8.2f  (goal: at most 2)\n", float64(inRun)/float64(max(root, 1)))
	return nil
}

// sumMS adds the "name ms" lines the timing script printed.
func sumMS(out string) int64 {
	var total int64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var name string
		var ms int64
		if n, _ := fmt.Sscanf(line, "%s %d", &name, &ms); n == 2 {
			total += ms
		}
	}
	return total
}

// runGradeMS reads build and test times from the one run in dir.
func runGradeMS(dir string) (int64, error) {
	m, err := filepath.Glob(filepath.Join(dir, "*", "result.json"))
	if err != nil || len(m) != 1 {
		return 0, fmt.Errorf("want one result.json under %s, found %d", dir, len(m))
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		return 0, err
	}
	var r struct {
		Build, Test struct {
			DurationMS int64 `json:"duration_ms"`
		}
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, err
	}
	return r.Build.DurationMS + r.Test.DurationMS, nil
}

func floats(v []int64) []float64 {
	f := make([]float64, len(v))
	for i, x := range v {
		f[i] = float64(x)
	}
	return f
}

// cliBench is what a benchmark that drives the CLI shares: the registry,
// the OS image and the working directory as flags, and ssebench built
// from this checkout into that directory (start).
type cliBench struct {
	reg, osImage, work *string
	home, bin          string
}

// addCLIBench adds cliBench's flags to fs; name names the default working
// directory.
func addCLIBench(fs *flag.FlagSet, name string) *cliBench {
	return &cliBench{
		reg:     fs.String("registry", env("SSEBENCH_TEST_REGISTRY", "127.0.0.1:5000"), "host:port of the plain-HTTP registry"),
		osImage: fs.String("os-image", env("SSEBENCH_TEST_OS_IMAGE", ""), "the Debian OS image the base images start from"),
		work:    fs.String("work", filepath.Join(os.TempDir(), "ssebench-bench-"+name), "working directory (its store is kept between runs of the bench)"),
	}
}

// start checks the flags and builds ssebench.
func (b *cliBench) start(ctx context.Context) (err error) {
	if *b.osImage == "" {
		return fmt.Errorf("no OS image: pass -os-image or source scripts/env.sh")
	}
	b.home, b.bin, err = buildSSEBench(ctx, *b.work)
	return err
}

// buildSSEBench builds ssebench from this checkout into work (made if
// needed) for a benchmark that drives the CLI, and returns the checkout.
func buildSSEBench(ctx context.Context, work string) (home, bin string, err error) {
	if home, err = moduleRoot(); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return "", "", err
	}
	bin = filepath.Join(work, "ssebench")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/ssebench")
	build.Dir, build.Stderr = home, os.Stderr
	if err := build.Run(); err != nil {
		return "", "", fmt.Errorf("building ssebench: %w", err)
	}
	return home, bin, nil
}
