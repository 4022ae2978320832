# shellcheck shell=bash
# Common settings and helpers for the development scripts. Sourced, not run.
#
# Everything expensive is cached under SSEBENCH_DEV_CACHE and keyed by
# version, so a second run of scripts/setup.sh only checks and starts. Live
# state (registry storage, BuildKit's cache, logs, pid files) is kept under
# SSEBENCH_DEV_STATE.

SSEBENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export SSEBENCH_ROOT

: "${SSEBENCH_DEV_CACHE:=/var/cache/ssebench-dev}"
: "${SSEBENCH_DEV_STATE:=/var/lib/ssebench-dev}"
# The registry that tests and the OS image use. Plain HTTP on loopback only.
: "${SSEBENCH_DEV_REGISTRY_ADDR:=127.0.0.1:5000}"
: "${BUILDKIT_SOCKET:=/run/buildkit/buildkitd.sock}"
: "${CONTAINERD_SOCKET:=/run/containerd/containerd.sock}"
# How long each daemon may take to answer after it was started.
: "${SSEBENCH_DEV_START_TIMEOUT:=60}"
export SSEBENCH_DEV_CACHE SSEBENCH_DEV_STATE SSEBENCH_DEV_REGISTRY_ADDR

# The BuildKit version is pinned in one place: tools/buildkit/go.mod.
BUILDKIT_VERSION=$(awk '$1 == "github.com/moby/buildkit" { print $2; exit }; $1 == "require" && $2 == "github.com/moby/buildkit" { print $3; exit }' "$SSEBENCH_ROOT/tools/buildkit/go.mod")
BUILDKIT_BIN="$SSEBENCH_DEV_CACHE/buildkit-$BUILDKIT_VERSION/bin"

OS_SUITE=bookworm
# shellcheck disable=SC2034 # used by the scripts that source this file
OS_IMAGE="$SSEBENCH_DEV_REGISTRY_ADDR/ssebench/os/debian:$OS_SUITE"

LOG_DIR="$SSEBENCH_DEV_STATE/logs"
RUN_DIR="$SSEBENCH_DEV_STATE/run"

log() { printf '[ssebench-dev] %s\n' "$*" >&2; }
die() {
	printf '[ssebench-dev] error: %s\n' "$*" >&2
	exit 1
}

require_root() {
	[ "$(id -u)" -eq 0 ] || die "$(basename "$0") must run as root (it installs packages and starts daemons)"
}

# take_lock serialises the setup scripts across processes (several
# developers' test runs on one machine, say). Scripts called by a script
# that holds it inherit it through SSEBENCH_DEV_LOCKED.
take_lock() {
	[ -z "${SSEBENCH_DEV_LOCKED:-}" ] || return 0
	mkdir -p "$SSEBENCH_DEV_CACHE"
	exec 9>"$SSEBENCH_DEV_CACHE/.lock"
	if ! flock -n 9; then
		log "waiting for another setup on this machine to finish"
		flock -w 1200 9 || die "another setup held $SSEBENCH_DEV_CACHE/.lock for 20 minutes"
	fi
	export SSEBENCH_DEV_LOCKED=1
}

# now_s prints seconds since the epoch, for timings.
now_s() { date +%s; }

# show_log_tail FILE prints the last lines of a daemon log to stderr.
show_log_tail() {
	local f=$1
	if [ -s "$f" ]; then
		printf '[ssebench-dev] last lines of %s:\n' "$f" >&2
		tail -n 30 "$f" | sed 's/^/    /' >&2
	else
		printf '[ssebench-dev] %s is empty or missing\n' "$f" >&2
	fi
}

# pid_alive NAME succeeds when the process recorded for NAME still runs.
# The pid file holds the pid and the executable's path; both must match, so
# a stale file (the machine or the session was restarted) never points at an
# unrelated process that reused the pid.
pid_alive() {
	local pidfile="$RUN_DIR/$1.pid" pid exe
	[ -f "$pidfile" ] || return 1
	read -r pid exe <"$pidfile" || return 1
	[ -n "$pid" ] && [ -n "$exe" ] || return 1
	# A binary replaced since (buildkitd rebuilt by a version bump) reads
	# as "PATH (deleted)": still the daemon to stop.
	local running
	running=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
	[ "$running" = "$exe" ] || [ "$running" = "$exe (deleted)" ]
}

# recorded_pid NAME prints the pid from NAME's pid file.
recorded_pid() {
	local pid exe
	read -r pid exe <"$RUN_DIR/$1.pid"
	echo "$pid"
}

# start_daemon NAME CMD... starts CMD detached from this shell, logging to
# $LOG_DIR/NAME.log and recording its pid in $RUN_DIR/NAME.pid. Used where
# there is no systemd (containers, CI sandboxes); the daemons outlive the
# script on purpose.
start_daemon() {
	local name=$1
	shift
	mkdir -p "$LOG_DIR" "$RUN_DIR"
	printf '\n===== %s starting %s =====\n' "$(date -u +%FT%TZ)" "$*" >>"$LOG_DIR/$name.log"
	# setsid: the daemon must not get the terminal's or CI job's signals;
	# stdin from /dev/null so it never waits for input.
	local exe
	exe=$(readlink -f "$(command -v "$1")") || die "$1 not found"
	# setsid and nohup exec in place, so $! is the daemon itself.
	# 9>&-: the daemon must not inherit take_lock's descriptor, or it would
	# hold the lock for as long as it runs.
	setsid nohup "$@" </dev/null >>"$LOG_DIR/$name.log" 2>&1 9>&- &
	echo "$! $exe" >"$RUN_DIR/$name.pid"
}

# wait_ready NAME PROBE... runs PROBE until it succeeds, for at most
# SSEBENCH_DEV_START_TIMEOUT seconds. On failure it shows the log tail and
# exits.
wait_ready() {
	local name=$1
	shift
	local deadline=$(($(now_s) + SSEBENCH_DEV_START_TIMEOUT))
	local pid
	pid=$(recorded_pid "$name")
	while ! "$@" >/dev/null 2>&1; do
		# kill -0, not pid_alive: until setsid and nohup have exec'd the
		# daemon (slow on a loaded machine), /proc/PID/exe is theirs.
		if ! kill -0 "$pid" 2>/dev/null; then
			show_log_tail "$LOG_DIR/$name.log"
			die "$name exited during start-up (see $LOG_DIR/$name.log)"
		fi
		if [ "$(now_s)" -ge "$deadline" ]; then
			show_log_tail "$LOG_DIR/$name.log"
			die "$name did not become ready within ${SSEBENCH_DEV_START_TIMEOUT}s (see $LOG_DIR/$name.log)"
		fi
		sleep 0.5
	done
}

# stop_daemon NAME stops a daemon that these scripts started (by its pid
# file only) and waits for it to exit.
stop_daemon() {
	local name=$1 pidfile="$RUN_DIR/$1.pid" pid
	if ! pid_alive "$name"; then
		rm -f "$pidfile"
		log "$name: not running (not started by these scripts)"
		return 0
	fi
	pid=$(recorded_pid "$name")
	kill -TERM "$pid" 2>/dev/null || true
	# buildkitd finishes or cancels running solves first; give it time.
	for _ in $(seq 1 120); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.25
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "$name: still running after 30s, sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$pidfile"
	log "$name: stopped (pid $pid)"
}

# unmount_leftovers unmounts what a killed buildkitd left mounted from its
# state (overlay mounts of snapshots, typically under /tmp).
unmount_leftovers() {
	local mp
	awk -v s="$SSEBENCH_DEV_STATE/" 'index($0, s) { print $2 }' /proc/mounts | sort -r | while read -r mp; do
		mp=$(printf '%b' "$mp") # /proc/mounts escapes spaces as \040
		umount "$mp" 2>/dev/null || umount -l "$mp" || true
		log "unmounted leftover $mp"
	done
}

# Probes: each succeeds, silently, when the service answers.
probe_registry() {
	curl -fs -o /dev/null --max-time 2 "http://$SSEBENCH_DEV_REGISTRY_ADDR/v2/" 2>/dev/null
}
probe_containerd() {
	[ -S "$CONTAINERD_SOCKET" ] && timeout 5 ctr --address "$CONTAINERD_SOCKET" version >/dev/null 2>&1
}
# probe_buildkitd asks buildkitd's gRPC server for its workers with an empty
# request: an HTTP/2 200 says the daemon is serving (buildctl, which would
# do the same, is not built).
probe_buildkitd() {
	[ -S "$BUILDKIT_SOCKET" ] &&
		[ "$(timeout 5 curl -s -o /dev/null -w '%{http_code}' --http2-prior-knowledge --unix-socket "$BUILDKIT_SOCKET" \
			-X POST -H 'content-type: application/grpc' http://buildkitd/moby.buildkit.v1.Control/ListWorkers 2>/dev/null)" = 200 ]
}

# The Kubernetes version of the test cluster is pinned in one place:
# tools/kubernetes/go.mod (scripts/k8s-up.sh).
K8S_VERSION=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" { print $3; exit }; $1 == "k8s.io/kubernetes" { print $2; exit }' "$SSEBENCH_ROOT/tools/kubernetes/go.mod")
K8S_BIN="$SSEBENCH_DEV_CACHE/k8s-$K8S_VERSION/bin"

# install_apt_packages PKG... installs the Debian packages that are missing
# (apt is skipped entirely when they are all present).
install_apt_packages() {
	local missing=() p
	for p in "$@"; do
		if [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" != installed ]; then
			missing+=("$p")
		fi
	done
	if [ ${#missing[@]} -eq 0 ]; then
		log "apt packages: all present"
		return 0
	fi
	log "apt packages: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	# policy-rc.d: Debian's maintainer scripts would try to start containerd
	# and the registry through an init system; we start them ourselves with
	# our own configuration (scripts/dev-up.sh).
	local policy=/usr/sbin/policy-rc.d created_policy=
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy"
		chmod +x "$policy"
		created_policy=1
	fi
	local rc=0
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || rc=$?
	[ -z "$created_policy" ] || rm -f "$policy"
	[ "$rc" -eq 0 ] || die "apt-get install ${missing[*]} failed (exit $rc)"
}

