#!/bin/bash
# run.sh: point Claude Code at the run's model gateway ($SSE_BASE_URL, the
# run's token in $SSE_API_KEY, model $SSE_MODEL_NAME), with no telemetry,
# error reports, update checks or other traffic, and the task's MCP server
# when it listens; then run `claude -p` once on the task.
set -eu
model=${SSE_MODEL_NAME:?no model: run with --model}
# The gateway, and the run's token as the key (x-api-key): never a real
# key, which stays on the host. No OAuth token or helper of any kind.
export ANTHROPIC_BASE_URL="${SSE_BASE_URL:?no model gateway: run with --model}"
export ANTHROPIC_API_KEY="${SSE_API_KEY:?no gateway token}"
unset ANTHROPIC_AUTH_TOKEN CLAUDE_CODE_OAUTH_TOKEN
# One model for everything: the gateway refuses a model the run does not
# allow, and Claude Code would otherwise ask for its own defaults (a
# "haiku" for side requests, others for subagents).
export ANTHROPIC_MODEL="$model" ANTHROPIC_SMALL_FAST_MODEL="$model" \
	ANTHROPIC_DEFAULT_HAIKU_MODEL="$model" ANTHROPIC_DEFAULT_SONNET_MODEL="$model" \
	ANTHROPIC_DEFAULT_OPUS_MODEL="$model" CLAUDE_CODE_SUBAGENT_MODEL="$model"
# Nothing but the model requests: no telemetry, error reports, update
# checks, feedback surveys, connectivity checks or flavour-text requests.
# Set here, not in the image's ENV, which the grader's scripts inherit
# (docs/agents.md).
export CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 \
	DISABLE_TELEMETRY=1 DISABLE_ERROR_REPORTING=1 DISABLE_BUG_COMMAND=1 \
	DISABLE_NON_ESSENTIAL_MODEL_CALLS=1 CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY=1 \
	DISABLE_COST_WARNINGS=1 CLAUDE_CODE_ENABLE_TELEMETRY=0 \
	NO_UPDATE_NOTIFIER=1
# The task's tools over MCP (streamable HTTP), when the tool image has
# them; only these (--strict-mcp-config).
mcp='{"mcpServers":{}}'
if (exec 3<>/dev/tcp/127.0.0.1/3000) 2>/dev/null; then
	mcp='{"mcpServers":{"ssebench":{"type":"http","url":"http://127.0.0.1:3000/mcp"}}}'
fi
prompt=${SSE_TASK_PROMPT:-"You are working in a software repository at $(pwd). A bug in it makes the program crash or misbehave. Find the bug and fix it in the source with the smallest correct change. To build or run the task's tests and proofs of concept, run \"entrypoint --call build\", \"entrypoint --call test\" or \"entrypoint --call poc\" (or use the ssebench MCP tools when you have them). When the fix is done, say so briefly."}
# -p: one non-interactive session. bypassPermissions: edits and commands
# need no approval (the container is the sandbox: model, no network but
# the gateway). No web tools: they would reach the network, or ask the
# upstream to. stream-json puts every turn, tool call and result in
# agent.log.
exec claude -p --model "$model" --permission-mode bypassPermissions \
	--mcp-config "$mcp" --strict-mcp-config \
	--disallowedTools WebFetch WebSearch \
	--output-format stream-json --verbose \
	-- "$prompt" </dev/null
