// Package contract holds the constants of the image contract (SPEC.md
// sections 4, 10 and 12): the paths the tool layer owns, the accounts it
// writes and their ids, the modes it enforces. It imports nothing, so the
// assembler, the runtime inside the image (sserun), the pipeline and the
// task model all say the same thing with the same names.
package contract

import "strings"

// Paths inside a tool image.
const (
	// TaskRoot holds the task files and the daemon: root only.
	TaskRoot = "/ssebench"
	// RepoDir is the pristine tree with its history: root only.
	RepoDir = "/ssebench-repo"
	// StateDir is the runtime's state: root only.
	StateDir = "/var/lib/ssebench"
	// Results is where a run's results are mounted (SSE_RESULTS).
	Results = StateDir + "/results"
	// Archive is where the agent leaves what it wants kept (SSE_ARCHIVE).
	Archive = "/tmp/sse-archive"
	// Entrypoint is the image's ENTRYPOINT.
	Entrypoint = "/usr/local/bin/entrypoint"
)

// The accounts.
const (
	ModelName   = "model"
	ModelUID    = 1000
	ModelGID    = 1000
	ModelHome   = "/home/model"
	ModelShell  = "/bin/bash"
	RunnerName  = "sse-runner"
	RunnerHome  = "/nonexistent"
	RunnerShell = "/usr/sbin/nologin"
)

// PrivateMode is the mode of TaskRoot, RepoDir and StateDir.
const PrivateMode = 0o700

// Rel is p as a tar layer names it: without the leading slash.
func Rel(p string) string { return strings.TrimPrefix(p, "/") }
