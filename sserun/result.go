package sserun

import "github.com/42-b3yond-6ug/ssebench/contract"

// NewCheck turns a daemon Result into a Check of result.json whose output
// is in log. It stays with the runtime, not in package contract, because
// Result is the daemon's protocol, which the host never reads.
func NewCheck(r *Result, log string) *contract.Check {
	if r == nil {
		return nil
	}
	return &contract.Check{OK: r.OK, Exit: r.Exit, DurationMS: r.DurationMS, TimedOut: r.TimedOut, Skipped: r.Skipped, Log: log}
}
