package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/42-b3yond-6ug/ssebench/results"
)

// runEval times `ssebench eval` of the dummy agent on the example dataset:
// 12 runs (3 tasks × 4 attempts) with --jobs 4 against the same 12 with
// --jobs 1, after a warm-up evaluation that builds every image. It prints
// the speed-up and ssebench's own time per run: the serial evaluation's
// wall time less the containers' own time (from the start of the task to
// its exit), over the runs.
func runEval(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	b := addCLIBench(fs, "eval")
	attempts := fs.Int("attempts", 4, "attempts of each of the 3 example tasks")
	jobs := fs.Int("jobs", 4, "runs at once in the parallel evaluation")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := b.start(ctx); err != nil {
		return err
	}
	home, bin, work, reg, osImage := b.home, b.bin, b.work, b.reg, b.osImage
	prefix := *reg + "/" + benchRepo + "/eval"
	runsDir := filepath.Join(*work, "runs")
	os.RemoveAll(runsDir)
	cli := func(args ...string) (time.Duration, error) {
		global := []string{"--home", home, "--store", filepath.Join(*work, "store"), "--registry", prefix}
		cmd := exec.CommandContext(ctx, bin, append(global, args...)...)
		cmd.Env = append(os.Environ(), "SSEBENCH_CACHE="+filepath.Join(*work, "cache"))
		cmd.Stderr = os.Stderr
		start := time.Now()
		err := cmd.Run()
		return time.Since(start), err
	}
	say("images: runtime, base images, then a warm-up evaluation that builds the case, tool and agent images")
	for _, a := range [][]string{{"runtime", "build"}, {"base-images", "--os-image", *osImage}} {
		if _, err := cli(a...); err != nil {
			return fmt.Errorf("ssebench %v: %w", a, err)
		}
	}
	evalArgs := func(dir string, n, att int) []string {
		return []string{"eval", "--agents", "dummy", "--attempts", fmt.Sprint(att), "--jobs", fmt.Sprint(n), "--timeout", "600", "--runs-dir", filepath.Join(runsDir, dir)}
	}
	if _, err := cli(evalArgs("warm", 3, 1)...); err != nil {
		return err
	}
	say("12 runs one after another")
	serial, err := cli(evalArgs("serial", 1, *attempts)...)
	if err != nil {
		return err
	}
	say("12 runs, %d at once", *jobs)
	parallel, err := cli(evalArgs("parallel", *jobs, *attempts)...)
	if err != nil {
		return err
	}
	runs, err := results.List(filepath.Join(runsDir, "serial"))
	if err != nil {
		return err
	}
	var container, startup time.Duration
	for _, r := range runs {
		container += r.ContainerTime()
		startup += time.Duration(r.Summary.Timings["startup"] * float64(time.Second))
	}
	n := time.Duration(len(runs))
	if n == 0 {
		return fmt.Errorf("the serial evaluation left no runs")
	}
	overhead := (serial - container) / n
	fmt.Printf("eval of %d dummy runs: serial %.1fs, --jobs %d %.1fs: speed-up %.2fx\n", len(runs), serial.Seconds(), *jobs, parallel.Seconds(), serial.Seconds()/parallel.Seconds())
	fmt.Printf("per run: container %.2fs, ssebench's own time %.2fs (%.0f%% of the serial wall time; container start-up %.2fs of it)\n",
		(container / n).Seconds(), overhead.Seconds(), 100*float64(serial-container)/float64(serial), (startup / n).Seconds())
	return nil
}
