package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/42-b3yond-6ug/ssebench/images/buildkit"
	"github.com/42-b3yond-6ug/ssebench/internal/units"
)

// coldToolTask is the case coldtool measures by default: the largest of
// datasets/govuln (381 MiB of layers, a 157 MB source tree with its
// vendored modules).
const coldToolTask = "go-2024-2955"

// ColdToolRound is one round of coldtool: ssebench and BuildKit, each cold,
// one after the other.
type ColdToolRound struct {
	SsebenchSeconds float64 `json:"ssebench_seconds"`
	SsebenchMaxRSS  float64 `json:"ssebench_max_rss_mb"`
	BuildKitSeconds float64 `json:"buildkit_seconds"`
	// Baseline is -baseline's time and peak, when given.
	BaselineSeconds float64 `json:"baseline_seconds,omitempty"`
	BaselineMaxRSS  float64 `json:"baseline_max_rss_mb,omitempty"`
	// Load is the one-minute load average before the round.
	Load string `json:"load"`
}

// ColdToolResults is what coldtool -json writes.
type ColdToolResults struct {
	Task      string          `json:"task"`
	Case      string          `json:"case"`
	CaseBytes int64           `json:"case_bytes"`
	CPUs      int             `json:"cpus"`
	Started   time.Time       `json:"started"`
	Rounds    []ColdToolRound `json:"rounds"`
	// Medians of the rounds, and the ratio of the medians.
	SsebenchMedian float64 `json:"ssebench_median_seconds"`
	BuildKitMedian float64 `json:"buildkit_median_seconds"`
	Ratio          float64 `json:"ratio"`
	MaxRSSMedian   float64 `json:"ssebench_max_rss_median_mb"`
	BaselineMedian float64 `json:"baseline_median_seconds,omitempty"`
	BaselineRSS    float64 `json:"baseline_max_rss_median_mb,omitempty"`
}

// runColdTool measures the cold tool image of one case (default the
// largest of datasets/govuln), -n rounds: in each, ssebench assembles it
// with an empty store and facts cache and pushes it to a registry prefix
// of its own (so that no facts from an earlier round are found there),
// and BuildKit builds the reference Dockerfile on a fresh buildkitd and
// pushes it. It prints every round, the medians, their ratio and
// ssebench's peak resident memory (VmHWM, polled). With -profile DIR, one
// more assembly runs under SSEBENCH_CPUPROFILE and the top of its profile
// is printed.
func runColdTool(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("coldtool", flag.ContinueOnError)
	b := addCLIBench(fs, "coldtool")
	dsFlag := fs.String("dataset", "datasets/govuln", "dataset folder, relative to the module root")
	id := fs.String("task", coldToolTask, "the task whose tool image is measured")
	n := fs.Int("n", 3, "rounds")
	bkd := fs.String("buildkitd", "", "buildkitd binary for the throwaway daemons (default: scripts/install-deps.sh's, else PATH)")
	skipBK := fs.Bool("skip-buildkit", false, "time ssebench only")
	profile := fs.String("profile", "", "also profile one assembly (CPU) into this directory and print its top")
	top := fs.Int("top", 25, "functions of the profile to print")
	jsonOut := fs.String("json", "", "also write the figures as JSON to this file")
	other := fs.String("ssebench", "", "time this ssebench binary instead of the checkout's (an older build, say)")
	baseline := fs.String("baseline", "", "also time this ssebench binary in every round (the build before a change), for a before and after in the same run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *bkd == "" && !*skipBK {
		var err error
		if *bkd, err = findBuildkitd(); err != nil {
			return err
		}
	}
	refDockerfile, err := findReference()
	if err != nil {
		return err
	}
	if err := b.start(ctx); err != nil {
		return err
	}
	home, bin, work := b.home, b.bin, *b.work
	timed := bin // what the rounds time; bin makes the inputs
	if *other != "" {
		timed = *other
	}
	dsDir := filepath.Join(home, *dsFlag)
	src, err := taskSource(dsDir, *id)
	if err != nil {
		return err
	}
	// The inputs keep one prefix between runs of the bench: build-case
	// finds its image there and builds nothing.
	prefix := *b.reg + "/" + benchRepo + "/coldtool"
	res := &ColdToolResults{Task: *id, CPUs: runtime.NumCPU(), Started: time.Now().UTC()}
	cli := func(exe, store, cache, registry string, env []string, stdout io.Writer, args ...string) (time.Duration, float64, error) {
		global := []string{"--home", home, "--store", store, "--registry", registry, "--quiet"}
		cmd := exec.CommandContext(ctx, exe, append(global, args...)...)
		cmd.Env = append(os.Environ(), append(env, "SSEBENCH_CACHE="+cache, "SOURCE_DATE_EPOCH=1750000000")...)
		cmd.Stdout, cmd.Stderr = stdout, os.Stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			return 0, 0, err
		}
		hwm := pollHWM(cmd.Process.Pid)
		err := cmd.Wait()
		took := time.Since(start)
		peak := hwm()
		if err != nil {
			err = fmt.Errorf("ssebench %s: %w", strings.Join(args, " "), err)
		}
		return took, peak, err
	}
	inStore, inCache := filepath.Join(work, "store"), filepath.Join(work, "cache")
	inputs := func(stdout io.Writer, args ...string) error {
		_, _, err := cli(bin, inStore, inCache, prefix, nil, stdout, args...)
		return err
	}
	say("inputs in %s: runtime, base images, the case image of %s (not timed)", prefix, *id)
	if err := inputs(os.Stderr, "runtime", "build", "--push"); err != nil {
		return err
	}
	if err := inputs(os.Stderr, "base-images", "--os-image", *b.osImage, "--push"); err != nil {
		return err
	}
	var caseOut bytes.Buffer
	if err := inputs(&caseOut, "build-case", "--benchmarks", dsDir, "--tasks", *id, "--push", "--json"); err != nil {
		return err
	}
	var cases []struct{ Task, Image string }
	if err := json.Unmarshal(caseOut.Bytes(), &cases); err != nil || len(cases) != 1 {
		return fmt.Errorf("reading build-case --json %q: %v", caseOut.String(), err)
	}
	// build-case gives no digest for an image it skipped: inspect says.
	var insp bytes.Buffer
	if err := inputs(&insp, "inspect", "--json", cases[0].Image); err != nil {
		return err
	}
	var in struct {
		Digest string `json:"digest"`
		Layers []struct {
			Size int64 `json:"size"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(insp.Bytes(), &in); err != nil || in.Digest == "" {
		return fmt.Errorf("reading inspect --json of the case image: %v", err)
	}
	caseRepo := cases[0].Image
	if i := strings.LastIndex(caseRepo, ":"); i > strings.LastIndex(caseRepo, "/") {
		caseRepo = caseRepo[:i]
	}
	res.Case = caseRepo + "@" + in.Digest
	for _, l := range in.Layers {
		res.CaseBytes += l.Size
	}
	var rd bytes.Buffer
	if err := inputs(&rd, "inspect", "--json", prefix+"/runtime:"+readVersion(home)); err != nil {
		return err
	}
	var rin struct {
		Digest string `json:"digest"`
	}
	if err := json.Unmarshal(rd.Bytes(), &rin); err != nil || rin.Digest == "" {
		return fmt.Errorf("reading the runtime's digest from inspect --json: %v", err)
	}
	rt := prefix + "/runtime@" + rin.Digest
	say("case %s (%d layers, %s), runtime %s", res.Case, len(in.Layers), units.Bytes(res.CaseBytes), rt)

	// ssebenchCold assembles and pushes the tool image with an empty store
	// and facts cache, under a registry prefix no earlier round used.
	ssebenchCold := func(exe, tag string, env []string) (time.Duration, float64, error) {
		dir := filepath.Join(work, "cold-"+tag)
		os.RemoveAll(dir)
		defer os.RemoveAll(dir)
		return cli(exe, filepath.Join(dir, "store"), filepath.Join(dir, "cache"), fmt.Sprintf("%s/r-%d-%s", prefix, time.Now().UnixNano(), tag), env,
			io.Discard, "assemble", "tool", "--case", res.Case, "--task", *id, "--source", src, "--runtime", rt, "--push")
	}
	buildkitCold := func(tag string) (time.Duration, error) {
		d, err := startDaemon(ctx, *bkd, work, *b.reg)
		if err != nil {
			return 0, err
		}
		defer d.stop()
		c, err := buildkit.New(ctx, buildkit.WithAddress(d.addr), buildkit.WithProgress(io.Discard),
			buildkit.WithProgressMode(buildkit.ProgressQuiet), buildkit.WithTempDir(work))
		if err != nil {
			return 0, err
		}
		defer c.Close()
		start := time.Now()
		_, err = c.Build(ctx, buildkit.Request{
			ContextDir: filepath.Dir(refDockerfile), Platform: "linux/" + runtime.GOARCH,
			ImageContexts: map[string]string{"case": res.Case, "runtime": rt},
			BuildArgs:     map[string]string{"SOURCE_DIR": src, "SOURCE_DATE_EPOCH": "1750000000"},
			Push:          fmt.Sprintf("%s/bk/tool:%d-%s", prefix, time.Now().UnixNano(), tag),
		})
		if err != nil {
			return 0, fmt.Errorf("BuildKit, the tool image of %s: %w", *id, err)
		}
		return time.Since(start), nil
	}
	for i := range *n {
		r := ColdToolRound{Load: loadAvg()}
		say("round %d/%d (load %s): ssebench", i+1, *n, r.Load)
		runs := []func() error{func() error {
			took, rss, err := ssebenchCold(timed, strconv.Itoa(i), nil)
			r.SsebenchSeconds, r.SsebenchMaxRSS = took.Seconds(), rss
			return err
		}}
		if *baseline != "" {
			base := func() error {
				say("round %d/%d: the baseline %s", i+1, *n, *baseline)
				took, rss, err := ssebenchCold(*baseline, "base-"+strconv.Itoa(i), nil)
				r.BaselineSeconds, r.BaselineMaxRSS = took.Seconds(), rss
				return err
			}
			// Each first every other round: the load drifts.
			if i%2 == 0 {
				runs = append(runs, base)
			} else {
				runs = append([]func() error{base}, runs...)
			}
		}
		for _, run := range runs {
			if err := run(); err != nil {
				return err
			}
		}
		if !*skipBK {
			say("round %d/%d: BuildKit, fresh daemon", i+1, *n)
			bk, err := buildkitCold(strconv.Itoa(i))
			if err != nil {
				return err
			}
			r.BuildKitSeconds = bk.Seconds()
		}
		say("round %d/%d: ssebench %.2fs (%.0f MB), BuildKit %.2fs", i+1, *n, r.SsebenchSeconds, r.SsebenchMaxRSS, r.BuildKitSeconds)
		res.Rounds = append(res.Rounds, r)
	}
	med := func(f func(ColdToolRound) float64) float64 {
		var xs []float64
		for _, r := range res.Rounds {
			xs = append(xs, f(r))
		}
		return median(xs)
	}
	res.SsebenchMedian = med(func(r ColdToolRound) float64 { return r.SsebenchSeconds })
	res.BuildKitMedian = med(func(r ColdToolRound) float64 { return r.BuildKitSeconds })
	res.MaxRSSMedian = med(func(r ColdToolRound) float64 { return r.SsebenchMaxRSS })
	if res.SsebenchMedian > 0 {
		res.Ratio = res.BuildKitMedian / res.SsebenchMedian
	}
	if *baseline != "" {
		res.BaselineMedian = med(func(r ColdToolRound) float64 { return r.BaselineSeconds })
		res.BaselineRSS = med(func(r ColdToolRound) float64 { return r.BaselineMaxRSS })
	}
	reportColdTool(os.Stdout, res)

	if *profile != "" {
		if err := os.MkdirAll(*profile, 0o755); err != nil {
			return err
		}
		prof := filepath.Join(*profile, "cpu.pprof")
		say("one more assembly, profiled into %s", prof)
		if _, _, err := ssebenchCold(timed, "profile", []string{"SSEBENCH_CPUPROFILE=" + prof}); err != nil {
			return err
		}
		out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", fmt.Sprintf("-nodecount=%d", *top), timed, prof).Output()
		if err != nil {
			return fmt.Errorf("go tool pprof: %w", err)
		}
		fmt.Printf("where the cold assembly's CPU goes (go tool pprof -top %s %s):\n%s", timed, prof, out)
	}
	if *jsonOut != "" {
		j, _ := json.MarshalIndent(res, "", "  ")
		return os.WriteFile(*jsonOut, append(j, '\n'), 0o644)
	}
	return nil
}

func reportColdTool(w io.Writer, r *ColdToolResults) {
	fmt.Fprintf(w, "cold tool image of %s (%s of case layers), %d CPUs, %s\n", r.Task, units.Bytes(r.CaseBytes), r.CPUs, r.Started.Format("2006-01-02"))
	fmt.Fprintf(w, "%-8s %10s %10s %8s %14s  %s\n", "round", "ssebench", "BuildKit", "ratio", "peak RSS (MB)", "load before")
	for i, x := range r.Rounds {
		ratio := "-"
		if x.SsebenchSeconds > 0 && x.BuildKitSeconds > 0 {
			ratio = fmt.Sprintf("%.1fx", x.BuildKitSeconds/x.SsebenchSeconds)
		}
		fmt.Fprintf(w, "%-8d %9.2fs %9.2fs %8s %14.0f  %s\n", i+1, x.SsebenchSeconds, x.BuildKitSeconds, ratio, x.SsebenchMaxRSS, x.Load)
	}
	fmt.Fprintf(w, "%-8s %9.2fs %9.2fs %7.1fx %14.0f  (load now %s)\n", "median", r.SsebenchMedian, r.BuildKitMedian, r.Ratio, r.MaxRSSMedian, loadAvg())
	if r.BaselineMedian > 0 {
		fmt.Fprintf(w, "baseline:")
		for _, x := range r.Rounds {
			fmt.Fprintf(w, " %.2fs (%.0f MB)", x.BaselineSeconds, x.BaselineMaxRSS)
		}
		fmt.Fprintf(w, "; median %.2fs, %.0f MB: ratio %.1fx, this build %.2fx faster\n",
			r.BaselineMedian, r.BaselineRSS, r.BuildKitMedian/r.BaselineMedian, r.BaselineMedian/r.SsebenchMedian)
	}
}

// pollHWM follows the peak resident set (VmHWM) of process pid every few
// milliseconds until the returned function is called, which gives the
// last value read. getrusage's ru_maxrss would not do: at exec the kernel
// counts the parent's memory, which the child shared until then.
func pollHWM(pid int) func() float64 {
	stop, done := make(chan struct{}), make(chan float64)
	go func() {
		var peak float64
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if kb := readHWM(pid); kb > 0 {
				peak = max(peak, kb/1024)
			}
			select {
			case <-stop:
				done <- peak
				return
			case <-t.C:
			}
		}
	}()
	return func() float64 { close(stop); return <-done }
}

// readHWM reads VmHWM (kB) of pid, 0 when it cannot.
func readHWM(pid int) float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb
		}
	}
	return 0
}

// loadAvg is /proc/loadavg's three load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// readVersion is the checkout's VERSION, the runtime's tag.
func readVersion(home string) string {
	b, _ := os.ReadFile(filepath.Join(home, "VERSION"))
	return strings.TrimSpace(string(b))
}
