// Package sserun provides what runs inside a tool image: the pieces shared
// by its two programs, the entrypoint (/usr/local/bin/entrypoint), which
// runs the agent as `model` and grades its work, and the daemon
// (/ssebench/ssebench-daemon), which runs the task's scripts as
// `sse-runner` (SPEC.md sections 4, 10 and 12).
//
// The pieces are: the settings both read from the environment (Env), the
// few keys of the task config they need (TaskConfig), the JSON-lines
// protocol spoken over the daemon's sockets (Request, Response, Call,
// Serve), the daemon itself (Daemon: a scratch copy of the agent's tree per
// request, the scripts run one at a time with a timeout and a capped
// output), running a process as another user in its own process group
// (Process), and the Check of result.json a daemon Result becomes
// (NewCheck). The run's environment variable names and result.json
// itself (RunResult) are in package contract: the host that starts the
// run and reads its results shares them, and must not import the
// runtime.
//
// The package is linked into two static binaries that go into every tool
// image, so it imports only the standard library and a YAML parser.
package sserun
