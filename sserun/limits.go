package sserun

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// CgroupDir is where a container sees its own cgroup: cgroup v2 through
// its cgroup namespace, or v1's hierarchies under it, each mounted at the
// container's own cgroup by runc.
const CgroupDir = "/sys/fs/cgroup"

// LimitEvents are the container cgroup's counters of limits hit: processes
// the kernel killed for memory, and forks refused at the process limit.
type LimitEvents struct {
	OOMKills, PidsRefused int64
}

// ReadLimitEvents reads the counters under dir: cgroup v2's memory.events
// and pids.events, or v1's memory/memory.oom_control and
// pids/pids.events. A counter it cannot find counts zero.
func ReadLimitEvents(dir string) LimitEvents {
	return LimitEvents{
		OOMKills: max(eventCount(filepath.Join(dir, "memory.events"), "oom_kill"),
			eventCount(filepath.Join(dir, "memory", "memory.oom_control"), "oom_kill")),
		PidsRefused: max(eventCount(filepath.Join(dir, "pids.events"), "max"),
			eventCount(filepath.Join(dir, "pids", "pids.events"), "max")),
	}
}

// Killed says which limit the counters show was hit between e and after,
// memory first: "" when none.
func (e LimitEvents) Killed(after LimitEvents) string {
	switch {
	case after.OOMKills > e.OOMKills:
		return contract.KilledMemory
	case after.PidsRefused > e.PidsRefused:
		return contract.KilledPids
	}
	return ""
}

func eventCount(file, key string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 2 && string(f[0]) == key {
			n, _ := strconv.ParseInt(string(f[1]), 10, 64)
			return n
		}
	}
	return 0
}
