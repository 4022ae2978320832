#!/usr/bin/env bash
# dev-down.sh stops the daemons that scripts/dev-up.sh started (only those:
# it goes by the pid files under $SSEBENCH_DEV_STATE/run, so a containerd run
# by systemd is left alone).
#
# Usage: scripts/dev-down.sh [--purge]
#   --purge  also delete $SSEBENCH_DEV_STATE: registry storage, BuildKit's
#            cache, logs. The build cache in $SSEBENCH_DEV_CACHE is kept.
set -euo pipefail
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_root
take_lock

purge=
for a in "$@"; do
	case "$a" in
	--purge) purge=1 ;;
	*) die "unknown argument \"$a\" (want --purge)" ;;
	esac
done

# Reverse start order: buildkitd may be pushing to the registry.
stop_daemon buildkitd
unmount_leftovers
stop_daemon containerd
stop_daemon registry

if [ -n "$purge" ]; then
	# A killed buildkitd can leave overlay mounts behind; deleting through
	# them would delete the lower layers' contents too.
	if awk -v s="$SSEBENCH_DEV_STATE/" 'index($0, s) { found = 1 } END { exit !found }' /proc/mounts; then
		die "mounts remain under $SSEBENCH_DEV_STATE (see /proc/mounts); unmount them before --purge"
	fi
	rm -rf "$SSEBENCH_DEV_STATE"
	log "removed $SSEBENCH_DEV_STATE"
fi
