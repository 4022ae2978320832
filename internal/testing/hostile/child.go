package hostile

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childEnv tells a re-executed test binary which test it runs as a child.
const childEnv = "SSEBENCH_HOSTILE_CHILD"

// InChild reports whether this process is the child RunChild started for t:
// then the test does the work whose memory is measured, and fails as usual.
// The child reports its own peak when t ends (see RunChild).
func InChild(t testing.TB) bool {
	if os.Getenv(childEnv) != t.Name() {
		return false
	}
	t.Cleanup(func() {
		if kb, ok := ownPeakKB(); ok {
			fmt.Printf("%s %d\n", peakLine, kb)
		}
	})
	return true
}

// peakLine starts the line on which a child reports its peak memory.
const peakLine = "hostile-child-peak-kb"

// ownPeakKB is this process's high-water mark of resident memory (VmHWM).
func ownPeakKB() (int64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// RunChild runs t again in a child process (the test binary, re-executed
// with -test.run selecting exactly t) and fails t if the child fails, takes
// longer than timeout, or its peak resident memory (the high-water mark,
// VmHWM, that the child reports as it ends) exceeds limitMB. It returns the
// peak in MiB. The child sees InChild(t) true. (getrusage's ru_maxrss,
// used when the child reports nothing, also counts the parent's memory at
// the fork: 110 MiB for a child of 64 once the package's other tests had
// grown the parent.)
func RunChild(t *testing.T, limitMB int64, timeout time.Duration) int64 {
	t.Helper()
	var pattern []string
	for _, part := range strings.Split(t.Name(), "/") {
		pattern = append(pattern, "^"+regexp.QuoteMeta(part)+"$")
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(pattern, "/"), "-test.count=1", "-test.v", "-test.timeout="+timeout.String())
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name(), SummaryEnv+"=")
	out, err := cmd.CombinedOutput()
	var peak int64
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			peak = ru.Maxrss / 1024 // KiB on Linux
		}
	}
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, peakLine+" "); ok {
			if kb, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				peak = kb / 1024
			}
		}
	}
	if err != nil {
		t.Fatalf("the child process failed (%v), peak memory %d MiB:\n%s", err, peak, tail(string(out), 40))
	}
	if !strings.Contains(string(out), "=== RUN   "+t.Name()) {
		t.Fatalf("the child process did not run the test:\n%s", tail(string(out), 40))
	}
	if peak > limitMB {
		t.Errorf("peak memory of the child process = %d MiB, want at most %d MiB", peak, limitMB)
	}
	t.Logf("child process: peak memory %d MiB", peak)
	return peak
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
