#!/bin/bash
# run.sh: configure Codex for the run's model gateway ($SSE_BASE_URL, key
# in $SSE_API_KEY, model $SSE_MODEL_NAME), with no update check, analytics,
# feedback or history, and the task's MCP server when it listens; then run
# Codex once on the task.
set -eu
# No update checks or notices from npm or Codex (here, not in the image's
# ENV, which the grader's scripts inherit: docs/agents.md).
export NO_UPDATE_NOTIFIER=1 NPM_CONFIG_UPDATE_NOTIFIER=false
conf="$HOME/.codex"
mkdir -p "$conf"
cat > "$conf/config.toml" <<TOML
model = "${SSE_MODEL_NAME:?no model: run with --model}"
model_provider = "ssebench"
check_for_update_on_startup = false
# No hosted web search: the gateway refuses tools the upstream runs (they
# reach the network from outside the sandbox and are billed apart).
web_search = "disabled"

[model_providers.ssebench]
name = "SSEBench model gateway"
base_url = "${SSE_BASE_URL:?no model gateway}"
env_key = "SSE_API_KEY"
wire_api = "responses"

[analytics]
enabled = false

[feedback]
enabled = false

[history]
persistence = "none"
TOML
# The task's tools over MCP (streamable HTTP), when the tool image has them.
if (exec 3<>/dev/tcp/127.0.0.1/3000) 2>/dev/null; then
	cat >> "$conf/config.toml" <<TOML

[mcp_servers.ssebench]
url = "http://127.0.0.1:3000/mcp"
TOML
fi
prompt=${SSE_TASK_PROMPT:-"You are working in a software repository at $(pwd). A bug in it makes the program crash or misbehave. Find the bug and fix it in the source with the smallest correct change. To build or run the task's tests and proofs of concept, run \"entrypoint --call build\", \"entrypoint --call test\" or \"entrypoint --call poc\". When the fix is done, say so briefly."}
exec codex exec --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox "$prompt" </dev/null
