// Command ssebench-daemon runs a task's scripts for the agent and for the
// grader: /ssebench/ssebench-daemon in a tool image (SPEC.md sections 5
// and 7). It runs as root, reads /ssebench/config.yaml, and serves the
// JSON-lines protocol of package sserun on two Unix sockets:
//
//   - the agent socket ($SSE_DAEMON_SOCKET, default /tmp/sse.sock, mode
//     0666): ping, task_info, build, test, poc and status on a copy of the
//     agent's tree, as much as the difficulty level ($SSE_DIFFICULTY)
//     allows;
//   - the admin socket ($SSE_ADMIN_SOCKET, default
//     /run/ssebench/admin.sock, mode 0600, root only): the same, grade,
//     and agent_start and agent_end, which end the agent phase: every
//     process of model is killed and the agent socket refuses every call
//     but ping from then on.
//
// Scripts run as sse-runner ($SSE_RUNNER_USER), one request at a time.
// Each tool call on the agent socket is recorded in
// $SSE_RESULTS/tool_calls.jsonl. The daemon logs one line per request to
// standard error and stops on SIGTERM or SIGINT.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/42-b3yond-6ug/ssebench/contract"
	"github.com/42-b3yond-6ug/ssebench/sserun"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ssebench-daemon:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	env, err := sserun.ReadEnv(os.Getenv)
	if err != nil {
		return err
	}
	cfg, err := sserun.ReadTaskConfig(env.TaskRoot)
	if err != nil {
		return err
	}
	// The tool log is a record, not a reason to refuse to serve.
	var toolLog io.Writer = io.Discard
	if f, err := os.OpenFile(filepath.Join(env.Results, sserun.ToolCallsFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "ssebench-daemon: tool calls are not recorded: %v\n", err)
	} else {
		defer f.Close()
		toolLog = f
	}
	opts := []sserun.DaemonOption{
		sserun.WithWorkDir(env.WorkDir),
		sserun.WithScriptTimeout(env.ScriptTimeout),
		sserun.WithGradeTimeout(env.GradeTimeout),
		sserun.WithAllowNoSandbox(env.AllowNoSandbox),
		sserun.WithEnv(os.Environ()),
		sserun.WithLog(os.Stderr),
		sserun.WithDifficulty(env.Difficulty),
		sserun.WithToolLog(toolLog),
	}
	if cfg.Source == "" && env.SourceDir != "" {
		opts = append(opts, sserun.WithSourceDir(env.SourceDir))
	}
	me := os.Geteuid()
	var runner *sserun.User
	if me == 0 {
		u, err := sserun.LookupUser(sserun.PasswdFile, env.RunnerUser)
		if err != nil {
			return fmt.Errorf("%w: the tool layer adds this user; set %s to use another", err, contract.EnvRunnerUser)
		}
		if err := sserun.CheckRunner(u); err != nil {
			return err
		}
		runner = &u
		model := sserun.Model
		opts = append(opts, sserun.WithRunner(runner), sserun.WithAgentUser(&model))
	} else {
		fmt.Fprintf(os.Stderr, "ssebench-daemon: not root: scripts run as uid %d, and the agent socket is open to every user\n", me)
	}
	d, err := sserun.NewDaemon(env.TaskRoot, cfg, opts...)
	if err != nil {
		return err
	}

	admin, err := sserun.Listen(env.AdminSocket, 0o600)
	if err != nil {
		return err
	}
	defer os.Remove(env.AdminSocket)
	agent, err := sserun.Listen(env.AgentSocket, 0o666)
	if err != nil {
		admin.Close()
		return err
	}
	defer os.Remove(env.AgentSocket)

	// The admin socket's mode keeps others out; the peer check says so
	// again, in case the socket's directory is shared with a looser mode.
	onlyMe := func(uid int) error {
		if uid != me {
			return fmt.Errorf("the admin socket is for uid %d only", me)
		}
		return nil
	}
	// A script's own processes (the agent's code, during a build) must
	// not queue work for the daemon.
	notRunner := func(uid int) error {
		if runner != nil && uid == runner.UID {
			return fmt.Errorf("the daemon does not take requests from %s", runner.Name)
		}
		return nil
	}
	fmt.Fprintf(os.Stderr, "ssebench-daemon: task %s, SOURCE_DIR %s, difficulty %d, agent socket %s, admin socket %s\n",
		cfg.ID, sourceDir(cfg, env), env.Difficulty, env.AgentSocket, env.AdminSocket)

	// Either listener failing stops both.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 2)
	go func() { errs <- sserun.Serve(ctx, admin, d, true, onlyMe) }()
	go func() { errs <- sserun.Serve(ctx, agent, d, false, notRunner) }()
	err = <-errs
	cancel()
	if err2 := <-errs; err == nil {
		err = err2
	}
	return err
}

func sourceDir(cfg *sserun.TaskConfig, env sserun.Env) string {
	if cfg.Source != "" {
		return cfg.Source
	}
	return env.SourceDir
}
