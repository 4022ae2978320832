package results

import (
	"bytes"
	"strings"
	"testing"
)

// TestStartupStats: the report gives the median start-up of its runs and
// of each part, and how many layers the runs unpacked; runs that recorded
// none are left out.
func TestStartupStats(t *testing.T) {
	run := func(total, imp, unp, cre, sta float64, layers int) *Run {
		return &Run{Summary: &Summary{Task: "t", Agent: "a", Status: "ok", LayersUnpacked: layers, Timings: map[string]float64{
			TimingStartup: total, TimingImport: imp, TimingUnpack: unp, TimingCreate: cre, TimingStart: sta,
		}}}
	}
	runs := []*Run{
		run(14.6, 0.4, 13.1, 0.3, 0.8, 18),
		run(0.5, 0.01, 0, 0.2, 0.29, 0),
		run(0.7, 0.02, 0, 0.3, 0.38, 0),
		{Summary: &Summary{Task: "t", Agent: "a", Status: "failed", Timings: map[string]float64{"case": 3}}},
	}
	rep := NewReport("e", runs)
	st := rep.Startup
	if st == nil {
		t.Fatal("report has no start-up")
	}
	want := StartupStats{Runs: 3, Seconds: 0.7, Import: 0.02, Unpack: 0, Create: 0.3, Start: 0.38, LayersUnpacked: 18, RunsUnpacking: 1}
	if *st != want {
		t.Errorf("start-up = %+v, want %+v", *st, want)
	}
	var b bytes.Buffer
	if err := Write(&b, rep, "md"); err != nil {
		t.Fatal(err)
	}
	if line := "Start-up per run (median of 3 runs): 0.70 s: import 0.02 s, unpack 0.00 s, containers created 0.30 s, started 0.38 s; 18 layers unpacked, by 1 run."; !strings.Contains(b.String(), line) {
		t.Errorf("report lacks %q:\n%s", line, b.String())
	}
	if rep := NewReport("e", runs[3:]); rep.Startup != nil {
		t.Errorf("start-up of runs that recorded none = %+v, want none", rep.Startup)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median of 1..4 = %v, want 2.5", got)
	}
}
