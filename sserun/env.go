package sserun

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/42-b3yond-6ug/ssebench/contract"
)

// Environment variables read by the entrypoint and the daemon. The run
// sets the first ones (SPEC.md section 10); the others relocate what is
// fixed in a tool image, for tests and for debugging.
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
	// to 4 (the issue text only): see TaskInfoFor.
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
	// EnvWorkDir is where the daemon makes its scratch directories.
	EnvWorkDir = "SSE_WORK_DIR"
	// EnvRunnerUser names the account the daemon runs scripts as.
	EnvRunnerUser = "SSE_RUNNER_USER"
)

// Defaults of the settings in Env.
const (
	DefaultResults     = contract.Results
	DefaultTaskRoot    = contract.TaskRoot
	DefaultAgentSocket = "/tmp/sse.sock"
	DefaultAdminSocket = "/run/ssebench/admin.sock"
	DefaultMCPAddr     = "127.0.0.1:3000"
	DefaultRunnerUser  = contract.RunnerName
	// DefaultTimeout is the agent's time limit: one hour, as `ssebench run`
	// passes it.
	DefaultTimeout = time.Hour
	// DefaultScriptTimeout bounds one build, test or proof of concept: a
	// C++ or Rust project's full build with sanitizers takes minutes, and
	// a hung test must not hold the daemon forever.
	DefaultScriptTimeout = 20 * time.Minute
	// DefaultDifficulty is the level when SSE_DIFFICULTY is unset (SPEC.md
	// section 13).
	DefaultDifficulty = 2
	// MaxDifficulty is the hardest level.
	MaxDifficulty = 4
)

// Env holds the settings read from the environment, defaults filled in.
type Env struct {
	Results       string
	Archive       string        // from SSE_ARCHIVE; may be empty
	Timeout       time.Duration // 0: no limit
	Difficulty    int           // 0–4
	KeepAlive     bool
	AgentSocket   string
	AdminSocket   string
	MCPAddr       string
	TaskRoot      string
	SourceDir     string // from SOURCE_DIR; may be empty
	ScriptTimeout time.Duration
	WorkDir       string
	RunnerUser    string
}

// ReadEnv reads the settings through getenv (os.Getenv in the programs).
// Empty or blank variables take their defaults; a malformed number is an
// error that names the variable.
func ReadEnv(getenv func(string) string) (Env, error) {
	get := func(k, def string) string {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
		return def
	}
	e := Env{
		Results:       get(EnvResults, DefaultResults),
		Archive:       get(EnvArchive, ""),
		KeepAlive:     truthy(getenv(EnvKeepAlive)),
		AgentSocket:   get(EnvAgentSocket, DefaultAgentSocket),
		AdminSocket:   get(EnvAdminSocket, DefaultAdminSocket),
		MCPAddr:       get(EnvMCPAddr, DefaultMCPAddr),
		TaskRoot:      get(EnvTaskRoot, DefaultTaskRoot),
		SourceDir:     get(EnvSourceDir, ""),
		WorkDir:       get(EnvWorkDir, os.TempDir()),
		RunnerUser:    get(EnvRunnerUser, DefaultRunnerUser),
		Timeout:       DefaultTimeout,
		ScriptTimeout: DefaultScriptTimeout,
		Difficulty:    DefaultDifficulty,
	}
	if v := strings.TrimSpace(getenv(EnvDifficulty)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxDifficulty {
			return Env{}, fmt.Errorf("%s=%q is not a difficulty level: use 0 to %d", EnvDifficulty, v, MaxDifficulty)
		}
		e.Difficulty = n
	}
	var err error
	if e.Timeout, err = seconds(getenv, EnvTimeout, DefaultTimeout, true); err != nil {
		return Env{}, err
	}
	if e.ScriptTimeout, err = seconds(getenv, EnvScriptTimeout, DefaultScriptTimeout, false); err != nil {
		return Env{}, err
	}
	for _, p := range []struct{ name, v string }{
		{EnvResults, e.Results}, {EnvAgentSocket, e.AgentSocket}, {EnvAdminSocket, e.AdminSocket},
		{EnvTaskRoot, e.TaskRoot}, {EnvWorkDir, e.WorkDir},
	} {
		if !filepath.IsAbs(p.v) {
			return Env{}, fmt.Errorf("%s=%q is not an absolute path", p.name, p.v)
		}
	}
	return e, nil
}

// seconds reads a whole number of seconds. zeroOK allows 0, meaning "no
// limit".
func seconds(getenv func(string) string, name string, def time.Duration, zeroOK bool) (time.Duration, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || (n == 0 && !zeroOK) || n > int64(100*365*24*time.Hour/time.Second) {
		return 0, fmt.Errorf("%s=%q is not a number of seconds", name, v)
	}
	return time.Duration(n) * time.Second, nil
}

func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

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
