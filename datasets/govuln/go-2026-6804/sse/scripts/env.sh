# env.sh: sourced by the other scripts. The scripts run in the project tree
# (the current directory) as a user with a fresh home, or none that is
# writable: then the Go build cache goes to a private temporary directory,
# seeded from a read-only cache the case image compiled.
# The modules are vendored and nothing is fetched: the run is offline.
export GOFLAGS=-mod=vendor GOPROXY=off GOSUMDB=off GOTOOLCHAIN=local GOWORK=off
# The same address-space limit on every host (16 GiB for each process): a
# huge allocation, which a denial-of-service bug's test makes on the buggy
# tree, then fails here whatever the host's vm.overcommit_memory says,
# instead of passing where the kernel hands out memory it does not have.
ulimit -v 16777216 2>/dev/null || true
if [ -z "${GOCACHE:-}" ]; then
	GOCACHE=$(go env GOCACHE)
	if ! mkdir -p "$GOCACHE" 2>/dev/null || [ ! -w "$GOCACHE" ]; then
		GOCACHE="${TMPDIR:-/tmp}/govuln-go-build-$(id -u)"
	fi
	export GOCACHE
fi
# The case image's cache of the affected packages (root's, read-only), else
# the base image's of the standard library.
seed=/usr/local/go-build-task
[ -d "$seed" ] || seed=${GO_BUILD_CACHE_SEED:-}
if [ ! -e "$GOCACHE/.ssebench-seeded" ] && [ -d "$seed" ]; then
	mkdir -p "$GOCACHE" && cp -R "$seed/." "$GOCACHE/" 2>/dev/null &&
		: >"$GOCACHE/.ssebench-seeded" || true
fi
