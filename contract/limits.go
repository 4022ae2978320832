package contract

import (
	"fmt"
	"strconv"
	"strings"
	"time"
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

// TreeCaps bound what the snapshot reads of the agent's tree after its
// phase (SPEC.md section 17.1): what git would add to final.patch,
// checked before git reads a byte of it. A tree past one of them ends its
// run at once with IntegrityTreeTooLarge. The zero value of a field means
// its default (DefaultTreeCaps); a task overrides them in config.yaml's
// `caps`.
type TreeCaps struct {
	// ChangedBytes caps the apparent size (a sparse file's counts whole)
	// of every file the agent added or whose size it changed, summed.
	ChangedBytes int64 `json:"changed_bytes,omitempty"`
	// FileBytes caps the apparent size of one such file.
	FileBytes int64 `json:"file_bytes,omitempty"`
	// ChangedFiles caps how many paths the agent added, removed or
	// changed in size (nested repositories included).
	ChangedFiles int64 `json:"changed_files,omitempty"`
}

// DefaultTreeCaps are far above what a fix writes (a few files, a few
// kilobytes; a regenerated lock file or test fixture a few megabytes) and
// far below what holds a run: git reads a changed file whole, and a diff
// of it is held in memory.
var DefaultTreeCaps = TreeCaps{ChangedBytes: 256 << 20, FileBytes: 64 << 20, ChangedFiles: 20000}

// WithDefaults returns c with every zero field set to its default.
func (c TreeCaps) WithDefaults() TreeCaps {
	if c.ChangedBytes <= 0 {
		c.ChangedBytes = DefaultTreeCaps.ChangedBytes
	}
	if c.FileBytes <= 0 {
		c.FileBytes = DefaultTreeCaps.FileBytes
	}
	if c.ChangedFiles <= 0 {
		c.ChangedFiles = DefaultTreeCaps.ChangedFiles
	}
	return c
}

// Deadlines of the work after the agent phase, inside the run's own: a
// Kubernetes Job gets the agent's TIMEOUT plus 30 minutes (image pulls
// among them), and a run killed at its deadline leaves no grade at all.
const (
	// SnapshotTimeout bounds the snapshot (the caps' walk, git, the
	// graded tree): within the caps it takes seconds. Past it the run
	// ends with IntegrityTreeTooLarge.
	SnapshotTimeout = 5 * time.Minute
	// DefaultGradeTimeout bounds the whole grade, every check together
	// (each check also has its script timeout): a check still running
	// then is killed and fails as timed out, and the checks after it are
	// skipped. EnvGradeTimeout sets another.
	DefaultGradeTimeout = 20 * time.Minute
)

// FormatBytes says n bytes for a person: "20 GiB", "1.5 MiB", "512 B".
func FormatBytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v, i = v/1024, i+1
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + units[i]
}
