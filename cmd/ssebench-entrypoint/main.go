// Command ssebench-entrypoint is a tool image's entrypoint,
// /usr/local/bin/entrypoint (SPEC.md section 10). As root it starts the
// task's daemon, runs the agent command it receives (the agent image's
// CMD, words joined with spaces, run by `sh -c`) as `model` with a time
// limit, then grades the agent's tree through the daemon and writes the
// results under $SSE_RESULTS: agent.log, daemon.log, mcp.log,
// tool_calls.jsonl (written by the daemon), final.patch, build.log,
// test.log, poc.log and result.json. It exits with the agent's status (124
// when the time limit killed it).
//
// Before the agent it starts the daemon and the MCP server
// (/ssebench/mcp/ssebench-mcp, on 127.0.0.1:3000/mcp); when the agent
// command ends, the daemon ends the agent phase (every process of model
// killed, the agent socket closed to tools) before the tree is read.
//
// Usage:
//
//	entrypoint [--mode sandbox|sidecar] [--] WORD...
//	entrypoint --call ping|task_info|build|test|poc|status
//	entrypoint --mcp-stdio
//
// The second form is for the agent: it asks the daemon (on
// $SSE_DAEMON_SOCKET) to build, test or run the proofs of concept on a
// copy of the agent's tree, prints the output and exits with the script's
// status. The third is the agent's MCP server on standard input and
// output, for agents that spawn their MCP servers.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/42-b3yond-6ug/ssebench/sserun"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "--call" {
		os.Exit(callMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "--mcp-stdio" {
		os.Exit(mcpStdioMain(os.Args[2:], os.Stderr))
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
	if token := os.Getenv(sserun.EnvResultsStream); token != "" {
		dirs := map[string]string{sserun.StreamResults: e.env.Results, sserun.StreamArchive: e.env.Archive}
		if err := sserun.WriteResultsStream(os.Stdout, token, dirs); err != nil {
			fmt.Fprintln(os.Stderr, "entrypoint: writing the results to the output:", err)
		}
	}
	return code
}
