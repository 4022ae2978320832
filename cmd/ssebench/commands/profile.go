package commands

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// CPUProfileEnv names a file that receives a CPU profile of the whole
// command (go tool pprof reads it): what `go run ./tools/bench overhead`
// uses to print where ssebench's own time per run goes. Unset, nothing is
// profiled.
const CPUProfileEnv = "SSEBENCH_CPUPROFILE"

// startProfile starts the CPU profile CPUProfileEnv asks for and returns
// the function that stops it; a profile that cannot start is a warning,
// never a failed command.
func startProfile(stderr io.Writer) func() {
	path := os.Getenv(CPUProfileEnv)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(stderr, "warning: %s: %v\n", CPUProfileEnv, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		fmt.Fprintf(stderr, "warning: %s: %v\n", CPUProfileEnv, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
