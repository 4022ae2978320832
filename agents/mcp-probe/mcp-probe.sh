#!/bin/bash
# mcp-probe: connects to the run's MCP server (http://127.0.0.1:3000/mcp),
# lists the tools, calls task_info, build, run_pocs (when listed) and
# status, and writes every answer to $SSE_ARCHIVE/mcp-probe/ (the run's
# archive/ folder): initialize.json, tools.json, task_info.json,
# build.json, run_pocs.json, status.json and summary.txt.
set -u
url=${MCP_PROBE_URL:-http://127.0.0.1:3000/mcp}
out=${SSE_ARCHIVE:-/tmp/sse-archive}/mcp-probe
mkdir -p "$out" || exit 1
headers=$(mktemp)
trap 'rm -f "$headers"' EXIT
session=
protocol=
id=0

# post BODY: POSTs one JSON-RPC message and prints the answer: JSON, from
# a JSON body or from the data lines of an event stream, or else the HTTP
# status line and body as they came.
post() {
	local args=(-sS --retry 10 --retry-connrefused --retry-delay 1 -D "$headers"
		-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
	[ -n "$session" ] && args+=(-H "Mcp-Session-Id: $session")
	[ -n "$protocol" ] && args+=(-H "MCP-Protocol-Version: $protocol")
	local body
	body=$(curl "${args[@]}" --data-binary "$1" "$url")
	if grep -qi '^content-type: *\(application/json\|text/event-stream\)' "$headers"; then
		printf '%s\n' "$body" | sed -n -e 's/^data: //' -e '/^[{[]/p'
	else
		head -1 "$headers"
		printf '%s\n' "$body"
	fi
}

# call METHOD PARAMS FILE: a request; its answer goes to FILE.
call() {
	id=$((id + 1))
	post "{\"jsonrpc\":\"2.0\",\"id\":$id,\"method\":\"$1\",\"params\":$2}" >"$out/$3"
	if ! grep -q '"result"' "$out/$3"; then
		echo "mcp-probe: $1 $2 failed: $(head -c 500 "$out/$3")" >&2
		return 1
	fi
}

call initialize '{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mcp-probe","version":"1.0.0"}}' initialize.json || exit 1
session=$(grep -i '^mcp-session-id:' "$headers" | cut -d: -f2 | tr -d ' \r')
protocol=$(grep -o '"protocolVersion":"[^"]*"' "$out/initialize.json" | cut -d'"' -f4)
post '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null

status=0
call tools/list '{}' tools.json || status=1
tools=$(grep -o '"name":"[a-z_]*"' "$out/tools.json" | cut -d'"' -f4 | sort | tr '\n' ' ')
call tools/call '{"name":"task_info","arguments":{}}' task_info.json || status=1
call tools/call '{"name":"build","arguments":{}}' build.json || status=1
case " $tools " in
*" run_pocs "*) call tools/call '{"name":"run_pocs","arguments":{}}' run_pocs.json || status=1 ;;
esac
call tools/call '{"name":"status","arguments":{}}' status.json || status=1

{
	echo "server: $(grep -o '"serverInfo":{[^}]*}' "$out/initialize.json")"
	echo "protocol: $protocol"
	echo "tools: $tools"
	if grep -q '"passed":true' "$out/build.json"; then echo "build: passed"; else echo "build: failed"; fi
} >"$out/summary.txt"
cat "$out/summary.txt"
exit $status
