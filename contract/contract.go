// Package contract holds what the host and the runtime inside an image
// must agree on (SPEC.md sections 4, 10 and 12): the paths the tool layer
// owns, the accounts it writes and their ids, the modes it enforces
// (contract.go); the environment variables a run sets and an image may not
// (env.go); result.json and the other files of a run's results directory
// (result.go); and the results stream that carries them back through a
// container's log (stream.go). It imports the standard library only, so
// the assembler, the runtime inside the image (sserun), the pipeline, the
// Kubernetes backend, the results and the task model all say the same
// thing with the same names, and none of the host's packages has to
// import the runtime to say it.
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

// Sidecar mode (SPEC.md section 7). The agent container's root may be the
// agent's (its Dockerfile ran as root at build time), so it shares
// nothing it could forge a grade with: the task container has SidecarDir,
// a root-owned 0755 directory of the host with the admin socket and the
// run's hand-over files; the agent container gets only SidecarAgentDir
// below it, read-only, at SidecarDir, where the agent socket is.
const (
	// SidecarDir is /run/ssebench in both containers: in the task
	// container the host's directory, in the agent container its
	// SidecarAgentDir, read-only.
	SidecarDir = "/run/ssebench"
	// SidecarAgentDir is, in the task container, the directory of the
	// agent socket: the one directory the agent container also mounts.
	SidecarAgentDir = SidecarDir + "/agent"
	// SidecarAgentSocket is the agent socket (SSE_DAEMON_SOCKET) as the
	// agent container sees it; SidecarTaskAgentSocket is the same socket
	// in the task container, where the daemon listens.
	SidecarAgentSocket     = SidecarDir + "/sse.sock"
	SidecarTaskAgentSocket = SidecarAgentDir + "/sse.sock"
	// SidecarAdminSocket is the daemon's admin socket (SSE_ADMIN_SOCKET),
	// in the task container only.
	SidecarAdminSocket = SidecarDir + "/admin.sock"
	// SidecarReady is written by the task container once the daemon
	// answers and the buggy commit is read: the host may start the agent
	// container.
	SidecarReady = SidecarDir + "/ready"
	// SidecarAgentStart is written by the host once the agent container
	// has started: the task container starts the agent phase's clock.
	SidecarAgentStart = SidecarDir + "/agent-start"
	// SidecarAgentExit is written by the host once the agent container
	// has ended, however it ended: the agent container's exit status.
	// The task container then grades what the tree holds.
	SidecarAgentExit = SidecarDir + "/agent-exit"
	// SidecarScript is the task container's ENTRYPOINT (mode 0700).
	SidecarScript = "/usr/local/bin/entrypoint.sh"
	// SidecarTaskEntrypoint is the entrypoint program in the task
	// container, under the root-only task root: it grades.
	SidecarTaskEntrypoint = TaskRoot + "/ssebench-entrypoint"
	// SidecarMCP is the MCP server in the agent container, which has no
	// TaskRoot: in a root-only directory of its own.
	SidecarMCPDir = "/usr/local/libexec/ssebench"
	SidecarMCP    = SidecarMCPDir + "/ssebench-mcp"
)

// A run's two containers in one unit (a Kubernetes pod, SPEC.md section
// 17.1), where no host stands between them: the agent container's side
// says itself that the agent started and ended, through a root-only
// directory that both mount (EnvHandoverDir), and holds a lock there for
// as long as it lives, so that the task container knows it ended however
// it ended. The seed (an init container from the tool image) makes the
// directories and copies SOURCE_DIR into the volume both share.
const (
	// EnvHandoverDir is the hand-over directory as the container sees
	// it: HandoverTaskDir in the task container, HandoverAgentDir in the
	// agent container. Unset on containerd, where the host hands over.
	EnvHandoverDir = "SSE_HANDOVER_DIR"
	// HandoverTaskDir is the hand-over directory in the task container,
	// below SidecarDir; HandoverAgentDir the same directory in the agent
	// container, where only root (the entrypoint) may write it.
	HandoverTaskDir  = SidecarDir + "/handover"
	HandoverAgentDir = "/run/ssebench-handover"
	// HandoverStart, HandoverExit and HandoverLock are its files: the
	// agent started; the agent's side ended (its status); the lock the
	// agent's side holds while it lives.
	HandoverStart = "agent-start"
	HandoverExit  = "agent-exit"
	HandoverLock  = "agent.lock"
	// SeedFlag makes the entrypoint the seed: `entrypoint --seed SRC RUN`
	// copies SOURCE_DIR into SRC, owners and modes kept, and makes RUN
	// (SidecarDir's volume) root's 0755 with its agent/ (0755) and
	// handover/ (0700) directories.
	SeedFlag = "--seed"
)
