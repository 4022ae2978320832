package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/42-b3yond-6ug/ssebench/results"
)

// overheadTask and overheadAgent are what runOverhead runs: the example
// task, whose checks take a few seconds, and an agent that does nothing.
const (
	overheadTask  = "kvconf-12-afb9ee1"
	overheadAgent = "dummy"
)

// runOverhead measures ssebench's own time per run: `ssebench run` of the
// dummy agent on the example task, with the images kept in containerd
// (the default, --keep-images under its budget) against --keep-images=none
// (every run imports and unpacks its images again), pair by pair after a
// first run that builds every image. A run's own time is its wall time
// less the agent's and the checks'; its start-up is summary.json's split.
// It then profiles one more kept run (SSEBENCH_CPUPROFILE) and prints the
// profile's top functions: where ssebench's own CPU goes.
func runOverhead(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("overhead", flag.ContinueOnError)
	b := addCLIBench(fs, "overhead")
	n := fs.Int("n", 3, "pairs of runs")
	top := fs.Int("top", 12, "functions of the profile to print")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := b.start(ctx); err != nil {
		return err
	}
	home, bin, work, reg, osImage := b.home, b.bin, b.work, b.reg, b.osImage
	prefix := *reg + "/" + benchRepo + "/overhead"
	runsDir := filepath.Join(*work, "runs")
	os.RemoveAll(runsDir)
	// A namespace of the bench's own: what it keeps and prunes is its own.
	ns := "ssebench-bench-overhead"
	cli := func(extraEnv []string, args ...string) error {
		global := []string{"--home", home, "--store", filepath.Join(*work, "store"), "--registry", prefix}
		cmd := exec.CommandContext(ctx, bin, append(global, args...)...)
		cmd.Env = append(os.Environ(), append(extraEnv, "SSEBENCH_CACHE="+filepath.Join(*work, "cache"), "SSEBENCH_CONTAINERD_NAMESPACE="+ns)...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Run(); err != nil {
			// A run whose checks fail exits 2: the dummy fixes nothing.
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
				return fmt.Errorf("ssebench %v: %w\n%s", args, err, errb.Bytes())
			}
		}
		return nil
	}
	defer cli(nil, "prune", "--all")
	say("images: runtime, the Go base image, then a first run that builds the case, tool and agent images")
	for _, a := range [][]string{{"runtime", "build"}, {"base-images", "go", "--os-image", *osImage}} {
		if err := cli(nil, a...); err != nil {
			return err
		}
	}
	type sample struct {
		wall, own, startup, unpack, create, start float64
		layers                                    int
	}
	one := func(dir string, extraEnv []string, flags ...string) (sample, error) {
		d := filepath.Join(runsDir, dir)
		start := time.Now()
		if err := cli(extraEnv, append([]string{"run", "--task", overheadTask, "--agent", overheadAgent, "--runs-dir", d}, flags...)...); err != nil {
			return sample{}, err
		}
		wall := time.Since(start).Seconds()
		rs, err := results.List(d)
		if err != nil || len(rs) != 1 {
			return sample{}, fmt.Errorf("the run left %d results in %s (%v)", len(rs), d, err)
		}
		r := rs[0]
		t := r.Summary.Timings
		return sample{
			wall: wall, own: wall - r.AgentTime().Seconds() - r.GradeTime().Seconds(),
			startup: t[results.TimingStartup], unpack: t[results.TimingUnpack], create: t[results.TimingCreate], start: t[results.TimingStart],
			layers: r.Summary.LayersUnpacked,
		}, nil
	}
	first, err := one("first", nil, "--keep-images=none")
	if err != nil {
		return err
	}
	say("first run: %.2fs, start-up %.2fs (unpack %.2fs, %d layers)", first.wall, first.startup, first.unpack, first.layers)
	var kept, none []sample
	for i := range *n {
		// Each pair from an empty namespace: the none run imports and
		// unpacks everything and removes it; a default run then leaves
		// the images, and the kept run after it finds them.
		if err := cli(nil, "prune", "--all"); err != nil {
			return err
		}
		s, err := one(fmt.Sprintf("none-%d", i), nil, "--keep-images=none")
		if err != nil {
			return err
		}
		none = append(none, s)
		if _, err := one(fmt.Sprintf("warm-%d", i), nil); err != nil {
			return err
		}
		s, err = one(fmt.Sprintf("kept-%d", i), nil)
		if err != nil {
			return err
		}
		kept = append(kept, s)
	}
	med := func(ss []sample, f func(sample) float64) float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	row := func(name string, ss []sample) {
		fmt.Printf("%-28s wall %6.2fs  own %5.2fs  start-up %5.2fs (unpack %5.2fs, create %4.2fs, start %4.2fs)  layers unpacked %d\n", name,
			med(ss, func(s sample) float64 { return s.wall }), med(ss, func(s sample) float64 { return s.own }),
			med(ss, func(s sample) float64 { return s.startup }), med(ss, func(s sample) float64 { return s.unpack }),
			med(ss, func(s sample) float64 { return s.create }), med(ss, func(s sample) float64 { return s.start }),
			int(med(ss, func(s sample) float64 { return float64(s.layers) })))
	}
	fmt.Printf("ssebench run of %s on %s, median of %d (own: wall less the agent and the checks; two containers per run):\n", overheadAgent, overheadTask, *n)
	row("--keep-images=none", none)
	row("kept (the default)", kept)
	on, ok := med(none, func(s sample) float64 { return s.own }), med(kept, func(s sample) float64 { return s.own })
	fmt.Printf("own time per run: kept %.2fs against %.2fs without: %.1fx less (target: at most 1 s kept)\n", ok, on, on/ok)

	prof := filepath.Join(*work, "cpu.prof")
	if _, err := one("profiled", []string{"SSEBENCH_CPUPROFILE=" + prof}); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", fmt.Sprintf("-nodecount=%d", *top), bin, prof).Output()
	if err != nil {
		return fmt.Errorf("reading the profile: %w", err)
	}
	fmt.Printf("where ssebench's own CPU goes in a kept run (go tool pprof -top %s %s):\n%s", bin, prof, out)
	return nil
}
