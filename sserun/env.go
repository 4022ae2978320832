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

// Env holds the settings read from the environment (the variables are
// named in package contract, which the run that sets them shares),
// defaults filled in.
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
	// GradeTimeout bounds the whole grade (contract.DefaultGradeTimeout).
	GradeTimeout time.Duration
	// AllowNoSandbox lets the grade's scripts run without their sandbox
	// where the machine refuses it (contract.EnvAllowNoSandbox).
	AllowNoSandbox bool
	WorkDir        string
	RunnerUser     string
	// Role is contract.RoleTask or contract.RoleAgent in a run of two
	// containers; empty in one container.
	Role string
	// HandoverDir is where the two containers of a pod hand over
	// (contract.EnvHandoverDir); empty where the host does.
	HandoverDir string
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
		Results:        get(contract.EnvResults, DefaultResults),
		Archive:        get(contract.EnvArchive, ""),
		KeepAlive:      truthy(getenv(contract.EnvKeepAlive)),
		AgentSocket:    get(contract.EnvAgentSocket, DefaultAgentSocket),
		AdminSocket:    get(contract.EnvAdminSocket, DefaultAdminSocket),
		MCPAddr:        get(contract.EnvMCPAddr, DefaultMCPAddr),
		TaskRoot:       get(contract.EnvTaskRoot, DefaultTaskRoot),
		SourceDir:      get(contract.EnvSourceDir, ""),
		WorkDir:        get(contract.EnvWorkDir, os.TempDir()),
		RunnerUser:     get(contract.EnvRunnerUser, DefaultRunnerUser),
		Role:           get(contract.EnvRole, ""),
		HandoverDir:    get(contract.EnvHandoverDir, ""),
		Timeout:        DefaultTimeout,
		ScriptTimeout:  DefaultScriptTimeout,
		GradeTimeout:   contract.DefaultGradeTimeout,
		Difficulty:     DefaultDifficulty,
		AllowNoSandbox: truthy(getenv(contract.EnvAllowNoSandbox)),
	}
	if v := strings.TrimSpace(getenv(contract.EnvDifficulty)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxDifficulty {
			return Env{}, fmt.Errorf("%s=%q is not a difficulty level: use 0 to %d", contract.EnvDifficulty, v, MaxDifficulty)
		}
		e.Difficulty = n
	}
	switch e.Role {
	case "", contract.RoleTask, contract.RoleAgent:
	default:
		return Env{}, fmt.Errorf("%s=%q is not a role: use %s or %s", contract.EnvRole, e.Role, contract.RoleTask, contract.RoleAgent)
	}
	var err error
	if e.Timeout, err = seconds(getenv, contract.EnvTimeout, DefaultTimeout, true); err != nil {
		return Env{}, err
	}
	if e.ScriptTimeout, err = seconds(getenv, contract.EnvScriptTimeout, DefaultScriptTimeout, false); err != nil {
		return Env{}, err
	}
	if e.GradeTimeout, err = seconds(getenv, contract.EnvGradeTimeout, contract.DefaultGradeTimeout, false); err != nil {
		return Env{}, err
	}
	for _, p := range []struct{ name, v string }{
		{contract.EnvResults, e.Results}, {contract.EnvAgentSocket, e.AgentSocket}, {contract.EnvAdminSocket, e.AdminSocket},
		{contract.EnvTaskRoot, e.TaskRoot}, {contract.EnvWorkDir, e.WorkDir}, {contract.EnvHandoverDir, e.HandoverDir},
	} {
		if p.name == contract.EnvHandoverDir && p.v == "" {
			continue
		}
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
