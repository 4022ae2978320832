package sserun

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// TestNewCheck: a daemon Result becomes a Check of result.json; its
// output stays in the log file, out of result.json. (result.json itself
// is tested in package contract.)
func TestNewCheck(t *testing.T) {
	tests := []struct {
		name string
		r    *Result
		want *contract.Check
	}{
		{"passed", &Result{OK: true, DurationMS: 5, Output: "not in result.json"}, &contract.Check{OK: true, DurationMS: 5, Log: "build.log"}},
		{"skipped", &Result{Exit: -1, Skipped: "the build failed"}, &contract.Check{Exit: -1, Skipped: "the build failed", Log: "build.log"}},
		{"timed out", &Result{Exit: contract.TimeoutStatus, TimedOut: true}, &contract.Check{Exit: contract.TimeoutStatus, TimedOut: true, Log: "build.log"}},
		{"no result", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, NewCheck(tt.r, "build.log")); diff != "" {
				t.Errorf("NewCheck() (-want +got):\n%s", diff)
			}
		})
	}
}
