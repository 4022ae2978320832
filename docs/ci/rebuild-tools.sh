#!/usr/bin/env bash
# rebuild-tools.sh is the CI job of a runtime bump: it rebuilds the tool
# images of a dataset with the new runtime, pushes and signs only those that
# changed, and prints the figures (tool images rebuilt and unchanged, bytes
# uploaded, mounted and skipped, time). docs/ci.md explains it; the GitHub
# Actions workflow next to it (rebuild-tools.yml) runs exactly this script.
#
# Usage: docs/ci/rebuild-tools.sh DATASET_DIR [FLAGS of `ssebench dataset tools`]
#        (--tasks a,b, --case-tag TAG, --json, ...)
#
# Environment:
#   SSEBENCH_REGISTRY       the prefix the dataset is published under (its case
#                           images are PREFIX/case/<dataset>/<task>:<version>);
#                           the tool images go to PREFIX/tool/<task>:VERSION. Required.
#   SSEBENCH_SIGN_KEY       the PEM file of the CI's ECDSA P-256 private key,
#                           unencrypted (docs/ci.md shows how to make one).
#                           Required: machines that hold the public half
#                           believe what CI pushed (--verify-key).
#   SSEBENCH_RUNTIME_IMAGE  a runtime image already pushed (a custom runtime).
#                           Unset: this checkout's runtime is built and pushed
#                           as PREFIX/runtime:VERSION (needs Go).
#   SSEBENCH                the ssebench binary (default: ssebench on PATH).
#
# Nothing else is needed: no BuildKit, no Docker, no containerd. The store
# starts empty on a fresh CI machine; a tool image pushed before and signed
# gives its system and source layers, so no case layer is downloaded.
set -euo pipefail

dataset=${1:?usage: rebuild-tools.sh DATASET_DIR [FLAGS of ssebench dataset tools]}
shift
ssebench=${SSEBENCH:-ssebench}
: "${SSEBENCH_REGISTRY:?set SSEBENCH_REGISTRY to the registry prefix the dataset is published under}"
: "${SSEBENCH_SIGN_KEY:?set SSEBENCH_SIGN_KEY to the PEM file of the key that signs the tool images}"
[ -r "$SSEBENCH_SIGN_KEY" ] || { echo "rebuild-tools.sh: cannot read SSEBENCH_SIGN_KEY=$SSEBENCH_SIGN_KEY: point it at the private key file" >&2; exit 1; }
export SSEBENCH_REGISTRY SSEBENCH_SIGN_KEY

# 1. The runtime: ours from this checkout, unless a custom one is named.
#    Pushing moves only the blobs the registry lacks.
if [ -z "${SSEBENCH_RUNTIME_IMAGE:-}" ]; then
	echo "== runtime image (built from this checkout, pushed)" >&2
	"$ssebench" runtime build --platform all --push
fi

# 2. Every tool image of the dataset, assembled on the runtime; those the
#    registry already holds (same digest, signed with our key) are left
#    alone, the others pushed (missing blobs only) and signed. The last
#    lines are the figures.
echo "== tool images of $dataset" >&2
"$ssebench" dataset tools "$dataset" --push "$@"
