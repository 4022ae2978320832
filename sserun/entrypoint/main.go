// Package entrypoint is a tool image's entrypoint,
// /usr/local/bin/entrypoint (SPEC.md section 10), as a package: the
// program cmd/ssebench-entrypoint is its Main, and an extension adds a mode
// with RegisterMode and builds its own program around Main (see
// `ssebench runtime build --entrypoint PKG`).
//
// In sandbox mode, as root, it starts the task's daemon, runs the agent
// command it receives (the agent image's CMD, words joined with spaces,
// run by `sh -c`) as `model` with a time limit, then grades the agent's
// tree through the daemon and writes the results under $SSE_RESULTS:
// agent.log, daemon.log, mcp.log, tool_calls.jsonl (written by the
// daemon), final.patch, build.log, test.log, poc.log and result.json. It
// exits with the agent's status (124 when the time limit killed it).
//
// Before the agent it starts the daemon and the MCP server
// (/ssebench/mcp/ssebench-mcp, on 127.0.0.1:3000/mcp); when the agent
// command ends, the daemon ends the agent phase (every process of model
// killed, the agent socket closed to tools) before the tree is read.
//
// In sidecar mode (SPEC.md section 7) it is the agent container's side:
// it waits for the task container's daemon on /run/ssebench, runs the
// agent in SOURCE_DIR and leaves its report; the task container's side
// (mode sidecar-task, started by tool-sidecar's entrypoint script) waits
// for the agent container's end and grades.
//
// Usage:
//
//	entrypoint [--mode sandbox|sidecar|NAME] [--] WORD...
//	entrypoint --call ping|task_info|build|test|poc|status
//	entrypoint --mcp-stdio
//
// The second form is for the agent: it asks the daemon (on
// $SSE_DAEMON_SOCKET) to build, test or run the proofs of concept on a
// copy of the agent's tree, prints the output and exits with the script's
// status. The third is the agent's MCP server on standard input and
// output, for agents that spawn their MCP servers.
package entrypoint

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/sserun"
)

// Main is the entrypoint program: it never returns.
func Main() {
	if len(os.Args) > 1 && os.Args[1] == "--call" {
		os.Exit(callMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "--mcp-stdio" {
		os.Exit(mcpStdioMain(os.Args[2:], os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == contract.SeedFlag {
		os.Exit(seedMain(os.Args[2:], os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == mcpHTTPFlag {
		os.Exit(mcpHTTPMain(os.Args[2:], os.Stderr))
	}
	// A container's first process inherits every orphan: let a small
	// init reap them and run the entrypoint as its child.
	if os.Getpid() == 1 && os.Getenv(initChildEnv) == "" {
		os.Exit(initMain())
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	code := runMain(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// runMain sets up the entrypoint from the environment and runs it.
func runMain(ctx context.Context, args []string) int {
	e, err := newEntrypoint(args, os.Getenv, os.Environ(), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "entrypoint:", err)
		return 2
	}
	if os.Geteuid() != 0 {
		fmt.Fprintf(os.Stderr, "entrypoint: not root: the agent runs as uid %d, not as model\n", os.Getuid())
		e.agent = nil
	}
	code := e.run(ctx)
	// A backend without a volume shared with the machine that started the
	// run gets the results back through this process's output.
	if token := os.Getenv(contract.EnvResultsStream); token != "" {
		dirs := map[string]string{contract.StreamResults: e.env.Results, contract.StreamArchive: e.env.Archive}
		if err := contract.WriteResultsStream(os.Stdout, token, dirs); err != nil {
			fmt.Fprintln(os.Stderr, "entrypoint: writing the results to the output:", err)
		}
	}
	return code
}

// Mode is one way of running: it gets the entrypoint, set up from the
// arguments and the environment, and returns the exit status.
type Mode func(ctx context.Context, e *Entrypoint) int

var (
	modesMu sync.Mutex
	modes   = map[string]Mode{}
)

// RegisterMode adds `--mode name`. Call it from an init function of the
// extension's package; a name already taken (sandbox, sidecar, or
// another extension's) panics, as two main functions would fail to build.
func RegisterMode(name string, m Mode) {
	modesMu.Lock()
	defer modesMu.Unlock()
	if _, ok := modes[name]; ok {
		panic(fmt.Sprintf("entrypoint: two modes named %q", name))
	}
	modes[name] = m
}

func init() {
	RegisterMode(modeSandbox, func(ctx context.Context, e *Entrypoint) int { return e.Sandbox(ctx) })
	RegisterMode(modeSidecar, func(ctx context.Context, e *Entrypoint) int {
		return e.runAgentSide(ctx, modeSidecar, []string{contract.SidecarMCP})
	})
	RegisterMode(modeSidecarTask, func(ctx context.Context, e *Entrypoint) int { return e.runTaskSide(ctx, modeSidecar, false) })
}

// Modes lists the registered modes, sorted.
func Modes() []string {
	modesMu.Lock()
	defer modesMu.Unlock()
	var names []string
	for n := range modes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func lookupMode(name string) (Mode, bool) {
	modesMu.Lock()
	defer modesMu.Unlock()
	m, ok := modes[name]
	return m, ok
}

// Entrypoint is one run of the entrypoint, for a Mode.
type Entrypoint = entrypoint

// Env is the settings read from the environment.
func (e *Entrypoint) Env() sserun.Env { return e.env }

// Command is the agent command, words joined with spaces.
func (e *Entrypoint) Command() string { return e.command }

// Log is where the entrypoint's own messages go (standard error).
func (e *Entrypoint) Log() io.Writer { return e.log }

// New sets an entrypoint up from its arguments and the environment, as
// Main does; Run runs it. An extension's tests use them.
func New(args []string, getenv func(string) string, environ []string, log io.Writer) (*Entrypoint, error) {
	return newEntrypoint(args, getenv, environ, log)
}

// Run runs the entrypoint's mode and returns the exit status.
func (e *Entrypoint) Run(ctx context.Context) int { return e.run(ctx) }
