package contract

import "strings"

// The environment variables of a run. They are the contract between who
// starts a container (the pipeline, the Kubernetes backend) and the
// runtime inside it (sserun's entrypoint and daemon), and the assembler
// refuses images that set them (RunOnly): so they are named here, once,
// for all of them. The run sets the first ones (SPEC.md section 10); the
// others relocate what is fixed in a tool image, for tests and for
// debugging.
const (
	// EnvResults is the directory of the run's results (agent.log,
	// final.patch, result.json).
	EnvResults = "SSE_RESULTS"
	// EnvArchive is the directory where the agent writes what it wants
	// kept (the run's archive/ folder).
	EnvArchive = "SSE_ARCHIVE"
	// EnvTimeout is the agent's time limit in whole seconds; 0 means none.
	EnvTimeout = "TIMEOUT"
	// EnvDifficulty is the difficulty level, 0 (the agent is told most)
	// to 4 (the issue text only): see sserun.TaskInfoFor.
	EnvDifficulty = "SSE_DIFFICULTY"
	// EnvKeepAlive, when "1" (or "true"), keeps the entrypoint alive after
	// grading, so the container can be inspected.
	EnvKeepAlive = "SSE_KEEP_ALIVE"
	// EnvAgentSocket is the daemon's socket for the agent.
	EnvAgentSocket = "SSE_DAEMON_SOCKET"
	// EnvAdminSocket is the daemon's root-only socket.
	EnvAdminSocket = "SSE_ADMIN_SOCKET"
	// EnvMCPAddr is where the MCP server listens (host:port); the agent
	// reaches its streamable HTTP endpoint at http://ADDR/mcp.
	EnvMCPAddr = "SSE_MCP_ADDR"
	// EnvTaskRoot relocates /ssebench (task config, scripts, daemon).
	EnvTaskRoot = "SSE_TASK_ROOT"
	// EnvSourceDir names SOURCE_DIR when there is no task config (sidecar
	// agent images have none); the config's `source` wins otherwise.
	EnvSourceDir = "SOURCE_DIR"
	// EnvScriptTimeout is the time limit of one task script, in whole
	// seconds.
	EnvScriptTimeout = "SSE_SCRIPT_TIMEOUT"
	// EnvGradeTimeout is the time limit of the whole grade, in whole
	// seconds (DefaultGradeTimeout when unset).
	EnvGradeTimeout = "SSE_GRADE_TIMEOUT"
	// EnvAllowNoSandbox, when "1", lets the grade's scripts run without
	// their sandbox where the machine refuses it (`--allow-no-sandbox`);
	// otherwise such a grade is refused, and the run is not graded.
	EnvAllowNoSandbox = "SSE_ALLOW_NO_SANDBOX"
	// EnvWorkDir is where the daemon makes its scratch directories.
	EnvWorkDir = "SSE_WORK_DIR"
	// EnvRunnerUser names the account the daemon runs scripts as.
	EnvRunnerUser = "SSE_RUNNER_USER"
	// EnvOpenCode says whether the run's agent drives the OpenCode server
	// the image carries: "1" starts it, "0" leaves it off (agent.yaml's
	// opencode). Unset, the server starts, as it did before the run said.
	EnvOpenCode = "SSE_OPENCODE"
	// EnvRole says which of a run's two containers (SPEC.md section
	// 17.1) the entrypoint is in: RoleTask or RoleAgent. Unset, the
	// entrypoint runs the agent and grades in one container, which only
	// an image run by hand does: no ssebench command grades that way.
	EnvRole = "SSE_ROLE"
)

// The roles of a run's two containers (EnvRole).
const (
	// RoleTask is the task container: the tool image, with the answers,
	// the pristine tree and the daemon. It serves the agent's tools
	// during the phase, then takes the snapshot and grades, with its own
	// git and toolchain.
	RoleTask = "task"
	// RoleAgent is the agent container: the agent image, which holds no
	// answer. It runs the agent as model on the task container's
	// SOURCE_DIR, and nothing of it runs in the grade.
	RoleAgent = "agent"
)

// The model gateway in the container (SPEC.md section 14): the run says
// where the gateway is, the entrypoint forwards GatewayAddr to it.
const (
	// EnvGatewaySocket is the gateway's Unix socket, bind-mounted by the
	// run into a root-only directory. When it is set, the entrypoint
	// forwards GatewayAddr to it before the agent starts.
	EnvGatewaySocket = "SSE_GATEWAY_SOCKET"
	// EnvGatewayAddr is the gateway's TCP address (host:port) where it
	// runs on another machine: the Service of a run on Kubernetes. When
	// it is set, the entrypoint forwards GatewayAddr to it.
	EnvGatewayAddr = "SSE_GATEWAY_ADDR"
	// GatewayAddr is where the agent reaches the gateway; SSE_BASE_URL
	// is http://127.0.0.1:4000 in a restricted run.
	GatewayAddr = "127.0.0.1:4000"
	// EnvAPIKey is the run's token at the gateway in a restricted run.
	EnvAPIKey = "SSE_API_KEY"
	// GatewayRevokePath is the gateway's own endpoint that spends the
	// run's token: a POST with the token, which the entrypoint sends when
	// the agent phase ends. From then on the gateway refuses the token,
	// whoever presents it and however it reached the gateway.
	GatewayRevokePath = "/ssebench/revoke"
)

// EnvPrefix is the prefix of every variable the runtime reads besides
// TIMEOUT and SOURCE_DIR.
const EnvPrefix = "SSE_"

// RunOnly reports whether the runtime reads the variable name, so that
// only the run may set it: an image's config (the case's, the tool's, an
// agent's) must not carry it (SPEC.md section 16). The tool image drops
// such variables from the config it inherits, agent images that set them
// are refused, and verify reports them.
func RunOnly(name string) bool {
	return strings.HasPrefix(name, EnvPrefix) || name == EnvTimeout || name == EnvSourceDir
}
