package results

import (
	"fmt"
	"slices"
	"strings"
)

// Keys of summary.json's timings_seconds for a run's start-up: the total
// (both containers of a sandbox run added) and what it was spent on.
const (
	TimingStartup = "startup"
	// TimingImport is getting the images' index, manifest and config
	// into containerd (or the blobs a pull fetched).
	TimingImport = "startup_import"
	// TimingUnpack is unpacking the layers that had no snapshot yet.
	TimingUnpack = "startup_unpack"
	// TimingCreate is the containers: root snapshots, specs, records.
	TimingCreate = "startup_create"
	// TimingStart is the runtime's tasks created and started.
	TimingStart = "startup_start"
)

// StartupStats is the median start-up of a report's runs: what a run pays
// for its containers before the agent starts, and what unpacking its
// images cost. It is the figure to watch when the images do not stay in
// containerd between runs (--keep-images none, a budget too small).
type StartupStats struct {
	// Runs counts the runs that recorded a start-up; the medians are of
	// them.
	Runs int `json:"runs"`
	// Seconds is the median total; Import, Unpack, Create and Start the
	// medians of its parts (TimingImport…), which need not add up to it.
	Seconds float64 `json:"seconds"`
	Import  float64 `json:"import_seconds"`
	Unpack  float64 `json:"unpack_seconds"`
	Create  float64 `json:"create_seconds"`
	Start   float64 `json:"start_seconds"`
	// LayersUnpacked is the layers all the runs unpacked; RunsUnpacking
	// the runs that unpacked any.
	LayersUnpacked int `json:"layers_unpacked"`
	RunsUnpacking  int `json:"runs_unpacking"`
}

// newStartupStats computes the StartupStats of runs; nil when none
// recorded a start-up.
func newStartupStats(runs []*Run) *StartupStats {
	var tot, imp, unp, cre, sta []float64
	s := &StartupStats{}
	for _, r := range runs {
		if r.Summary == nil {
			continue
		}
		t, ok := r.Summary.Timings[TimingStartup]
		if !ok {
			continue
		}
		s.Runs++
		tot = append(tot, t)
		imp = append(imp, r.Summary.Timings[TimingImport])
		unp = append(unp, r.Summary.Timings[TimingUnpack])
		cre = append(cre, r.Summary.Timings[TimingCreate])
		sta = append(sta, r.Summary.Timings[TimingStart])
		s.LayersUnpacked += r.Summary.LayersUnpacked
		if r.Summary.LayersUnpacked > 0 {
			s.RunsUnpacking++
		}
	}
	if s.Runs == 0 {
		return nil
	}
	s.Seconds, s.Import, s.Unpack, s.Create, s.Start = median(tot), median(imp), median(unp), median(cre), median(sta)
	return s
}

// median of v (not empty), rounded to the millisecond.
func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	n := len(v)
	m := v[n/2]
	if n%2 == 0 {
		m = (v[n/2-1] + v[n/2]) / 2
	}
	return round(m, 3)
}

// Text is the line a report prints.
func (s *StartupStats) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Start-up per run (median of %s): %.2f s: import %.2f s, unpack %.2f s, containers created %.2f s, started %.2f s",
		Plural(s.Runs, "run", "runs"), s.Seconds, s.Import, s.Unpack, s.Create, s.Start)
	if s.LayersUnpacked == 0 {
		b.WriteString("; no layer unpacked: every image was in containerd already.")
	} else {
		fmt.Fprintf(&b, "; %s unpacked, by %s.", Plural(s.LayersUnpacked, "layer", "layers"), Plural(s.RunsUnpacking, "run", "runs"))
	}
	return b.String()
}
