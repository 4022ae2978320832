// Package limitevents reads a container cgroup's counters of limits hit:
// processes the kernel killed for memory, forks refused at the process
// limit. The entrypoint reads them inside the container, where it can; the
// containerd runner reads them on the host, before the task is deleted.
package limitevents

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// CgroupDir is where a container sees its own cgroup (cgroup v2 through
// its cgroup namespace, or v1's hierarchies, each at the container's own
// cgroup, when the runtime mounts them), and where the host has them all.
const CgroupDir = "/sys/fs/cgroup"

// Events are the counters of one cgroup.
type Events struct {
	OOMKills, PidsRefused int64
}

// Read reads the counters of the cgroup at path (as a runtime spec's
// cgroupsPath names it; "" for the cgroup the caller sees as its own)
// under root: cgroup v2's memory.events and pids.events, or v1's
// memory/…/memory.oom_control and pids/…/pids.events. A counter it cannot
// find counts zero.
func Read(root, path string) Events {
	return Events{
		OOMKills: max(count(filepath.Join(root, path, "memory.events"), "oom_kill"),
			count(filepath.Join(root, "memory", path, "memory.oom_control"), "oom_kill")),
		PidsRefused: max(count(filepath.Join(root, path, "pids.events"), "max"),
			count(filepath.Join(root, "pids", path, "pids.events"), "max")),
	}
}

// Killed says which limit the counters show was hit between e and after,
// memory first: "" when none.
func (e Events) Killed(after Events) string {
	switch {
	case after.OOMKills > e.OOMKills:
		return contract.KilledMemory
	case after.PidsRefused > e.PidsRefused:
		return contract.KilledPids
	}
	return ""
}

func count(file, key string) int64 {
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
