#!/bin/sh
# build.sh: build the affected packages (project tree = cwd).
set -eu
. "$(dirname "$0")/env.sh"
go build './codec/dagcbor'
