#!/bin/sh
# The files-demo agent: shows what its image holds.
set -eu
echo "files-demo agent, SSEBench $(cat "$AGENT_HOME/VERSION")"
echo "config:"
ls "$AGENT_HOME/config"
cat "$AGENT_HOME/config/prompt.txt"
