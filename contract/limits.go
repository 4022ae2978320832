package contract

import (
	"fmt"
	"strconv"
	"strings"
)

// Limits are what one run's containers may use, together: the agent, the
// daemon's scripts (which run the agent's code) and the runtime. A fork
// bomb or a runaway allocation of the agent's then ends its own run, with
// a reason in result.json, and the host and the other runs of an
// evaluation go on. The zero value of a field means "no limit".
type Limits struct {
	// MemoryBytes caps memory, swap included.
	MemoryBytes int64 `json:"memory_bytes"`
	// Pids caps the processes and threads alive at once.
	Pids int64 `json:"pids"`
	// CPUs caps CPU time, in cores (1.5 is one and a half).
	CPUs float64 `json:"cpus"`
	// DiskBytes caps what the run writes to disk: its containers'
	// writable layers and its writable mounts (the archive), together.
	DiskBytes int64 `json:"disk_bytes,omitempty"`
}

// DefaultLimits are every run's unless the user says otherwise: enough for
// a real project's build and tests, small enough that two runs per core
// of a 2-core, 24 GiB machine cannot exhaust it.
var DefaultLimits = Limits{MemoryBytes: 4 << 30, Pids: 4096, CPUs: 2, DiskBytes: 10 << 30}

// Why a run's container reports it hit a limit (RunResult.Killed).
const (
	KilledMemory = "memory limit"
	KilledPids   = "process limit"
	// KilledDisk: the run wrote more than its disk limit, or the host's
	// disk was nearly full (HostDiskFloor), and the run was stopped.
	KilledDisk = "disk limit"
)

// HostDiskFloor is the free space a run never takes from the host: when
// the file system under a run's writable layer has less, the run is
// stopped (KilledDisk) whatever its own limit, so that one run cannot
// fill the disk that the others, the store and containerd share.
const HostDiskFloor = 1 << 30

// Validate refuses limits a container cannot run with.
func (l Limits) Validate() error {
	switch {
	case l.MemoryBytes < 0 || (l.MemoryBytes > 0 && l.MemoryBytes < 64<<20):
		return fmt.Errorf("a memory limit of %d bytes is too small to start a run: give at least 64Mi, or 0 for none", l.MemoryBytes)
	case l.Pids < 0 || (l.Pids > 0 && l.Pids < 32):
		return fmt.Errorf("a limit of %d processes is too small to start a run: give at least 32, or 0 for none", l.Pids)
	case l.CPUs < 0 || (l.CPUs > 0 && l.CPUs < 0.1):
		return fmt.Errorf("a limit of %g CPUs is too small: give at least 0.1, or 0 for none", l.CPUs)
	case l.DiskBytes < 0 || (l.DiskBytes > 0 && l.DiskBytes < 64<<20):
		return fmt.Errorf("a disk limit of %d bytes is too small to start a run: give at least 64Mi, or 0 for none", l.DiskBytes)
	}
	return nil
}

// ParseBytes reads a size as the flags take it: a number of bytes, or one
// with a binary suffix (Ki, Mi, Gi, Ti; K, M, G and T mean the same), e.g.
// "4Gi" or "512M"; "0" means no limit.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"Ti", 40}, {"Gi", 30}, {"Mi", 20}, {"Ki", 10}, {"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), int64(1)<<u.shift
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size: write bytes, or a number with Ki, Mi, Gi or Ti (e.g. 4Gi)", s)
	}
	return n * mult, nil
}
