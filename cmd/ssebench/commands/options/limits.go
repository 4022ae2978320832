package options

import (
	"strconv"

	"github.com/spf13/pflag"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// AddLimitFlags binds --memory, --pids, --cpus and --disk into l, whose values
// before the call are the defaults the help shows (contract.DefaultLimits
// for run and eval). 0 means no limit of that kind.
func AddLimitFlags(f *pflag.FlagSet, l *contract.Limits) {
	f.Var((*bytesValue)(&l.MemoryBytes), "memory", "memory the run's containers may use, swap included: bytes or 512Mi, 4Gi, ... (0: no limit)")
	f.Int64Var(&l.Pids, "pids", l.Pids, "processes and threads the run's containers may have at once (0: no limit)")
	f.Float64Var(&l.CPUs, "cpus", l.CPUs, "CPU cores the run's containers may use, e.g. 1.5 (0: no limit)")
	f.Var((*bytesValue)(&l.DiskBytes), "disk", "disk the run may write (its containers' writable layers and the archive): bytes or 512Mi, 10Gi, ... (0: no limit; a run is always stopped before the host has less than 1Gi free)")
}

// bytesValue is a size flag: bytes, or a number with Ki, Mi, Gi or Ti.
type bytesValue int64

// Set implements pflag.Value.
func (b *bytesValue) Set(s string) error {
	n, err := contract.ParseBytes(s)
	if err != nil {
		return err
	}
	*b = bytesValue(n)
	return nil
}

// String implements pflag.Value: whole GiB or MiB when it is one.
func (b *bytesValue) String() string {
	n := int64(*b)
	switch {
	case n != 0 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "Gi"
	case n != 0 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "Mi"
	}
	return strconv.FormatInt(n, 10)
}

// Type implements pflag.Value.
func (b *bytesValue) Type() string { return "size" }
