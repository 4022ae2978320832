// Command bench measures ssebench against BuildKit. It is a program, not a
// test: it needs root, buildkitd's binary, runc, the local registry and the
// Debian OS image (scripts/setup.sh), and takes minutes.
//
//	go run ./tools/bench tool [-json results.json] [flags]
//
// tool builds (once, cached by tag in the registry) a realistic case image:
// the Debian OS image, a C/C++ toolchain from apt and a generated source tree
// of -files files and -mb megabytes. It then times, side by side:
//
//   - cold: BuildKit building assemble/testdata/oracle/reference/Dockerfile
//     (SPEC.md section 4 with the real tools) on a throwaway buildkitd with an
//     empty cache, against ssebench assembling the same tool image with a
//     fresh store and an empty facts cache (assemble.Tool reading the case
//     image from the registry, then Store.Write);
//   - runtime change: both again with a runtime image that differs in one
//     file, BuildKit on its now warm daemon, ssebench on its warm store and
//     facts cache.
//
// ssebench runs in a child process (bench assemble-child), so that its peak
// memory is the child's maximum resident set size.
//
//	go run ./tools/bench rebuild [-json results.json] [flags]
//
// rebuild times the runtime bump on an empty machine, as on CI: the tool
// image was pushed with runtime 1; ssebench (bench tool-push-child:
// pipeline.Env.Tool with --push, a fresh store and facts cache)
// and BuildKit (a fresh buildkitd, buildctl with --import-cache
// type=registry of the cache the first build exported) rebuild it with
// runtime 2 and push it. Target: ssebench 50 times faster.
//
//	go run ./tools/bench mirror [flags]
//
// mirror copies the images of the example dataset (bases, cases, runtime,
// tool and dummy-agent images, made first when missing) to a throwaway
// registry and reports bytes moved over unique blob bytes (target 1.00).
//
//	go run ./tools/bench gateway [-n 300] [-json results.json]
//
// gateway measures the model gateway of a restricted run: the scripted
// model server on loopback, reached direct and through the entrypoint's
// forwarder and the gateway's Unix socket, and prints the median added
// latency of a request (goal under 2 ms) and of a stream's first byte
// (goal under 5 ms). It needs no service.
//
//	go run ./tools/bench eval [flags]
//
// eval times 12 runs of the dummy agent on the example dataset with
// `ssebench eval --jobs 4` against the same 12 with --jobs 1, and prints
// the speed-up and ssebench's own time per run (all but the containers').
//
//	go run ./tools/bench eval-build [flags]
//
// eval-build generates -tasks (8) tasks on one base and compares the build
// phase of `ssebench eval` (the tool and dummy-agent images of every task,
// cold store, empty facts cache) with BuildKit building the same tool
// layers task after task on a fresh daemon: the ratio, the seconds per task
// after the first, and the layers read (the base's once).
//
//	go run ./tools/bench grade [flags]
//
// grade times the example Go task's build and test scripts in a run (as
// sse-runner, through the daemon) against the same scripts as root in the
// case image, and prints both and the ratio (goal: at most 2).
//
//	go run ./tools/bench dataset [-dataset datasets/govuln] [-tasks N] [-repo R] [-json results.json]
//
// dataset measures a whole dataset: its case images; the tool and
// dummy-agent images of every task, ssebench (empty store) against BuildKit
// (reference Dockerfile and the agent's Dockerfile, fresh daemon), cold and
// after a runtime bump; the store's bytes against the sum of the images'
// sizes and a save archive's weight; the peak memory of one tool assembly
// on the largest case (cold, its own store, pushed); and eval of dummy and
// reference over it (wall time, per run, ssebench's own part).
//
//	go run ./tools/bench overhead [-n 3]
//
// overhead times `ssebench run` of the dummy agent on the example task with
// its images kept in containerd (the default) against --keep-images=none,
// pair by pair, and prints the medians of the wall time, ssebench's own
// time (less the agent and the checks) and the start-up's split; then the
// top functions of a CPU profile of one kept run (SSEBENCH_CPUPROFILE).
//
//	go run ./tools/bench coldtool [-task go-2024-2955] [-n 3] [-profile DIR] [-json results.json]
//
// coldtool times the cold tool image of one case (by default the largest
// of datasets/govuln), -n rounds of ssebench (`assemble tool --push`, an
// empty store and facts cache, a registry prefix of its own) against
// BuildKit (the reference Dockerfile on a fresh buildkitd, pushed), and
// prints each round with the load before it, the medians, their ratio and
// ssebench's peak resident memory; -profile adds the top of a CPU profile
// of one more assembly.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: bench tool|rebuild|mirror|gateway|eval|eval-build|grade|dataset|overhead|coldtool [flags] (see go doc ./tools/bench)")
	}
	switch args[0] {
	case "tool":
		return runTool(ctx, args[1:])
	case "assemble-child":
		return runChild(ctx, args[1:])
	case "rebuild":
		return runRebuild(ctx, args[1:])
	case "tool-push-child":
		return runPushChild(ctx, args[1:])
	case "mirror":
		return runMirror(ctx, args[1:])
	case "gateway":
		return runGateway(ctx, args[1:])
	case "eval":
		return runEval(ctx, args[1:])
	case "eval-build":
		return runEvalBuild(ctx, args[1:])
	case "grade":
		return runGrade(ctx, args[1:])
	case "dataset":
		return runDataset(ctx, args[1:])
	case "overhead":
		return runOverhead(ctx, args[1:])
	case "coldtool":
		return runColdTool(ctx, args[1:])
	}
	return fmt.Errorf("unknown subcommand %q: want tool, rebuild, mirror, gateway, eval, eval-build, grade, dataset, overhead or coldtool", args[0])
}
