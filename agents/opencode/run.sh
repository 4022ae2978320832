#!/bin/bash
# run.sh: send the task to the OpenCode server the entrypoint started on
# 127.0.0.1:4096 (its provider is the run's model gateway, its tools the
# run's MCP server when there is one) and wait for OpenCode to finish.
set -eu
# The OpenCode version this agent was written for: the runtime image's
# default. Another one runs, with a warning.
OPENCODE_VERSION=1.18.33
server=127.0.0.1:4096
export OPENCODE_DISABLE_AUTOUPDATE=1 OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_SHARE=1
if ! command -v opencode >/dev/null; then
	echo "opencode agent: the tool image has no /usr/local/bin/opencode: build the runtime image with OpenCode (ssebench runtime build --opencode-version $OPENCODE_VERSION) where the npm registry is reachable" >&2
	exit 2
fi
have=$(opencode --version 2>/dev/null || true)
if [ "$have" != "$OPENCODE_VERSION" ]; then
	echo "opencode agent: warning: the tool image has OpenCode ${have:-of unknown version}, this agent was written for $OPENCODE_VERSION" >&2
fi
# The entrypoint waits for the server before the agent starts; this is
# for a server that died since (its log is opencode.log in the run folder).
i=0
until (exec 3<>"/dev/tcp/${server%:*}/${server#*:}") 2>/dev/null; do
	i=$((i + 1))
	if [ $i -ge 100 ]; then
		echo "opencode agent: no OpenCode server on $server: see opencode.log in the run folder" >&2
		exit 2
	fi
	sleep 0.1
done
prompt=${SSE_TASK_PROMPT:-"You are working in a software repository at $(pwd). A bug in it makes the program crash or misbehave. Find the bug and fix it in the source with the smallest correct change. To build or run the task's tests and proofs of concept, run \"entrypoint --call build\", \"entrypoint --call test\" or \"entrypoint --call poc\" (or use the ssebench MCP tools when you have them). When the fix is done, say so briefly."}
exec opencode run --attach "http://$server" --dir "$(pwd)" \
	--model "ssebench/${SSE_MODEL_NAME:?no model: run with --model}" \
	--title "ssebench task" --auto "$prompt" </dev/null
